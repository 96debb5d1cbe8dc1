// How the dimensions of a view (T.reshape / T.view / T.Tensor over another
// buffer's .data) line up with those of the buffer whose storage it names:
// both are row-major over the same elements, so their dimensions fall into
// groups of equal element count.
//
// Errors: none; GroupDims answers nullopt when the counts cannot be shown
// equal. Thread-safe: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::frontend {

// View dimensions [v_begin, v_end) hold the same elements, in the same
// row-major order, as buffer dimensions [b_begin, b_end). Splitting and
// merging dimensions stays inside a group, so an index maps group by group,
// with divisions only where a group has several buffer dimensions.
struct DimGroup {
  size_t v_begin, v_end, b_begin, b_end;
};

// The groups of `view` against `base`, in order; nullopt when the element
// counts differ or cannot be shown equal. Symbolic extents are compared as
// products of factors by their printed form, so [Q, H] and [Q * H] are seen
// to hold the same number of elements when Q and H are only known at run
// time.
std::optional<std::vector<DimGroup>> GroupDims(const std::vector<ir::Expr>& view,
                                               const std::vector<ir::Expr>& base);

} // namespace kiln::frontend
