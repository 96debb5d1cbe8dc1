#include "compiler/frontend/arith.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "util/status_macros.h"

namespace kiln::frontend {
namespace {

using ir::DType;

absl::Status Err(const ArithContext& ctx, const std::string& msg) {
  return ir::ErrorAt(ctx.file, ctx.loc, msg);
}

// Charges `items` values and `bytes` more of copying or walking.
absl::Status Charge(const ArithContext& ctx, size_t items, size_t bytes = 0) {
  if (ctx.budget == nullptr) return absl::OkStatus();
  return ctx.budget->Charge(ctx.loc, static_cast<int64_t>(items + bytes / 64),
                            static_cast<int64_t>(items * sizeof(Value) + bytes));
}

// Charges `steps` steps of comparing (no allocation).
absl::Status ChargeSteps(const ArithContext& ctx, size_t steps) {
  if (ctx.budget == nullptr) return absl::OkStatus();
  return ctx.budget->Charge(ctx.loc, static_cast<int64_t>(steps));
}

// A None that stands for an entry parameter left unbound (value.h): the
// parameter is the mistake to report, not the operation on None.
bool IsUnbound(const Value& v) { return v.kind == ValueKind::kNone && !v.s.empty(); }

absl::Status UnboundError(const ArithContext& ctx, const Value& a, const Value& b) {
  const Value& v = IsUnbound(a) ? a : b;
  return Err(ctx, absl::StrCat("parameter '", v.s, "' has no binding (its default is None)"));
}

absl::Status BadOperands(const ArithContext& ctx, std::string_view op, const Value& a,
                         const Value& b) {
  if (IsUnbound(a) || IsUnbound(b)) return UnboundError(ctx, a, b);
  return Err(ctx, absl::StrCat("unsupported operand types for ", std::string(op), ": '",
                               TypeName(a), "' and '", TypeName(b), "'"));
}

double AsDouble(const Value& v) { return v.is_int() ? static_cast<double>(v.i) : v.f; }

bool FitsInt32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

absl::StatusOr<Value> IntOverflow(const ArithContext& ctx) {
  return Err(ctx, "integer overflow in compile-time arithmetic");
}

int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t FloorModInt(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double FloorModFloat(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Python arithmetic on two compile-time numbers.
absl::StatusOr<Value> NumericBinary(const ArithContext& ctx, std::string_view op, const Value& a,
                                    const Value& b) {
  if (a.is_int() && b.is_int()) {
    int64_t x = a.i, y = b.i, r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(x, y, &r)) return IntOverflow(ctx);
      return Value::Int(r);
    }
    if (op == "-") {
      if (__builtin_sub_overflow(x, y, &r)) return IntOverflow(ctx);
      return Value::Int(r);
    }
    if (op == "*") {
      if (__builtin_mul_overflow(x, y, &r)) return IntOverflow(ctx);
      return Value::Int(r);
    }
    if (op == "/") {
      if (y == 0) return Err(ctx, "division by zero");
      return Value::Float(static_cast<double>(x) / static_cast<double>(y));
    }
    if (op == "//" || op == "%") {
      if (y == 0) return Err(ctx, "integer division or modulo by zero");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) return IntOverflow(ctx);
      return Value::Int(op == "//" ? FloorDivInt(x, y) : FloorModInt(x, y));
    }
    if (op == "**") {
      if (y < 0) {
        if (x == 0) return Err(ctx, "0 cannot be raised to a negative power");
        return Value::Float(std::pow(static_cast<double>(x), static_cast<double>(y)));
      }
      int64_t result = 1, base = x;
      while (y > 0) {
        if (y & 1) {
          if (__builtin_mul_overflow(result, base, &result)) return IntOverflow(ctx);
        }
        y >>= 1;
        if (y > 0 && __builtin_mul_overflow(base, base, &base)) return IntOverflow(ctx);
      }
      return Value::Int(result);
    }
    if (op == "&")
      return a.kind == ValueKind::kBool && b.kind == ValueKind::kBool ? Value::Bool(x & y)
                                                                      : Value::Int(x & y);
    if (op == "|")
      return a.kind == ValueKind::kBool && b.kind == ValueKind::kBool ? Value::Bool(x | y)
                                                                      : Value::Int(x | y);
    if (op == "^")
      return a.kind == ValueKind::kBool && b.kind == ValueKind::kBool ? Value::Bool(x ^ y)
                                                                      : Value::Int(x ^ y);
    if (op == "<<" || op == ">>") {
      if (y < 0) return Err(ctx, "negative shift count");
      if (op == ">>") return Value::Int(y >= 64 ? (x < 0 ? -1 : 0) : (x >> y));
      if (y >= 63 || (x != 0 && (x > (std::numeric_limits<int64_t>::max() >> y) ||
                                 x < (std::numeric_limits<int64_t>::min() >> y)))) {
        return IntOverflow(ctx);
      }
      return Value::Int(static_cast<int64_t>(static_cast<uint64_t>(x) << y));
    }
    return BadOperands(ctx, op, a, b);
  }
  double x = AsDouble(a), y = AsDouble(b);
  if (op == "+") return Value::Float(x + y);
  if (op == "-") return Value::Float(x - y);
  if (op == "*") return Value::Float(x * y);
  if (op == "/") {
    if (y == 0) return Err(ctx, "float division by zero");
    return Value::Float(x / y);
  }
  if (op == "//") {
    if (y == 0) return Err(ctx, "float floor division by zero");
    return Value::Float(std::floor(x / y));
  }
  if (op == "%") {
    if (y == 0) return Err(ctx, "float modulo by zero");
    return Value::Float(FloorModFloat(x, y));
  }
  if (op == "**") {
    if (x == 0 && y < 0) return Err(ctx, "0.0 cannot be raised to a negative power");
    if (x < 0 && std::floor(y) != y) {
      return Err(ctx, "negative number raised to a fractional power (complex result)");
    }
    return Value::Float(std::pow(x, y));
  }
  return BadOperands(ctx, op, a, b);
}

// Sequence and string operators (+ and * with an int).
absl::StatusOr<Value> SequenceBinary(const ArithContext& ctx, std::string_view op, const Value& a,
                                     const Value& b) {
  constexpr size_t kMaxLen = 1 << 16;
  if (op == "+" && a.kind == b.kind &&
      (a.kind == ValueKind::kTuple || a.kind == ValueKind::kList)) {
    if (a.elts().size() + b.elts().size() > kMaxLen) return Err(ctx, "sequence too long");
    RETURN_IF_ERROR(Charge(ctx, a.elts().size() + b.elts().size()));
    ValueList out = a.elts();
    out.insert(out.end(), b.elts().begin(), b.elts().end());
    if (out.size() > kMaxLen) return Err(ctx, "sequence too long");
    return a.kind == ValueKind::kTuple ? Value::Tuple(std::move(out)) : Value::List(std::move(out));
  }
  if (op == "+" && a.kind == ValueKind::kString && b.kind == ValueKind::kString) {
    if (a.s.size() + b.s.size() > kMaxLen) return Err(ctx, "string too long");
    RETURN_IF_ERROR(Charge(ctx, 0, a.s.size() + b.s.size()));
    return Value::Str(a.s + b.s);
  }
  if (op == "*" && (a.is_sequence() || a.kind == ValueKind::kString) && b.is_int()) {
    int64_t n = std::max<int64_t>(b.i, 0);
    size_t unit = a.kind == ValueKind::kString ? a.s.size() : a.elts().size();
    // An empty sequence repeated is empty: without this, `[] * 2**63` looped
    // 2**63 times adding nothing, charged nothing (found by fuzzing).
    if (unit == 0) n = 0;
    if (unit != 0 && static_cast<uint64_t>(n) > kMaxLen / unit) {
      return Err(ctx, "sequence too long");
    }
    const size_t total = unit * static_cast<size_t>(n);
    RETURN_IF_ERROR(a.kind == ValueKind::kString ? Charge(ctx, 0, total) : Charge(ctx, total));
    if (a.kind == ValueKind::kString) {
      std::string out;
      for (int64_t k = 0; k < n; ++k) out += a.s;
      return Value::Str(std::move(out));
    }
    ValueList out;
    for (int64_t k = 0; k < n; ++k) out.insert(out.end(), a.elts().begin(), a.elts().end());
    return a.kind == ValueKind::kTuple ? Value::Tuple(std::move(out)) : Value::List(std::move(out));
  }
  if (op == "*" && a.is_int() && (b.is_sequence() || b.kind == ValueKind::kString)) {
    return SequenceBinary(ctx, op, b, a);
  }
  return BadOperands(ctx, op, a, b);
}

bool IsScalarOperand(const Value& v) { return v.is_number() || v.is_expr(); }

ir::Expr Literal(const Value& v, DType dtype, ir::Loc loc) {
  if (ir::IsFloat(dtype)) return ir::FloatImm(AsDouble(v), dtype, loc);
  if (ir::IsBool(dtype)) return ir::BoolImm(AsDouble(v) != 0, loc);
  if (!v.is_int()) {
    // A float outside the integer type has no value there (C leaves the
    // conversion undefined, the device saturates): keep the conversion.
    const int bits = ir::DTypeBits(dtype);
    const double lo = ir::IsUnsigned(dtype) ? 0.0 : -std::ldexp(1.0, bits - 1);
    const double hi = std::ldexp(1.0, ir::IsUnsigned(dtype) ? bits : bits - 1);
    if (!(std::trunc(v.f) >= lo && std::trunc(v.f) < hi)) {
      return ir::Cast(dtype, ir::FloatImm(v.f, DType::kFloat64, loc), loc);
    }
  }
  int64_t iv = v.is_int() ? v.i : static_cast<int64_t>(v.f);
  return ir::IntImm(iv, dtype, loc);
}

} // namespace

DType PromoteDTypes(DType a, DType b) {
  if (a == b) return a;
  bool fa = ir::IsFloat(a), fb = ir::IsFloat(b);
  if (fa && fb) {
    int ba = ir::DTypeBits(a), bb = ir::DTypeBits(b);
    if (ba != bb) return ba > bb ? a : b;
    return DType::kFloat32; // float16 vs bfloat16, e4m3 vs e5m2
  }
  if (fa) return a;
  if (fb) return b;
  if (ir::IsBool(a)) return b;
  if (ir::IsBool(b)) return a;
  int ba = ir::DTypeBits(a), bb = ir::DTypeBits(b);
  if (ba != bb) return ba > bb ? a : b;
  // Same width, different signedness: the signed type.
  return ir::IsUnsigned(a) ? b : a;
}

ir::Expr CastExpr(ir::Expr e, DType dtype, ir::Loc loc) {
  if (e.dtype == dtype) return e;
  if (e.kind == ir::ExprKind::kInt || e.kind == ir::ExprKind::kFloat) {
    // Rebuild literals in the target type rather than wrapping a cast.
    Value v = e.kind == ir::ExprKind::kInt ? Value::Int(e.ival) : Value::Float(e.fval);
    if (e.kind == ir::ExprKind::kFloat && !ir::IsFloat(dtype) && !ir::IsBool(dtype)) {
      if (!(std::fabs(e.fval) < 9223372036854775808.0)) return ir::Cast(dtype, std::move(e), loc);
      v = Value::Int(static_cast<int64_t>(e.fval)); // truncation, as a cast does
    }
    return Literal(v, dtype, e.loc);
  }
  return ir::Cast(dtype, std::move(e), loc);
}

namespace {

// Limits on one symbolic expression. Python names bound to expressions are
// inlined, so `x = x + x` doubles the tree each time: without a bound a few
// lines of source could ask for terabytes.
constexpr int kMaxExprNodes = 4096;
constexpr int kMaxExprDepth = 256;

// Counts nodes into *nodes, stopping early once a limit is passed.
bool WithinLimits(const ir::Expr& e, int depth, int* nodes) {
  if (++*nodes > kMaxExprNodes || depth > kMaxExprDepth) return false;
  for (const ir::Expr& arg : e.args) {
    if (!WithinLimits(arg, depth + 1, nodes)) return false;
  }
  return true;
}

} // namespace

absl::StatusOr<ir::Expr> ToExpr(const ArithContext& ctx, const Value& v) {
  switch (v.kind) {
  case ValueKind::kBool:
    return ir::BoolImm(v.i != 0, ctx.loc);
  case ValueKind::kInt:
    return ir::IntImm(v.i, FitsInt32(v.i) ? DType::kInt32 : DType::kInt64, ctx.loc);
  case ValueKind::kFloat:
    return ir::FloatImm(v.f, DType::kFloat32, ctx.loc);
  case ValueKind::kExpr: {
    int nodes = 0;
    if (!WithinLimits(*v.expr, 1, &nodes)) {
      return Err(ctx, absl::StrCat("expression too large (more than ", kMaxExprNodes, " nodes or ",
                                   kMaxExprDepth,
                                   " levels); keep intermediate results in a T.alloc_var or a "
                                   "fragment instead of a Python name"));
    }
    return *v.expr;
  }
  default:
    if (IsUnbound(v)) return UnboundError(ctx, v, v);
    return Err(ctx, absl::StrCat("expected a number or expression, got ", TypeName(v)));
  }
}

absl::StatusOr<ir::Expr> ToExprOf(const ArithContext& ctx, const Value& v, DType dtype) {
  if (v.is_number()) return Literal(v, dtype, ctx.loc);
  ASSIGN_OR_RETURN(ir::Expr e, ToExpr(ctx, v));
  return CastExpr(std::move(e), dtype, ctx.loc);
}

absl::Status PromotePair(const ArithContext& ctx, const Value& a, const Value& b, ir::Expr* x,
                         ir::Expr* y) {
  if (!IsScalarOperand(a) || !IsScalarOperand(b)) {
    if (IsUnbound(a) || IsUnbound(b)) return UnboundError(ctx, a, b);
    return Err(ctx, absl::StrCat("expected numbers or expressions, got '", TypeName(a), "' and '",
                                 TypeName(b), "'"));
  }
  DType target;
  if (a.is_expr() && b.is_expr()) {
    target = PromoteDTypes(a.expr->dtype, b.expr->dtype);
  } else {
    const Value& e = a.is_expr() ? a : b;
    const Value& lit = a.is_expr() ? b : a;
    if (!e.is_expr()) {
      // Two compile-time numbers forced into IR (e.g. T.max(1, 2)).
      target = (a.kind == ValueKind::kFloat || b.kind == ValueKind::kFloat) ? DType::kFloat32
                                                                            : DType::kInt32;
      if (target == DType::kInt32 && (!FitsInt32(a.i) || !FitsInt32(b.i))) target = DType::kInt64;
    } else {
      DType et = e.expr->dtype;
      if (lit.kind == ValueKind::kFloat) {
        target = ir::IsFloat(et) ? et : DType::kFloat32;
      } else if (lit.kind == ValueKind::kBool) {
        target = et;
      } else if (ir::IsBool(et)) {
        target = DType::kInt32;
      } else if (ir::IsInteger(et) && ir::DTypeBits(et) < 64 && ir::DTypeBits(et) >= 32 &&
                 !FitsInt32(lit.i)) {
        target = DType::kInt64;
      } else {
        target = et;
      }
    }
  }
  ASSIGN_OR_RETURN(*x, ToExprOf(ctx, a, target));
  ASSIGN_OR_RETURN(*y, ToExprOf(ctx, b, target));
  return absl::OkStatus();
}

absl::StatusOr<Value> ApplyBinary(const ArithContext& ctx, std::string_view op, const Value& a,
                                  const Value& b) {
  if (a.is_number() && b.is_number()) return NumericBinary(ctx, op, a, b);
  if (!IsScalarOperand(a) || !IsScalarOperand(b)) return SequenceBinary(ctx, op, a, b);
  ir::Expr x, y;
  RETURN_IF_ERROR(PromotePair(ctx, a, b, &x, &y));
  DType t = x.dtype;
  bool is_float = ir::IsFloat(t);
  ir::BinOp bop;
  if (op == "+") {
    bop = ir::BinOp::kAdd;
  } else if (op == "-") {
    bop = ir::BinOp::kSub;
  } else if (op == "*") {
    bop = ir::BinOp::kMul;
  } else if (op == "/") {
    bop = ir::BinOp::kDiv;
  } else if (op == "//") {
    bop = ir::BinOp::kFloorDiv;
  } else if (op == "%") {
    bop = ir::BinOp::kFloorMod;
  } else if (op == "**") {
    if (!is_float) {
      return Err(ctx, "'**' on symbolic integers is not supported; use T.pow on floats");
    }
    return Value::Expr(ir::Call(ir::Intrinsic::kPow, {std::move(x), std::move(y)}, ctx.loc));
  } else if (op == "&" || op == "|" || op == "^" || op == "<<" || op == ">>") {
    if (ir::IsBool(t) && (op == "&" || op == "|")) {
      bop = op == "&" ? ir::BinOp::kAnd : ir::BinOp::kOr;
    } else if (is_float) {
      return Err(ctx, absl::StrCat("operator '", std::string(op), "' needs integer operands, got ",
                                   std::string(ir::DTypeName(t))));
    } else if (op == "&") {
      bop = ir::BinOp::kBitAnd;
    } else if (op == "|") {
      bop = ir::BinOp::kBitOr;
    } else if (op == "^") {
      bop = ir::BinOp::kBitXor;
    } else if (op == "<<") {
      bop = ir::BinOp::kShl;
    } else {
      bop = ir::BinOp::kShr;
    }
  } else {
    return BadOperands(ctx, op, a, b);
  }
  if (ir::IsBool(t) && bop <= ir::BinOp::kFloorMod) {
    // Arithmetic on bools happens in int32, as in TVM.
    x = CastExpr(std::move(x), DType::kInt32, ctx.loc);
    y = CastExpr(std::move(y), DType::kInt32, ctx.loc);
  }
  return Value::Expr(ir::Binary(bop, std::move(x), std::move(y), ctx.loc));
}

absl::StatusOr<Value> ApplyUnary(const ArithContext& ctx, std::string_view op, const Value& a) {
  if (op == "not") {
    bool known = true;
    bool t = Truthy(a, &known);
    if (known) return Value::Bool(!t);
    if (!a.is_expr()) {
      return Err(ctx, absl::StrCat("'not' is not supported on ", TypeName(a)));
    }
    ASSIGN_OR_RETURN(ir::Expr c, ToCondition(ctx, a));
    return Value::Expr(ir::Unary(ir::UnOp::kNot, std::move(c), ctx.loc));
  }
  if (a.is_number()) {
    if (op == "+") return a.kind == ValueKind::kBool ? Value::Int(a.i) : a;
    if (op == "-") {
      if (a.kind == ValueKind::kFloat) return Value::Float(-a.f);
      if (a.i == std::numeric_limits<int64_t>::min()) return IntOverflow(ctx);
      return Value::Int(-a.i);
    }
    if (op == "~" && a.is_int()) return Value::Int(~a.i);
    if (IsUnbound(a)) return UnboundError(ctx, a, a);
    return Err(
        ctx, absl::StrCat("bad operand type for unary ", std::string(op), ": '", TypeName(a), "'"));
  }
  if (!a.is_expr()) {
    if (IsUnbound(a)) return UnboundError(ctx, a, a);
    return Err(
        ctx, absl::StrCat("bad operand type for unary ", std::string(op), ": '", TypeName(a), "'"));
  }
  ir::Expr x = *a.expr;
  if (op == "+") return a;
  if (op == "-") {
    if (ir::IsBool(x.dtype)) x = CastExpr(std::move(x), DType::kInt32, ctx.loc);
    // Negated literals stay literals (-T.infinity(...) is a constant).
    if (x.kind == ir::ExprKind::kFloat) {
      x.fval = -x.fval;
      x.loc = ctx.loc;
      return Value::Expr(std::move(x));
    }
    if (x.kind == ir::ExprKind::kInt && x.ival != std::numeric_limits<int64_t>::min()) {
      x.ival = -x.ival;
      x.loc = ctx.loc;
      return Value::Expr(std::move(x));
    }
    return Value::Expr(ir::Unary(ir::UnOp::kNeg, std::move(x), ctx.loc));
  }
  if (op == "~") {
    if (!ir::IsInteger(x.dtype)) {
      return Err(ctx, absl::StrCat("'~' needs an integer operand, got ",
                                   std::string(ir::DTypeName(x.dtype))));
    }
    return Value::Expr(ir::Unary(ir::UnOp::kBitNot, std::move(x), ctx.loc));
  }
  return Err(ctx, absl::StrCat("unsupported unary operator ", std::string(op)));
}

absl::StatusOr<ir::Expr> ToCondition(const ArithContext& ctx, const Value& v) {
  ASSIGN_OR_RETURN(ir::Expr e, ToExpr(ctx, v));
  if (ir::IsBool(e.dtype)) return e;
  ir::Expr zero =
      ir::IsFloat(e.dtype) ? ir::FloatImm(0, e.dtype, ctx.loc) : ir::IntImm(0, e.dtype, ctx.loc);
  return ir::Binary(ir::BinOp::kNe, std::move(e), std::move(zero), ctx.loc);
}

absl::StatusOr<Value> ApplyCompare(const ArithContext& ctx, std::string_view op, const Value& a,
                                   const Value& b) {
  if (op == "is" || op == "is not") {
    bool special = a.kind == ValueKind::kNone || b.kind == ValueKind::kNone ||
                   a.kind == ValueKind::kBool || b.kind == ValueKind::kBool;
    if (!special) {
      return Err(ctx, "'is' is only supported for comparisons with None, True or False");
    }
    bool same = a.kind == b.kind && a.i == b.i;
    return Value::Bool(op == "is" ? same : !same);
  }
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.kind == ValueKind::kString && a.kind == ValueKind::kString) {
      // A substring search can compare every position of b with all of a.
      RETURN_IF_ERROR(ChargeSteps(ctx, b.s.size() * std::max<size_t>(a.s.size(), 1) / 64));
      found = b.s.find(a.s) != std::string::npos;
    } else if (b.is_sequence() || b.kind == ValueKind::kDict) {
      RETURN_IF_ERROR(ChargeSteps(ctx, b.elts().size()));
      for (const Value& item : b.elts()) {
        bool known = true;
        bool eq = PyEquals(a, item, &known, ctx.budget, ctx.loc);
        if (ctx.budget != nullptr) RETURN_IF_ERROR(ctx.budget->status());
        if (!known) return Err(ctx, "'in' on symbolic values is not supported");
        if (eq) {
          found = true;
          break;
        }
      }
    } else {
      return Err(ctx, absl::StrCat("argument of type '", TypeName(b), "' is not a container"));
    }
    return Value::Bool(op == "in" ? found : !found);
  }
  if (a.is_expr() || b.is_expr()) {
    ir::Expr x, y;
    RETURN_IF_ERROR(PromotePair(ctx, a, b, &x, &y));
    ir::BinOp bop;
    if (op == "<") {
      bop = ir::BinOp::kLt;
    } else if (op == "<=") {
      bop = ir::BinOp::kLe;
    } else if (op == ">") {
      bop = ir::BinOp::kGt;
    } else if (op == ">=") {
      bop = ir::BinOp::kGe;
    } else if (op == "==") {
      bop = ir::BinOp::kEq;
    } else if (op == "!=") {
      bop = ir::BinOp::kNe;
    } else {
      return Err(ctx, absl::StrCat("unsupported comparison ", std::string(op)));
    }
    return Value::Expr(ir::Binary(bop, std::move(x), std::move(y), ctx.loc));
  }
  if (op == "==" || op == "!=") {
    bool known = true;
    bool eq = PyEquals(a, b, &known, ctx.budget, ctx.loc);
    if (ctx.budget != nullptr) RETURN_IF_ERROR(ctx.budget->status());
    if (!known) {
      return Err(ctx, absl::StrCat("cannot compare '", TypeName(a), "' and '", TypeName(b), "'"));
    }
    return Value::Bool(op == "==" ? eq : !eq);
  }
  int cmp = 0;
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) {
      cmp = a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
    } else {
      double x = AsDouble(a), y = AsDouble(b);
      if (std::isnan(x) || std::isnan(y)) return Value::Bool(false);
      cmp = x < y ? -1 : (x > y ? 1 : 0);
    }
  } else if (a.kind == ValueKind::kString && b.kind == ValueKind::kString) {
    cmp = a.s.compare(b.s);
  } else {
    if (IsUnbound(a) || IsUnbound(b)) return UnboundError(ctx, a, b);
    return Err(ctx, absl::StrCat("'", std::string(op), "' not supported between '", TypeName(a),
                                 "' and '", TypeName(b), "'"));
  }
  bool r = false;
  if (op == "<") {
    r = cmp < 0;
  } else if (op == "<=") {
    r = cmp <= 0;
  } else if (op == ">") {
    r = cmp > 0;
  } else if (op == ">=") {
    r = cmp >= 0;
  } else {
    return Err(ctx, absl::StrCat("unsupported comparison ", std::string(op)));
  }
  return Value::Bool(r);
}

absl::StatusOr<Value> ApplyLogical(const ArithContext& ctx, bool is_and, const Value& a,
                                   const Value& b) {
  ASSIGN_OR_RETURN(ir::Expr x, ToCondition(ctx, a));
  ASSIGN_OR_RETURN(ir::Expr y, ToCondition(ctx, b));
  return Value::Expr(
      ir::Binary(is_and ? ir::BinOp::kAnd : ir::BinOp::kOr, std::move(x), std::move(y), ctx.loc));
}

absl::StatusOr<Value> ApplyMinMax(const ArithContext& ctx, bool is_max, const Value& a,
                                  const Value& b) {
  if (a.is_number() && b.is_number()) {
    bool a_less = a.is_int() && b.is_int() ? a.i < b.i : AsDouble(a) < AsDouble(b);
    if (is_max) return a_less ? b : a;
    bool b_less = a.is_int() && b.is_int() ? b.i < a.i : AsDouble(b) < AsDouble(a);
    return b_less ? b : a;
  }
  ir::Expr x, y;
  RETURN_IF_ERROR(PromotePair(ctx, a, b, &x, &y));
  return Value::Expr(
      ir::Binary(is_max ? ir::BinOp::kMax : ir::BinOp::kMin, std::move(x), std::move(y), ctx.loc));
}

} // namespace kiln::frontend
