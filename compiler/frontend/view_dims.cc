#include "compiler/frontend/view_dims.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include "compiler/ir/int_range.h"
#include "compiler/ir/printer.h"

namespace kiln::frontend {
namespace {

// A product of extents as a constant times a multiset of symbolic factors
// (by their printed form), so that [Q, H] and [Q * H] are seen to hold the
// same number of elements when Q and H are only known at run time.
struct Product {
  int64_t c = 1;
  std::multiset<std::string> sym;
  bool overflow = false;
  void Mul(const ir::Expr& e) {
    if (e.kind == ir::ExprKind::kInt) {
      std::optional<int64_t> p = ir::CheckedMul(c, e.ival);
      overflow |= !p.has_value();
      c = p.value_or(0);
    } else if (e.kind == ir::ExprKind::kBinary && e.bop == ir::BinOp::kMul) {
      Mul(e.args[0]);
      Mul(e.args[1]);
    } else {
      sym.insert(ir::PrintExpr(e));
    }
  }
};

bool ProperSubset(const std::multiset<std::string>& a, const std::multiset<std::string>& b) {
  return a.size() < b.size() && std::includes(b.begin(), b.end(), a.begin(), a.end());
}

} // namespace

std::optional<std::vector<DimGroup>> GroupDims(const std::vector<ir::Expr>& view,
                                               const std::vector<ir::Expr>& base) {
  std::vector<DimGroup> out;
  size_t i = 0, j = 0;
  while (i < view.size() || j < base.size()) {
    DimGroup g{i, i, j, j};
    Product pv, pb;
    bool took = false;
    while (!took || pv.c != pb.c || pv.sym != pb.sym) {
      bool take_view;
      if (i == view.size() && j == base.size()) return std::nullopt;
      if (j == base.size()) {
        take_view = true;
      } else if (i == view.size()) {
        take_view = false;
      } else if (pv.sym == pb.sym) {
        take_view = pv.c <= pb.c; // the smaller side grows
      } else if (ProperSubset(pv.sym, pb.sym)) {
        take_view = true;
      } else if (ProperSubset(pb.sym, pv.sym)) {
        take_view = false;
      } else {
        return std::nullopt;
      }
      if (take_view) {
        pv.Mul(view[i++]);
      } else {
        pb.Mul(base[j++]);
      }
      if (pv.overflow || pb.overflow) return std::nullopt;
      took = true;
    }
    g.v_end = i;
    g.b_end = j;
    out.push_back(g);
  }
  return out;
}

} // namespace kiln::frontend
