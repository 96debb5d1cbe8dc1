#include "compiler/ir/index_layout.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/simplify.h"
#include "util/status_macros.h"

namespace kiln::ir {
namespace {

// [lo, hi] of an index expression: a constant lower end and an int64 upper
// end that may be symbolic (the tensor's extents).
struct Interval {
  int64_t lo = 0;
  Expr hi;
};

Expr I64(int64_t v) { return IntImm(v, DType::kInt64); }
Expr Wide(const Expr& e) { return e.dtype == DType::kInt64 ? e : Cast(DType::kInt64, e); }

class Bounder {
 public:
  Bounder(const IndexLayout& layout, const std::vector<Expr>& shape, std::string_view file)
      : file_(file), loc_(layout.loc) {
    for (size_t d = 0; d < layout.vars.size() && d < shape.size(); ++d) {
      vars_[layout.vars[d]] = Simplify(Binary(BinOp::kSub, Wide(shape[d]), I64(1)));
    }
  }

  absl::StatusOr<Interval> Of(const Expr& e) {
    switch (e.kind) {
    case ExprKind::kInt:
      return Interval{e.ival, I64(e.ival)};
    case ExprKind::kVar: {
      auto it = vars_.find(e.name);
      if (it == vars_.end()) {
        return Fail(e, absl::StrCat("uses '", e.name,
                                    "'; only the layout's index variables and constants are "
                                    "supported"));
      }
      return Interval{0, it->second};
    }
    case ExprKind::kCast:
      if (!IsInteger(e.dtype) || !IsInteger(e.args[0].dtype)) break;
      return Of(e.args[0]);
    case ExprKind::kBinary:
      return Binary_(e);
    case ExprKind::kSelect: {
      ASSIGN_OR_RETURN(Interval a, Of(e.args[1]));
      ASSIGN_OR_RETURN(Interval b, Of(e.args[2]));
      return Interval{std::min(a.lo, b.lo), Max(a.hi, b.hi)};
    }
    default:
      break;
    }
    return Fail(e, "has an operation whose range is not known");
  }

 private:
  absl::Status Fail(const Expr& e, std::string_view why) const {
    return ErrorAt(
        file_, loc_,
        absl::StrCat("T.Layout: the output index ", PrintExpr(e), " ", std::string(why)));
  }

  static Expr Max(const Expr& a, const Expr& b) { return Simplify(Binary(BinOp::kMax, a, b)); }
  static Expr Min(const Expr& a, const Expr& b) { return Simplify(Binary(BinOp::kMin, a, b)); }

  absl::StatusOr<Interval> Binary_(const Expr& e) {
    ASSIGN_OR_RETURN(Interval a, Of(e.args[0]));
    ASSIGN_OR_RETURN(Interval b, Of(e.args[1]));
    const std::optional<int64_t> bc = ConstInt(b.hi);
    const bool b_const = bc && *bc == b.lo;
    switch (e.bop) {
    case BinOp::kAdd:
      return Interval{a.lo + b.lo, Simplify(Binary(BinOp::kAdd, a.hi, b.hi))};
    case BinOp::kSub:
      if (!bc) return Fail(e, "subtracts a term without a constant bound");
      return Interval{a.lo - *bc, Simplify(Binary(BinOp::kSub, a.hi, I64(b.lo)))};
    case BinOp::kMul:
      if (a.lo < 0 || b.lo < 0) return Fail(e, "multiplies a term that may be negative");
      return Interval{a.lo * b.lo, Simplify(Binary(BinOp::kMul, a.hi, b.hi))};
    case BinOp::kDiv:
    case BinOp::kFloorDiv:
      if (!b_const || *bc <= 0 || a.lo < 0) {
        return Fail(e, "divides by something other than a positive constant");
      }
      return Interval{a.lo / *bc, Simplify(Binary(BinOp::kFloorDiv, a.hi, I64(*bc)))};
    case BinOp::kShr:
      if (!b_const || *bc < 0 || *bc > 62 || a.lo < 0) {
        return Fail(e, "shifts by something other than a constant");
      }
      return Interval{a.lo >> *bc,
                      Simplify(Binary(BinOp::kFloorDiv, a.hi, I64(int64_t{1} << *bc)))};
    case BinOp::kShl:
      if (!b_const || *bc < 0 || *bc > 30 || a.lo < 0) {
        return Fail(e, "shifts by something other than a small constant");
      }
      return Interval{a.lo << *bc, Simplify(Binary(BinOp::kMul, a.hi, I64(int64_t{1} << *bc)))};
    case BinOp::kFloorMod: {
      if (!b_const || *bc <= 0) return Fail(e, "takes a modulus other than a positive constant");
      if (a.lo < 0) return Fail(e, "takes a modulus of a term that may be negative");
      std::optional<int64_t> ah = ConstInt(a.hi);
      if (ah && *ah < *bc) return a; // the modulus changes nothing
      return Interval{0, I64(*bc - 1)};
    }
    case BinOp::kMin:
      return Interval{std::min(a.lo, b.lo), Min(a.hi, b.hi)};
    case BinOp::kMax:
      return Interval{std::max(a.lo, b.lo), Max(a.hi, b.hi)};
    case BinOp::kBitAnd: {
      // x & y <= min(x, y) for non-negative operands.
      if (a.lo < 0 || b.lo < 0) return Fail(e, "masks a term that may be negative");
      return Interval{0, Min(a.hi, b.hi)};
    }
    case BinOp::kBitOr:
    case BinOp::kBitXor: {
      // Both below 2^k: so is the result.
      std::optional<int64_t> ah = ConstInt(a.hi);
      if (a.lo < 0 || b.lo < 0 || !ah || !bc) {
        return Fail(e, "combines bits of terms without constant non-negative bounds");
      }
      int64_t top = 1;
      while (top <= std::max(*ah, *bc) && top < (int64_t{1} << 62)) top <<= 1;
      return Interval{0, I64(top - 1)};
    }
    default:
      break;
    }
    return Fail(e, "has an operation whose range is not known");
  }

  std::string_view file_;
  Loc loc_;
  std::map<std::string, Expr> vars_;
};

// An element count for messages: the number when it is one.
std::string CountText(const Expr& n) {
  std::optional<int64_t> c = ConstInt(n);
  if (c) return std::to_string(*c);
  // As the user wrote the extents: without the int64 widening.
  Expr plain = n;
  RewriteExpr(&plain, [](Expr e) {
    if (e.kind == ExprKind::kCast && IsInteger(e.dtype) && IsInteger(e.args[0].dtype)) {
      return e.args[0];
    }
    if (IsInteger(e.dtype)) e.dtype = DType::kInt32;
    return e;
  });
  return PrintExpr(plain);
}

Expr Product(const std::vector<Expr>& extents) {
  Expr n = I64(1);
  for (const Expr& e : extents) n = Binary(BinOp::kMul, n, Wide(e));
  return Simplify(n);
}

} // namespace

absl::StatusOr<std::vector<Expr>>
IndexLayoutShape(const IndexLayout& layout, const std::vector<Expr>& shape, std::string_view file) {
  if (layout.vars.size() != shape.size()) {
    return ErrorAt(file, layout.loc,
                   absl::StrCat("T.Layout: the layout takes ", layout.vars.size(),
                                " indices but the tensor has ", shape.size(), " dimensions"));
  }
  if (layout.forward.empty() || layout.forward.size() > kMaxIndexLayoutDims) {
    return ErrorAt(file, layout.loc,
                   absl::StrCat("T.Layout: the layout must produce 1 to ", kMaxIndexLayoutDims,
                                " output indices, got ", layout.forward.size()));
  }
  Bounder bounder(layout, shape, file);
  std::vector<Expr> out;
  for (const Expr& f : layout.forward) {
    if (!IsInteger(f.dtype)) {
      return ErrorAt(file, layout.loc,
                     absl::StrCat("T.Layout: the output index ", PrintExpr(f),
                                  " must be an integer, got ", std::string(DTypeName(f.dtype))));
    }
    ASSIGN_OR_RETURN(Interval r, bounder.Of(f));
    if (r.lo < 0) {
      return ErrorAt(file, layout.loc,
                     absl::StrCat("T.Layout: the output index ", PrintExpr(f),
                                  " may be negative (down to ", r.lo, ")"));
    }
    out.push_back(Simplify(Binary(BinOp::kAdd, r.hi, I64(1))));
  }
  return out;
}

absl::StatusOr<std::vector<Expr>> CheckedIndexLayoutShape(const Buffer& tensor,
                                                          std::string_view file) {
  const IndexLayout& layout = *tensor.index_layout;
  ASSIGN_OR_RETURN(std::vector<Expr> physical, IndexLayoutShape(layout, tensor.shape, file));
  const Expr logical_n = Product(tensor.shape);
  const Expr physical_n = Product(physical);
  std::optional<int64_t> spare = ConstInt(Simplify(Binary(BinOp::kSub, logical_n, physical_n)));
  if (!spare) {
    return ErrorAt(file, layout.loc,
                   absl::StrCat("T.Layout: cannot show that the layout of '", tensor.name, "' (",
                                CountText(physical_n), " elements) fits in the tensor's ",
                                CountText(logical_n),
                                " elements; bind the dimensions that decide it"));
  }
  if (*spare < 0) {
    return ErrorAt(file, layout.loc,
                   absl::StrCat("T.Layout: the layout of '", tensor.name, "' maps into ",
                                CountText(physical_n), " elements but the tensor holds ",
                                CountText(logical_n),
                                "; its output indices must stay within the tensor's storage"));
  }
  return physical;
}

Expr IndexLayoutOffset(const IndexLayout& layout, const std::vector<Expr>& physical,
                       const std::vector<Expr>& idx) {
  std::map<std::string, const Expr*> sub;
  for (size_t d = 0; d < layout.vars.size() && d < idx.size(); ++d) sub[layout.vars[d]] = &idx[d];
  Expr flat = I64(0);
  for (size_t k = 0; k < layout.forward.size(); ++k) {
    Expr f = layout.forward[k];
    RewriteExpr(&f, [&](Expr e) {
      if (e.kind != ExprKind::kVar) return e;
      auto it = sub.find(e.name);
      if (it == sub.end()) return e;
      const Expr& v = *it->second;
      return v.dtype == e.dtype ? v : Cast(e.dtype, v);
    });
    flat = Binary(BinOp::kAdd, Binary(BinOp::kMul, flat, Wide(physical[k])), Wide(f));
  }
  return Simplify(flat);
}

} // namespace kiln::ir
