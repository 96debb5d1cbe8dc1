// User-defined index layouts of global tensors (ir::IndexLayout, TileLang's
// T.Layout): the physical shape a layout maps into, the checks that keep a
// kernel inside the caller's allocation, and the flat element offset of a
// logical index.
//
// The physical extent of output dimension k is the largest value forward[k]
// takes plus one, over every logical index in the tensor's shape: an
// interval analysis with a constant lower bound and a (possibly symbolic)
// upper bound, exact for sums, products and floor divisions of the index
// variables by positive constants, and bounded by the modulus for `%`. An
// expression it cannot bound (a load, a division by a variable, a
// difference whose lower end is not a constant) is an error, as is one
// that can be negative.
//
// Thread-safe: pure functions. Errors: InvalidArgument, located
// ("file:line:col: ...") at the layout's T.Layout call.
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"

namespace kiln::ir {

// Most input and output dimensions a layout may have (TileLang's dQ layout
// maps 4 to 6).
inline constexpr size_t kMaxIndexLayoutDims = 8;

// The physical shape (int64 extents, simplified; symbolic where the
// tensor's shape is) of `layout` on a tensor of logical shape `shape`.
// Errors: a variable count that differs from the rank, no or too many
// output dimensions, an output index that may be negative or that has no
// bound.
absl::StatusOr<std::vector<Expr>>
IndexLayoutShape(const IndexLayout& layout, const std::vector<Expr>& shape, std::string_view file);

// IndexLayoutShape, then: the physical array must fit in the caller's
// allocation of the logical shape (its element count at most the logical
// one). Where either count is symbolic the difference must simplify to a
// constant; otherwise the error asks for the shape to be bound.
absl::StatusOr<std::vector<Expr>> CheckedIndexLayoutShape(const Buffer& tensor,
                                                          std::string_view file);

// The int64 row-major offset, in `physical` (from IndexLayoutShape), of the
// element at logical index `idx` (one integer expression per variable).
Expr IndexLayoutOffset(const IndexLayout& layout, const std::vector<Expr>& physical,
                       const std::vector<Expr>& idx);

} // namespace kiln::ir
