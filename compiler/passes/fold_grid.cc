#include "compiler/passes/fold_grid.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/simplify.h"
#include "util/status_macros.h"

namespace kiln::passes {
namespace {

using ir::BinOp;
using ir::Expr;

Expr I(int64_t v) { return ir::IntImm(v); }
Expr Bin(BinOp op, Expr a, Expr b) { return ir::Binary(op, std::move(a), std::move(b)); }

bool UsesSwizzle(const std::vector<ir::Stmt>& body) {
  for (const ir::Stmt& s : body) {
    if (s.kind == ir::StmtKind::kUseSwizzle && s.enable) return true;
    if (UsesSwizzle(s.body) || UsesSwizzle(s.else_body)) return true;
  }
  return false;
}

absl::Status FoldKernel(const ir::Program& program, ir::Kernel& k, int cluster,
                        ir::FreshNames& names) {
  std::vector<int64_t> grid(3, 1);
  bool fold[3] = {false, false, false};
  bool any = false, x_known = true;
  for (size_t d = 0; d < k.grid.size() && d < 3; ++d) {
    std::optional<int64_t> g = ir::ConstInt(ir::Simplify(k.grid[d]));
    if (!g) {
      if (d > 0) return absl::OkStatus(); // checked at launch
      x_known = false;
      continue;
    }
    grid[d] = *g;
    if (d > 0 && *g > kMaxGridYZ) fold[d] = any = true;
  }
  if (!any) return absl::OkStatus();
  const auto refuse = [&](const std::string& why) {
    return ir::ErrorAt(program.source_name, k.loc,
                       absl::StrCat("the grid (", absl::StrJoin(grid, ", "), ") has more than ",
                                    kMaxGridYZ,
                                    " blocks along y or z, which CUDA does not launch; Kiln folds "
                                    "such a dimension into x, but ",
                                    why));
  };
  if (!x_known) return refuse("the x extent is not a constant");
  if (cluster > 1) return refuse(absl::StrCat("not in cluster pairs (cluster=", cluster, ")"));
  if (UsesSwizzle(k.body)) {
    return refuse("not where the kernel rasterizes its blocks (T.use_swizzle reads the grid's "
                  "shape); drop the T.use_swizzle or put the long dimension along x");
  }
  int64_t folded = grid[0];
  for (int d = 1; d < 3; ++d) {
    if (fold[d]) folded *= grid[d];
  }
  if (folded > kMaxGridX) {
    return refuse(absl::StrCat("the folded x extent ", folded, " passes CUDA's ", kMaxGridX));
  }
  while (k.block_vars.size() < 3) k.block_vars.push_back(names.Fresh("kiln_unused_block"));
  const std::string b = names.Fresh("kiln_folded_block");
  // The x index b enumerates x fastest, then each folded dimension in order.
  std::map<std::string, Expr> values;
  values.emplace(k.block_vars[0], ir::Simplify(Bin(BinOp::kFloorMod, ir::VarRef(b), I(grid[0]))));
  int64_t place = grid[0];
  for (int d = 1; d < 3; ++d) {
    if (!fold[d]) continue;
    Expr v = Bin(BinOp::kFloorDiv, ir::VarRef(b), I(place));
    place *= grid[d];
    // The last folded dimension needs no modulo: b / place < its extent.
    if (place != folded) v = Bin(BinOp::kFloorMod, std::move(v), I(grid[d]));
    values.emplace(k.block_vars[d], ir::Simplify(v));
  }
  ir::SubstituteVars(&k.body, values);
  k.grid.resize(3, I(1));
  k.grid[0] = ir::IntImm(folded, ir::DType::kInt32, k.loc);
  k.block_vars[0] = b;
  for (int d = 1; d < 3; ++d) {
    if (fold[d]) k.grid[d] = ir::IntImm(1, ir::DType::kInt32, k.loc);
  }
  return absl::OkStatus();
}

} // namespace

absl::Status FoldGrid(ir::Program& program, int cluster) {
  ir::FreshNames names(program);
  RETURN_IF_ERROR(FoldKernel(program, program.kernel, cluster, names));
  for (ir::Kernel& k : program.next_kernels) {
    RETURN_IF_ERROR(FoldKernel(program, k, cluster, names));
  }
  return absl::OkStatus();
}

} // namespace kiln::passes
