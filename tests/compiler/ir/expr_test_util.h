// Helpers shared by the expression tests: a compact printer for failure
// messages, location stripping, shorthands and a reference evaluator.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "gtest/gtest.h"

namespace kiln::ir {

// A tiny expression printer for failure messages (the real printer is not a
// dependency of these tests).
inline std::string Str(const Expr& e) {
  std::vector<std::string> args;
  for (const Expr& a : e.args) args.push_back(Str(a));
  std::string dt(DTypeName(e.dtype));
  switch (e.kind) {
  case ExprKind::kInt:
    return absl::StrCat(dt, "(", e.ival, ")");
  case ExprKind::kFloat:
    return absl::StrCat(dt, "(", e.fval, ")");
  case ExprKind::kVar:
    return e.name;
  case ExprKind::kLoad:
    return absl::StrCat(e.name, "[", absl::StrJoin(args, ", "), "]");
  case ExprKind::kBinary:
    return absl::StrCat("b", static_cast<int>(e.bop), ":", dt, "(", absl::StrJoin(args, ", "), ")");
  case ExprKind::kUnary:
    return absl::StrCat("u", static_cast<int>(e.uop), "(", args[0], ")");
  case ExprKind::kCast:
    return absl::StrCat("cast<", dt, ">(", args[0], ")");
  case ExprKind::kSelect:
    return absl::StrCat("select(", absl::StrJoin(args, ", "), ")");
  default:
    return absl::StrCat("k", static_cast<int>(e.kind), "(", absl::StrJoin(args, ", "), ")");
  }
}

inline void StripLocs(Expr* e) {
  e->loc = {};
  for (Expr& a : e->args) StripLocs(&a);
}

inline Expr NoLoc(Expr e) {
  StripLocs(&e);
  return e;
}

// Shorthands for int32 index arithmetic.
inline Expr V(const std::string& name, DType t = DType::kInt32) { return VarRef(name, t); }
inline Expr I(int64_t v, DType t = DType::kInt32) { return IntImm(v, t); }
inline Expr F(double v, DType t = DType::kFloat32) { return FloatImm(v, t); }
inline Expr B(bool v) { return BoolImm(v); }
inline Expr Add(Expr a, Expr b) { return Binary(BinOp::kAdd, std::move(a), std::move(b)); }
inline Expr Sub(Expr a, Expr b) { return Binary(BinOp::kSub, std::move(a), std::move(b)); }
inline Expr Mul(Expr a, Expr b) { return Binary(BinOp::kMul, std::move(a), std::move(b)); }
inline Expr Div(Expr a, Expr b) { return Binary(BinOp::kDiv, std::move(a), std::move(b)); }
inline Expr FDiv(Expr a, Expr b) { return Binary(BinOp::kFloorDiv, std::move(a), std::move(b)); }
inline Expr FMod(Expr a, Expr b) { return Binary(BinOp::kFloorMod, std::move(a), std::move(b)); }
inline Expr Op(BinOp op, Expr a, Expr b) { return Binary(op, std::move(a), std::move(b)); }

// Evaluates int32 index expressions with the IR's semantics; `ok` turns
// false when an intermediate leaves int32 or something divides by zero.
// Thread indices are read from env["tid<dim>"].
struct Eval {
  std::map<std::string, int64_t> env;
  bool ok = true;
  bool divided_by_zero = false;

  int64_t Check(int64_t v) {
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      ok = false;
    }
    return v;
  }
  int64_t operator()(const Expr& e) {
    if (!ok) return 0;
    switch (e.kind) {
    case ExprKind::kInt:
      return e.ival;
    case ExprKind::kVar:
      return env.at(e.name);
    case ExprKind::kThreadIdx:
      return env.at(absl::StrCat("tid", e.ival));
    case ExprKind::kCast:
      return (*this)(e.args[0]);
    case ExprKind::kUnary:
      return Check(-(*this)(e.args[0]));
    case ExprKind::kSelect:
      return (*this)(e.args[0]) ? (*this)(e.args[1]) : (*this)(e.args[2]);
    case ExprKind::kBinary: {
      int64_t a = (*this)(e.args[0]), b = (*this)(e.args[1]);
      if (!ok) return 0;
      switch (e.bop) {
      case BinOp::kAdd:
        return Check(a + b);
      case BinOp::kSub:
        return Check(a - b);
      case BinOp::kMul:
        return Check(a * b);
      case BinOp::kDiv:
      case BinOp::kFloorDiv:
      case BinOp::kFloorMod: {
        if (b == 0) {
          ok = false;
          divided_by_zero = true;
          return 0;
        }
        int64_t q = a / b, r = a % b;
        if (e.bop == BinOp::kDiv) return q;
        bool adjust = r != 0 && ((r < 0) != (b < 0));
        return e.bop == BinOp::kFloorDiv ? q - adjust : (adjust ? r + b : r);
      }
      case BinOp::kMin:
        return std::min(a, b);
      case BinOp::kMax:
        return std::max(a, b);
      case BinOp::kLt:
        return a < b;
      case BinOp::kLe:
        return a <= b;
      case BinOp::kGt:
        return a > b;
      case BinOp::kGe:
        return a >= b;
      case BinOp::kEq:
        return a == b;
      case BinOp::kNe:
        return a != b;
      case BinOp::kBitXor:
        return a ^ b;
      case BinOp::kBitAnd:
        return a & b;
      case BinOp::kBitOr:
        return a | b;
      default:
        ADD_FAILURE() << "unexpected op";
        return 0;
      }
    }
    default:
      ADD_FAILURE() << "unexpected kind " << Str(e);
      return 0;
    }
  }
};

} // namespace kiln::ir
