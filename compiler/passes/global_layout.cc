#include "compiler/passes/global_layout.h"

#include "compiler/ir/index_layout.h"
#include "util/status_macros.h"

namespace kiln::passes::lowering {

absl::Status AttachGlobalLayout(const ir::Param& p, std::string_view file, Buf* b) {
  if (p.is_scalar || !p.buffer.index_layout) return absl::OkStatus();
  ASSIGN_OR_RETURN(b->physical_shape, ir::CheckedIndexLayoutShape(p.buffer, file));
  b->index_layout = &*p.buffer.index_layout;
  return absl::OkStatus();
}

ir::Expr GlobalLayoutFlat(const Buf& b, const std::vector<ir::Expr>& idx) {
  return ir::IndexLayoutOffset(*b.index_layout, b.physical_shape, idx);
}

} // namespace kiln::passes::lowering
