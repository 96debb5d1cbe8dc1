// Folding computes integers on uint64_t (wrapping, never UB) and reduces
// results to the dtype's width. Division by zero, out-of-range shifts and
// float->int conversions that C leaves undefined are not folded. Float
// operands and results are rounded to their dtype: float32 through a C++
// float (double rounding is harmless for + - * /), float16/bfloat16/float8
// only when the value is exactly representable, so that no hand-written
// rounding can disagree with the device.
#include "compiler/ir/const_fold.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"

namespace kiln::ir {

// Reduces a two's complement bit pattern to `t`'s width: sign-extended for
// signed types, zero-extended for unsigned ones (uint64 keeps its bit
// pattern in the int64_t), 0/1 for bool.
int64_t WrapToDType(uint64_t v, DType t) {
  if (t == DType::kBool) return v != 0 ? 1 : 0;
  int bits = DTypeBits(t);
  if (bits >= 64) return static_cast<int64_t>(v);
  uint64_t mask = (uint64_t{1} << bits) - 1;
  v &= mask;
  if (!IsUnsigned(t) && ((v >> (bits - 1)) & 1)) v |= ~mask;
  return static_cast<int64_t>(v);
}

namespace {

bool ValidDType(DType t) { return static_cast<int>(t) <= static_cast<int>(DType::kFloat8E5M2); }
bool IsIntLit(const Expr& e) { return e.kind == ExprKind::kInt; }
bool IsFloatLit(const Expr& e) {
  return e.kind == ExprKind::kFloat && ValidDType(e.dtype) && IsFloat(e.dtype);
}
int64_t Wrap(uint64_t v, DType t) { return WrapToDType(v, t); }

// Rounds `v` to float dtype `t`, or nullopt where that cannot be done
// exactly and portably (see the file comment).
std::optional<double> RoundTo(double v, DType t) {
  if (t == DType::kFloat64 || std::isnan(v)) return v;
  if (std::isinf(v)) {
    if (t == DType::kFloat8E4M3) return std::nullopt; // e4m3 has no infinity
    return v;
  }
  if (t == DType::kFloat32) {
    if (std::fabs(v) > FLT_MAX) return std::nullopt;
    return static_cast<double>(static_cast<float>(v));
  }
  int mantissa_bits, min_exp; // min_exp: exponent of the smallest subnormal
  double max_finite;
  switch (t) {
  case DType::kFloat16:
    mantissa_bits = 10, min_exp = -24, max_finite = 65504.0;
    break;
  case DType::kBFloat16:
    mantissa_bits = 7, min_exp = -133, max_finite = 3.3895313892515355e38;
    break;
  case DType::kFloat8E4M3:
    mantissa_bits = 3, min_exp = -9, max_finite = 448.0;
    break;
  case DType::kFloat8E5M2:
    mantissa_bits = 2, min_exp = -16, max_finite = 57344.0;
    break;
  default:
    return std::nullopt;
  }
  if (v == 0.0) return v;
  if (std::fabs(v) > max_finite) return std::nullopt;
  int exp;
  std::frexp(std::fabs(v), &exp);
  int quantum = std::max(exp - 1 - mantissa_bits, min_exp);
  double scaled = std::ldexp(std::fabs(v), -quantum);
  if (scaled != std::floor(scaled)) return std::nullopt;
  return v;
}

std::optional<int64_t> FoldIntBinary(BinOp op, int64_t a_raw, int64_t b_raw, DType t) {
  const bool is_bool = t == DType::kBool;
  const bool is_unsigned = is_bool || IsUnsigned(t);
  const int64_t a = Wrap(static_cast<uint64_t>(a_raw), t);
  const int64_t b = Wrap(static_cast<uint64_t>(b_raw), t);
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  const bool lt = is_unsigned ? ua < ub : a < b;
  const int bits = is_bool ? 1 : DTypeBits(t);
  if (is_bool) {
    switch (op) {
    case BinOp::kAdd:
    case BinOp::kSub:
    case BinOp::kMul:
    case BinOp::kDiv:
    case BinOp::kFloorDiv:
    case BinOp::kFloorMod:
    case BinOp::kShl:
    case BinOp::kShr:
      return std::nullopt;
    default:
      break;
    }
  } else if (op == BinOp::kAnd || op == BinOp::kOr) {
    return std::nullopt;
  }
  switch (op) {
  case BinOp::kAdd:
    return Wrap(ua + ub, t);
  case BinOp::kSub:
    return Wrap(ua - ub, t);
  case BinOp::kMul:
    return Wrap(ua * ub, t);
  case BinOp::kDiv:
  case BinOp::kFloorDiv:
  case BinOp::kFloorMod: {
    if (b == 0) return std::nullopt;
    if (is_unsigned) return Wrap(op == BinOp::kFloorMod ? ua % ub : ua / ub, t);
    // b == -1 is the one case where int64 division overflows.
    if (b == -1) return op == BinOp::kFloorMod ? 0 : Wrap(0 - ua, t);
    int64_t q = a / b, r = a % b;
    if (op == BinOp::kDiv) return Wrap(static_cast<uint64_t>(q), t);
    bool adjust = r != 0 && ((r < 0) != (b < 0));
    if (op == BinOp::kFloorDiv) return Wrap(static_cast<uint64_t>(adjust ? q - 1 : q), t);
    return Wrap(static_cast<uint64_t>(adjust ? r + b : r), t);
  }
  case BinOp::kMin:
    return lt ? a : b;
  case BinOp::kMax:
    return lt ? b : a;
  case BinOp::kEq:
    return a == b;
  case BinOp::kNe:
    return a != b;
  case BinOp::kLt:
    return lt;
  case BinOp::kLe:
    return lt || a == b;
  case BinOp::kGt:
    return !lt && a != b;
  case BinOp::kGe:
    return !lt;
  case BinOp::kAnd:
    return (a != 0) && (b != 0);
  case BinOp::kOr:
    return (a != 0) || (b != 0);
  case BinOp::kBitAnd:
    return Wrap(ua & ub, t);
  case BinOp::kBitOr:
    return Wrap(ua | ub, t);
  case BinOp::kBitXor:
    return Wrap(ua ^ ub, t);
  case BinOp::kShl:
  case BinOp::kShr: {
    if (is_unsigned ? ub >= static_cast<uint64_t>(bits) : (b < 0 || b >= bits)) {
      return std::nullopt;
    }
    if (op == BinOp::kShl) return Wrap(ua << ub, t);
    return is_unsigned ? Wrap(ua >> ub, t) : (a >> b);
  }
  }
  return std::nullopt;
}

// Float results are doubles rounded to `t`; comparisons yield 0/1.
std::optional<double> FoldFloatBinary(BinOp op, double a_raw, double b_raw, DType t) {
  std::optional<double> ra = RoundTo(a_raw, t), rb = RoundTo(b_raw, t);
  if (!ra || !rb) return std::nullopt;
  const double a = *ra, b = *rb;
  switch (op) {
  case BinOp::kAdd:
    return RoundTo(a + b, t);
  case BinOp::kSub:
    return RoundTo(a - b, t);
  case BinOp::kMul:
    return RoundTo(a * b, t);
  case BinOp::kDiv:
    if (b == 0.0) return std::nullopt;
    return RoundTo(a / b, t);
  case BinOp::kFloorDiv:
  case BinOp::kFloorMod: {
    if (b == 0.0) return std::nullopt;
    std::optional<double> q = RoundTo(a / b, t);
    if (!q) return std::nullopt;
    double fq = std::floor(*q);
    if (op == BinOp::kFloorDiv) return fq;
    std::optional<double> prod = RoundTo(fq * b, t);
    if (!prod) return std::nullopt;
    return RoundTo(a - *prod, t);
  }
  case BinOp::kMin:
  case BinOp::kMax:
    // NaN and signed zeros differ between fmin and `<`; leave them.
    if (std::isnan(a) || std::isnan(b) || (a == 0.0 && b == 0.0)) return std::nullopt;
    return op == BinOp::kMin ? std::min(a, b) : std::max(a, b);
  case BinOp::kEq:
    return a == b ? 1.0 : 0.0;
  case BinOp::kNe:
    return a != b ? 1.0 : 0.0;
  case BinOp::kLt:
    return a < b ? 1.0 : 0.0;
  case BinOp::kLe:
    return a <= b ? 1.0 : 0.0;
  case BinOp::kGt:
    return a > b ? 1.0 : 0.0;
  case BinOp::kGe:
    return a >= b ? 1.0 : 0.0;
  default:
    return std::nullopt;
  }
}

std::optional<Expr> FoldBinary(const Expr& e) {
  const Expr& a = e.args[0];
  const Expr& b = e.args[1];
  if (a.dtype != b.dtype || !ValidDType(a.dtype) || !ValidDType(e.dtype)) return std::nullopt;
  const bool to_bool = IsComparison(e.bop) || IsLogical(e.bop);
  if (to_bool ? e.dtype != DType::kBool : e.dtype != a.dtype) return std::nullopt;
  if (IsIntLit(a) && IsIntLit(b) && !IsFloat(a.dtype)) {
    std::optional<int64_t> v = FoldIntBinary(e.bop, a.ival, b.ival, a.dtype);
    if (!v) return std::nullopt;
    return IntImm(to_bool ? (*v != 0) : *v, e.dtype, e.loc);
  }
  if (IsFloatLit(a) && IsFloatLit(b)) {
    std::optional<double> v = FoldFloatBinary(e.bop, a.fval, b.fval, a.dtype);
    if (!v) return std::nullopt;
    if (IsComparison(e.bop)) return IntImm(*v != 0.0, DType::kBool, e.loc);
    return FloatImm(*v, e.dtype, e.loc);
  }
  return std::nullopt;
}

std::optional<Expr> FoldUnary(const Expr& e) {
  const Expr& x = e.args[0];
  if (!ValidDType(x.dtype) || e.dtype != x.dtype) return std::nullopt;
  if (IsIntLit(x) && !IsFloat(x.dtype)) {
    uint64_t u = static_cast<uint64_t>(Wrap(static_cast<uint64_t>(x.ival), x.dtype));
    if (x.dtype == DType::kBool) {
      if (e.uop != UnOp::kNot) return std::nullopt;
      return IntImm(u == 0 ? 1 : 0, DType::kBool, e.loc);
    }
    if (e.uop == UnOp::kNeg) return IntImm(Wrap(0 - u, x.dtype), x.dtype, e.loc);
    if (e.uop == UnOp::kBitNot) return IntImm(Wrap(~u, x.dtype), x.dtype, e.loc);
    return std::nullopt;
  }
  if (IsFloatLit(x) && e.uop == UnOp::kNeg) {
    std::optional<double> v = RoundTo(x.fval, x.dtype);
    if (!v) return std::nullopt;
    return FloatImm(-*v, x.dtype, e.loc);
  }
  return std::nullopt;
}

std::optional<Expr> FoldCast(const Expr& e) {
  const Expr& x = e.args[0];
  const DType t = e.dtype;
  if (!ValidDType(t) || !ValidDType(x.dtype)) return std::nullopt;
  if (IsIntLit(x) && !IsFloat(x.dtype)) {
    const int64_t v = Wrap(static_cast<uint64_t>(x.ival), x.dtype);
    const bool src_unsigned = x.dtype == DType::kBool || IsUnsigned(x.dtype);
    if (t == DType::kBool) return IntImm(v != 0, t, e.loc);
    if (IsInteger(t)) return IntImm(Wrap(static_cast<uint64_t>(v), t), t, e.loc);
    // Convert once to the target precision (int -> double -> float could
    // round twice for values beyond 2^53).
    double d;
    if (t == DType::kFloat32) {
      d = src_unsigned ? static_cast<float>(static_cast<uint64_t>(v)) : static_cast<float>(v);
    } else {
      d = src_unsigned ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
      if (t != DType::kFloat64 && std::fabs(d) >= 9007199254740992.0) return std::nullopt;
    }
    std::optional<double> r = RoundTo(d, t);
    if (!r) return std::nullopt;
    return FloatImm(*r, t, e.loc);
  }
  if (IsFloatLit(x)) {
    std::optional<double> v = RoundTo(x.fval, x.dtype);
    if (!v) return std::nullopt;
    if (IsFloat(t)) {
      std::optional<double> r = RoundTo(*v, t);
      if (!r) return std::nullopt;
      return FloatImm(*r, t, e.loc);
    }
    if (t == DType::kBool) return IntImm(*v != 0.0, t, e.loc);
    // Float -> int truncates; out-of-range values are undefined in C/CUDA.
    if (!std::isfinite(*v)) return std::nullopt;
    double tr = std::trunc(*v);
    int bits = DTypeBits(t);
    double lo = IsUnsigned(t) ? 0.0 : -std::ldexp(1.0, bits - 1);
    double hi = IsUnsigned(t) ? std::ldexp(1.0, bits) : std::ldexp(1.0, bits - 1);
    if (tr < lo || tr >= hi) return std::nullopt;
    if (IsUnsigned(t)) return IntImm(Wrap(static_cast<uint64_t>(tr), t), t, e.loc);
    return IntImm(static_cast<int64_t>(tr), t, e.loc);
  }
  return std::nullopt;
}

} // namespace

std::optional<Expr> FoldConstant(const Expr& e) {
  switch (e.kind) {
  case ExprKind::kBinary:
    return e.args.size() == 2 ? FoldBinary(e) : std::nullopt;
  case ExprKind::kUnary:
    return e.args.size() == 1 ? FoldUnary(e) : std::nullopt;
  case ExprKind::kCast:
    return e.args.size() == 1 ? FoldCast(e) : std::nullopt;
  default:
    return std::nullopt;
  }
}

} // namespace kiln::ir
