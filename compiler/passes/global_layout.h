// Internal to the tile-op lowering (lowering.h): tensors stored in the
// order of a user-defined index layout (T.Layout on a tensor parameter,
// ir::Buffer::index_layout).
//
// Such a tensor keeps its logical shape in the kernel's interface (the
// caller allocates that many elements), but element (i0, ..., in-1) lives
// at the row-major offset of the layout's physical index. Every global
// address of the tensor goes through GlobalLayoutFlat (Lowering::GlobalFlat
// calls it), and its element loads and stores are flat. Consecutive logical
// elements are not adjacent in memory, so the lowering copies such a tensor
// one element at a time: no 4/8/16-byte vector copies, no TMA.
//
// Thread-safe: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "compiler/ir/ir.h"
#include "compiler/passes/lowering.h"

namespace kiln::passes::lowering {

// Sets b->index_layout and b->physical_shape from tensor parameter `p`,
// if it has a T.Layout. Errors (located at the T.Layout call): an output
// index without a bound, or a physical array that does not fit in (or
// cannot be shown to fit in) the tensor's logical elements.
absl::Status AttachGlobalLayout(const ir::Param& p, std::string_view file, Buf* b);

// The int64 flat offset of logical element `idx` of `b` (b.index_layout set).
ir::Expr GlobalLayoutFlat(const Buf& b, const std::vector<ir::Expr>& idx);

} // namespace kiln::passes::lowering
