// Bounds and the rewrites that use them.
//  1. BoundsOf: interval arithmetic over the signed integer operators, in
//     128-bit arithmetic, dropping any result that might not fit the dtype
//     (so no rewrite ever relies on wrapped values).
//  2. SimplifyWithBounds: ir::Simplify, then one bottom-up walk applying the
//     rules below at each node, then ir::Simplify again to renormalize.
//     - an integer node whose bounds are one value becomes that literal;
//     - n // c and n % c (c > 0): with n = Q + R, where every term of Q has a
//       coefficient divisible by c and R lies in [q*c, q*c + c), n // c is
//       Q/c + q and n % c is R - q*c (truncating division only when n >= 0);
//     - (x * k) // c and (x * k) % c with c a multiple of k > 0 become
//       x // (c/k) and (x % (c/k)) * k; (x % a) % c is x % c when c | a;
//     - comparisons and min/max decided by the operands' bounds, or by the
//       bounds of their difference; selects with a decided condition.
#include "compiler/ir/bounds.h"

#include <algorithm>
#include <utility>

#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/simplify.h"

namespace kiln::ir {

void BoundContext::Pop(const std::string& var) {
  auto it = vars_.find(var);
  if (it == vars_.end()) return;
  it->second.pop_back();
  if (it->second.empty()) vars_.erase(it);
}

std::optional<IntBounds> BoundContext::Var(const std::string& name) const {
  auto it = vars_.find(name);
  if (it == vars_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

void BoundContext::PopThread(int64_t dim) {
  auto it = thread_ranges_.find(dim);
  if (it == thread_ranges_.end()) return;
  it->second.pop_back();
  if (it->second.empty()) thread_ranges_.erase(it);
}

std::optional<IntBounds> BoundContext::Thread(int64_t dim) const {
  if (dim < 0 || dim >= static_cast<int64_t>(threads_.size()) || threads_[dim] < 1) {
    return std::nullopt;
  }
  IntBounds b{0, threads_[dim] - 1};
  auto it = thread_ranges_.find(dim);
  if (it != thread_ranges_.end() && !it->second.empty()) {
    b.lo = std::max(b.lo, it->second.back().lo);
    b.hi = std::min(b.hi, it->second.back().hi);
    if (b.lo > b.hi) return std::nullopt; // a branch no thread takes: claim nothing
  }
  return b;
}

namespace {

using Wide = __int128;

bool IsSignedInt(DType t) {
  return static_cast<int>(t) <= static_cast<int>(DType::kFloat8E5M2) && IsInteger(t) &&
         !IsUnsigned(t) && t != DType::kBool;
}

bool IsIntLit(const Expr& e) { return e.kind == ExprKind::kInt; }

// The interval if it fits the signed dtype `t`.
std::optional<IntBounds> Fit(Wide lo, Wide hi, DType t) {
  const int bits = DTypeBits(t);
  if (bits < 2 || bits > 64) return std::nullopt;
  const Wide max = (static_cast<Wide>(1) << (bits - 1)) - 1;
  const Wide min = -max - 1;
  if (lo < min || hi > max || lo > hi) return std::nullopt;
  return IntBounds{static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
}

Wide FloorDiv(Wide a, Wide c) {
  Wide q = a / c;
  if ((a % c != 0) && ((a < 0) != (c < 0))) --q;
  return q;
}

int BitLength(int64_t v) { // v >= 0
  int n = 0;
  while (v > 0) {
    ++n;
    v >>= 1;
  }
  return n;
}

std::optional<int64_t> Single(const std::optional<IntBounds>& b) {
  if (b && b->lo == b->hi) return b->lo;
  return std::nullopt;
}

std::optional<IntBounds> BinaryBounds(const Expr& e, const BoundContext& ctx) {
  const std::optional<IntBounds> a = BoundsOf(e.args[0], ctx);
  const std::optional<IntBounds> b = BoundsOf(e.args[1], ctx);
  if (!a || !b) return std::nullopt;
  const Wide alo = a->lo, ahi = a->hi, blo = b->lo, bhi = b->hi;
  const DType t = e.dtype;
  switch (e.bop) {
  case BinOp::kAdd:
    return Fit(alo + blo, ahi + bhi, t);
  case BinOp::kSub:
    return Fit(alo - bhi, ahi - blo, t);
  case BinOp::kMul: {
    const Wide p[] = {alo * blo, alo * bhi, ahi * blo, ahi * bhi};
    return Fit(*std::min_element(p, p + 4), *std::max_element(p, p + 4), t);
  }
  case BinOp::kFloorDiv:
    if (blo != bhi || blo <= 0) return std::nullopt;
    return Fit(FloorDiv(alo, blo), FloorDiv(ahi, blo), t);
  case BinOp::kDiv: // truncating: monotone in the numerator for c > 0
    if (blo != bhi || blo <= 0) return std::nullopt;
    return Fit(alo / blo, ahi / blo, t);
  case BinOp::kFloorMod: {
    if (blo <= 0) return std::nullopt;
    if (blo == bhi) {
      const Wide q = FloorDiv(alo, blo);
      if (FloorDiv(ahi, blo) == q) return Fit(alo - q * blo, ahi - q * blo, t);
    }
    return Fit(0, bhi - 1, t);
  }
  case BinOp::kMin:
    return Fit(std::min(alo, blo), std::min(ahi, bhi), t);
  case BinOp::kMax:
    return Fit(std::max(alo, blo), std::max(ahi, bhi), t);
  case BinOp::kBitAnd:
    if (alo < 0 || blo < 0) return std::nullopt;
    return Fit(0, std::min(ahi, bhi), t);
  case BinOp::kBitOr:
  case BinOp::kBitXor: {
    if (alo < 0 || blo < 0) return std::nullopt;
    const int n = BitLength(static_cast<int64_t>(std::max(ahi, bhi)));
    return Fit(0, (static_cast<Wide>(1) << n) - 1, t);
  }
  case BinOp::kShr:
    if (alo < 0 || blo != bhi || blo < 0 || blo > 62) return std::nullopt;
    return Fit(alo >> static_cast<int>(blo), ahi >> static_cast<int>(blo), t);
  case BinOp::kShl:
    if (alo < 0 || blo != bhi || blo < 0 || blo > 62) return std::nullopt;
    return Fit(alo << static_cast<int>(blo), ahi << static_cast<int>(blo), t);
  default:
    return std::nullopt;
  }
}

// ---------------------------------------------------------------------------
// Sums of terms coefficient * atom, for splitting a numerator.

struct Term {
  int64_t coeff = 1;
  Expr atom;
};

// Flattens +, - and multiplication by a literal. False on overflow.
bool Flatten(const Expr& e, int64_t sign, std::vector<Term>* terms, int64_t* constant) {
  if (e.kind == ExprKind::kInt) {
    int64_t v;
    if (__builtin_mul_overflow(e.ival, sign, &v) ||
        __builtin_add_overflow(*constant, v, constant)) {
      return false;
    }
    return true;
  }
  if (e.kind == ExprKind::kBinary && e.args.size() == 2 && e.args[0].dtype == e.dtype &&
      e.args[1].dtype == e.dtype) {
    if (e.bop == BinOp::kAdd) {
      return Flatten(e.args[0], sign, terms, constant) && Flatten(e.args[1], sign, terms, constant);
    }
    if (e.bop == BinOp::kSub) {
      return Flatten(e.args[0], sign, terms, constant) &&
             Flatten(e.args[1], -sign, terms, constant);
    }
    if (e.bop == BinOp::kMul) {
      for (int side = 0; side < 2; ++side) {
        if (!IsIntLit(e.args[side])) continue;
        int64_t k;
        if (__builtin_mul_overflow(e.args[side].ival, sign, &k)) return false;
        return Flatten(e.args[1 - side], k, terms, constant);
      }
    }
  }
  if (e.kind == ExprKind::kUnary && e.uop == UnOp::kNeg && e.args.size() == 1 &&
      e.args[0].dtype == e.dtype) {
    return Flatten(e.args[0], -sign, terms, constant);
  }
  terms->push_back({sign, e});
  return true;
}

Expr BuildSum(const std::vector<Term>& terms, int64_t constant, DType t) {
  Expr sum = IntImm(constant, t);
  for (const Term& term : terms) {
    sum =
        Binary(BinOp::kAdd, std::move(sum), Binary(BinOp::kMul, IntImm(term.coeff, t), term.atom));
  }
  return Simplify(sum);
}

// x * k (k a positive literal on either side): returns x and sets k.
const Expr* MultipleOf(const Expr& e, int64_t* k) {
  if (e.kind != ExprKind::kBinary || e.bop != BinOp::kMul || e.args.size() != 2) return nullptr;
  for (int side = 0; side < 2; ++side) {
    if (IsIntLit(e.args[side]) && e.args[side].ival > 0 && e.args[1 - side].dtype == e.dtype) {
      *k = e.args[side].ival;
      return &e.args[1 - side];
    }
  }
  return nullptr;
}

// n // c, n / c or n % c for a constant c > 0, or nullopt.
std::optional<Expr> DivModByConstant(const Expr& e, const BoundContext& ctx) {
  const Expr& n = e.args[0];
  const int64_t c = e.args[1].ival;
  const DType t = e.dtype;
  const bool mod = e.bop == BinOp::kFloorMod;
  const std::optional<IntBounds> nb = BoundsOf(n, ctx);
  if (e.bop == BinOp::kDiv && (!nb || nb->lo < 0)) return std::nullopt; // floor == trunc only here

  // (x % a) % c == x % c when c divides a.
  if (mod && n.kind == ExprKind::kBinary && n.bop == BinOp::kFloorMod && n.args.size() == 2 &&
      IsIntLit(n.args[1]) && n.args[1].ival > 0 && n.args[1].ival % c == 0 &&
      n.args[0].dtype == t) {
    return Binary(BinOp::kFloorMod, n.args[0], IntImm(c, t), e.loc);
  }
  int64_t k = 0;
  if (const Expr* x = MultipleOf(n, &k); x != nullptr && c % k == 0) {
    const int64_t m = c / k;
    if (mod) {
      return Binary(BinOp::kMul, Binary(BinOp::kFloorMod, *x, IntImm(m, t), e.loc), IntImm(k, t),
                    e.loc);
    }
    return Binary(e.bop == BinOp::kDiv ? BinOp::kDiv : BinOp::kFloorDiv, *x, IntImm(m, t), e.loc);
  }

  std::vector<Term> terms;
  int64_t constant = 0;
  if (!Flatten(n, 1, &terms, &constant) || !Fit(constant, constant, t)) return std::nullopt;
  for (const Term& term : terms) {
    if (!Fit(term.coeff, term.coeff, t)) return std::nullopt;
  }
  std::vector<Term> quotient;
  std::vector<Term> rest;
  for (Term& term : terms) (term.coeff % c == 0 ? quotient : rest).push_back(std::move(term));
  const Expr r = BuildSum(rest, constant, t);
  const std::optional<IntBounds> rb = BoundsOf(r, ctx);
  if (!rb) return std::nullopt;
  const int64_t q = static_cast<int64_t>(FloorDiv(rb->lo, c));
  if (FloorDiv(rb->hi, c) != q) return std::nullopt;
  const Wide qc = static_cast<Wide>(q) * c;
  if (!Fit(qc, qc, t)) return std::nullopt;
  if (mod) return Binary(BinOp::kSub, r, IntImm(static_cast<int64_t>(qc), t), e.loc);
  for (Term& term : quotient) term.coeff /= c;
  return BuildSum(quotient, q, t);
}

// A comparison of signed integers decided by bounds, or nullopt.
std::optional<bool> Decide(const Expr& e, const BoundContext& ctx) {
  const Expr& a = e.args[0];
  const Expr& b = e.args[1];
  std::optional<IntBounds> d = BoundsOf(Simplify(Binary(BinOp::kSub, a, b)), ctx);
  if (!d) {
    const std::optional<IntBounds> ab = BoundsOf(a, ctx);
    const std::optional<IntBounds> bb = BoundsOf(b, ctx);
    if (!ab || !bb) return std::nullopt;
    d = Fit(static_cast<Wide>(ab->lo) - bb->hi, static_cast<Wide>(ab->hi) - bb->lo, DType::kInt64);
    if (!d) return std::nullopt;
  }
  switch (e.bop) {
  case BinOp::kLt:
    if (d->hi < 0) return true;
    if (d->lo >= 0) return false;
    break;
  case BinOp::kLe:
    if (d->hi <= 0) return true;
    if (d->lo > 0) return false;
    break;
  case BinOp::kGt:
    if (d->lo > 0) return true;
    if (d->hi <= 0) return false;
    break;
  case BinOp::kGe:
    if (d->lo >= 0) return true;
    if (d->hi < 0) return false;
    break;
  case BinOp::kEq:
    if (d->lo == 0 && d->hi == 0) return true;
    if (d->lo > 0 || d->hi < 0) return false;
    break;
  case BinOp::kNe:
    if (d->lo == 0 && d->hi == 0) return false;
    if (d->lo > 0 || d->hi < 0) return true;
    break;
  default:
    break;
  }
  return std::nullopt;
}

Expr Rewrite(const Expr& in, const BoundContext& ctx, int depth) {
  if (depth > 256) return in;
  Expr e = in;
  for (Expr& a : e.args) a = Rewrite(a, ctx, depth + 1);

  if (IsSignedInt(e.dtype) && e.kind != ExprKind::kInt) {
    if (std::optional<int64_t> v = Single(BoundsOf(e, ctx))) return IntImm(*v, e.dtype, e.loc);
  }
  if (e.kind == ExprKind::kSelect && e.args.size() == 3 && IsIntLit(e.args[0])) {
    Expr chosen = e.args[0].ival != 0 ? e.args[1] : e.args[2];
    chosen.loc = e.loc;
    return chosen;
  }
  if (e.kind != ExprKind::kBinary || e.args.size() != 2) return e;
  const Expr& a = e.args[0];
  const Expr& b = e.args[1];
  if (!IsSignedInt(a.dtype) || a.dtype != b.dtype) return e;

  if (IsComparison(e.bop) && e.dtype == DType::kBool) {
    if (std::optional<bool> v = Decide(e, ctx)) return IntImm(*v ? 1 : 0, DType::kBool, e.loc);
    return e;
  }
  if (e.dtype != a.dtype) return e;
  if ((e.bop == BinOp::kFloorDiv || e.bop == BinOp::kDiv || e.bop == BinOp::kFloorMod) &&
      IsIntLit(b) && b.ival > 0) {
    if (std::optional<Expr> r = DivModByConstant(e, ctx)) {
      Expr out = Simplify(*r);
      out.loc = e.loc;
      return out;
    }
    return e;
  }
  if (e.bop == BinOp::kMin || e.bop == BinOp::kMax) {
    const std::optional<IntBounds> ab = BoundsOf(a, ctx);
    const std::optional<IntBounds> bb = BoundsOf(b, ctx);
    if (ab && bb) {
      const bool a_le_b = ab->hi <= bb->lo;
      const bool b_le_a = bb->hi <= ab->lo;
      if (a_le_b || b_le_a) {
        Expr chosen = (e.bop == BinOp::kMin) == a_le_b ? a : b;
        chosen.loc = e.loc;
        return chosen;
      }
    }
  }
  return e;
}

} // namespace

std::optional<IntBounds> BoundsOf(const Expr& e, const BoundContext& ctx) {
  if (!IsSignedInt(e.dtype)) return std::nullopt;
  switch (e.kind) {
  case ExprKind::kInt:
    return Fit(e.ival, e.ival, e.dtype);
  case ExprKind::kVar:
    if (std::optional<IntBounds> b = ctx.Var(e.name)) return Fit(b->lo, b->hi, e.dtype);
    return std::nullopt;
  case ExprKind::kThreadIdx:
    if (std::optional<IntBounds> b = ctx.Thread(e.ival)) return Fit(b->lo, b->hi, e.dtype);
    return std::nullopt;
  case ExprKind::kCast: {
    if (e.args.size() != 1 || !IsSignedInt(e.args[0].dtype) ||
        DTypeBits(e.args[0].dtype) > DTypeBits(e.dtype)) {
      return std::nullopt;
    }
    return BoundsOf(e.args[0], ctx);
  }
  case ExprKind::kSelect: {
    if (e.args.size() != 3) return std::nullopt;
    const std::optional<IntBounds> x = BoundsOf(e.args[1], ctx);
    const std::optional<IntBounds> y = BoundsOf(e.args[2], ctx);
    if (!x || !y) return std::nullopt;
    return IntBounds{std::min(x->lo, y->lo), std::max(x->hi, y->hi)};
  }
  case ExprKind::kBinary:
    if (e.args.size() != 2 || e.args[0].dtype != e.dtype || e.args[1].dtype != e.dtype) {
      return std::nullopt;
    }
    return BinaryBounds(e, ctx);
  case ExprKind::kUnary:
    if (e.uop == UnOp::kNeg && e.args.size() == 1 && e.args[0].dtype == e.dtype) {
      if (std::optional<IntBounds> b = BoundsOf(e.args[0], ctx)) {
        return Fit(-static_cast<Wide>(b->hi), -static_cast<Wide>(b->lo), e.dtype);
      }
    }
    return std::nullopt;
  default:
    return std::nullopt;
  }
}

Expr SimplifyWithBounds(const Expr& e, const BoundContext& ctx) {
  Expr s = Simplify(e);
  Expr r = Rewrite(s, ctx, 0);
  if (r == s) return s;
  Expr out = Simplify(r);
  out.loc = e.loc;
  return out;
}

} // namespace kiln::ir
