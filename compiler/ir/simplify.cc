// Simplification in three layers:
//  1. Constant folding of literals with the IR's semantics (const_fold.h).
//  2. Normalization of integer +, -, * and negation into a sum of monomials
//     (coefficient x sorted atoms) plus a constant, rebuilt in one canonical
//     order: positive terms, then subtracted terms, then the constant. The
//     ring identities hold under wrapping, so this is exact for every integer
//     dtype.
//  3. Rules that assume no signed overflow (as CUDA C++ does), applied to
//     signed integers only: floor division/modulo of a sum by a constant,
//     exact truncating division, ordered comparisons and min/max decided by
//     a constant difference.
#include "compiler/ir/simplify.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/const_fold.h"
#include "compiler/ir/dtype.h"

namespace kiln::ir {
namespace {

// Deeper expressions are returned unchanged; the verifier rejects them.
constexpr int kMaxDepth = 256;
// Products of sums are expanded only up to this many terms.
constexpr size_t kMaxExpandedTerms = 32;

bool ValidDType(DType t) { return static_cast<int>(t) <= static_cast<int>(DType::kFloat8E5M2); }
bool IsIntType(DType t) { return ValidDType(t) && IsInteger(t); }
bool IsSignedInt(DType t) { return IsIntType(t) && !IsUnsigned(t); }
bool IsFloatType(DType t) { return ValidDType(t) && IsFloat(t); }

int64_t Wrap(uint64_t v, DType t) { return WrapToDType(v, t); }

// The value of a coefficient read as a signed number of `t`'s width, for
// choosing between `+ c*x` and `- (-c)*x`.
int64_t SignedView(uint64_t v, DType t) {
  int bits = t == DType::kBool ? 1 : DTypeBits(t);
  if (bits >= 64) return static_cast<int64_t>(v);
  uint64_t mask = (uint64_t{1} << bits) - 1;
  v &= mask;
  if ((v >> (bits - 1)) & 1) v |= ~mask;
  return static_cast<int64_t>(v);
}

bool IsIntLit(const Expr& e) { return e.kind == ExprKind::kInt; }
bool IsFloatLit(const Expr& e) { return e.kind == ExprKind::kFloat && IsFloatType(e.dtype); }

Expr WithLoc(Expr e, Loc loc) {
  e.loc = loc;
  return e;
}

// ---------------------------------------------------------------------------
// Structural keys (ignoring locations) for ordering and combining atoms.

void AppendKey(const Expr& e, std::string* out) {
  out->push_back('(');
  out->append(std::to_string(static_cast<int>(e.kind)));
  out->push_back(':');
  out->append(std::to_string(static_cast<int>(e.dtype)));
  switch (e.kind) {
  case ExprKind::kInt:
  case ExprKind::kThreadIdx:
    out->push_back(':');
    out->append(std::to_string(e.ival));
    break;
  case ExprKind::kFloat: {
    uint64_t bits;
    std::memcpy(&bits, &e.fval, sizeof bits);
    out->push_back(':');
    out->append(std::to_string(bits));
    break;
  }
  case ExprKind::kVar:
  case ExprKind::kLoad:
  case ExprKind::kAddress:
    // Length-prefixed so that no name can imitate structure.
    out->push_back(':');
    out->append(std::to_string(e.name.size()));
    out->push_back('\'');
    out->append(e.name);
    break;
  case ExprKind::kBinary:
    out->append(":b" + std::to_string(static_cast<int>(e.bop)));
    break;
  case ExprKind::kUnary:
    out->append(":u" + std::to_string(static_cast<int>(e.uop)));
    break;
  case ExprKind::kCall:
    out->append(":f" + std::to_string(static_cast<int>(e.fn)));
    break;
  case ExprKind::kCast:   // the dtype is the target
  case ExprKind::kSelect: // all in the operands
    break;
  }
  for (const Expr& a : e.args) AppendKey(a, out);
  out->push_back(')');
}

std::string Key(const Expr& e) {
  std::string s;
  AppendKey(e, &s);
  return s;
}

bool SameStructure(const Expr& a, const Expr& b) { return Key(a) == Key(b); }

int BoundedDepth(const Expr& e, int limit) {
  if (limit <= 0) return 1;
  int d = 0;
  for (const Expr& a : e.args) d = std::max(d, BoundedDepth(a, limit - 1));
  return d + 1;
}

// ---------------------------------------------------------------------------
// Sums of monomials.

struct Term {
  std::vector<Expr> atoms; // sorted by key, never empty
  uint64_t coeff = 0;
};

struct Sum {
  DType dtype = DType::kInt32;
  std::map<std::string, Term> terms; // by the joined keys of the atoms
  uint64_t constant = 0;

  bool IsConstant() const { return terms.empty(); }
  size_t Size() const { return terms.size() + (constant != 0 ? 1 : 0); }
};

std::string MonomialKey(const std::vector<Expr>& atoms) {
  std::string key;
  for (const Expr& a : atoms) {
    key += Key(a);
    key.push_back('*');
  }
  return key;
}

void AddTerm(Sum* s, const std::vector<Expr>& atoms, const std::string& key, uint64_t coeff) {
  auto [it, inserted] = s->terms.try_emplace(key, Term{atoms, 0});
  it->second.coeff = static_cast<uint64_t>(Wrap(it->second.coeff + coeff, s->dtype));
  if (it->second.coeff == 0) s->terms.erase(it);
}

Sum Constant(uint64_t c, DType t) {
  Sum s;
  s.dtype = t;
  s.constant = static_cast<uint64_t>(Wrap(c, t));
  return s;
}

Sum Atom(Expr e, DType t) {
  Sum s;
  s.dtype = t;
  std::vector<Expr> atoms{std::move(e)};
  std::string key = MonomialKey(atoms);
  AddTerm(&s, atoms, key, 1);
  return s;
}

Sum Scale(const Sum& s, uint64_t k) {
  Sum out = Constant(s.constant * k, s.dtype);
  for (auto& [key, term] : s.terms) AddTerm(&out, term.atoms, key, term.coeff * k);
  return out;
}

Sum Plus(Sum a, const Sum& b, bool negate_b) {
  uint64_t sign = negate_b ? ~uint64_t{0} : 1; // -1 or 1, wrapping
  a.constant = static_cast<uint64_t>(Wrap(a.constant + sign * b.constant, a.dtype));
  for (const auto& [key, term] : b.terms) AddTerm(&a, term.atoms, key, sign * term.coeff);
  return a;
}

Expr Rebuild(const Sum& s, Loc loc);

Sum Times(const Sum& a, const Sum& b) {
  if (a.IsConstant()) return Scale(b, a.constant);
  if (b.IsConstant()) return Scale(a, b.constant);
  if (a.Size() * b.Size() > kMaxExpandedTerms) {
    // Too big to expand: keep the product as one atom, operands in key order
    // so that a*b and b*a agree.
    Expr x = Rebuild(a, {}), y = Rebuild(b, {});
    if (Key(y) < Key(x)) std::swap(x, y);
    return Atom(Binary(BinOp::kMul, std::move(x), std::move(y)), a.dtype);
  }
  Sum out = Constant(a.constant * b.constant, a.dtype);
  for (const auto& [ka, ta] : a.terms) {
    if (b.constant != 0) AddTerm(&out, ta.atoms, ka, ta.coeff * b.constant);
  }
  for (const auto& [kb, tb] : b.terms) {
    if (a.constant != 0) AddTerm(&out, tb.atoms, kb, tb.coeff * a.constant);
    for (const auto& [ka, ta] : a.terms) {
      std::vector<Expr> atoms = ta.atoms;
      atoms.insert(atoms.end(), tb.atoms.begin(), tb.atoms.end());
      std::stable_sort(atoms.begin(), atoms.end(),
                       [](const Expr& x, const Expr& y) { return Key(x) < Key(y); });
      AddTerm(&out, atoms, MonomialKey(atoms), ta.coeff * tb.coeff);
    }
  }
  return out;
}

Expr Product(const std::vector<Expr>& atoms, DType t) {
  Expr p = atoms[0];
  for (size_t i = 1; i < atoms.size(); ++i) p = Binary(BinOp::kMul, std::move(p), atoms[i]);
  p.dtype = t;
  return p;
}

// Canonical order: terms with a positive coefficient (by key), then the
// subtracted ones (by key), then the constant.
Expr Rebuild(const Sum& s, Loc loc) {
  const DType t = s.dtype;
  std::optional<Expr> acc;
  auto lit = [t](uint64_t v) { return IntImm(Wrap(v, t), t); };
  auto scaled = [&](const Term& term, uint64_t c) {
    Expr p = Product(term.atoms, t);
    if (Wrap(c, t) == 1) return p;
    return Binary(BinOp::kMul, std::move(p), lit(c));
  };
  // A coefficient is written as a subtraction when its signed view is
  // negative and negating it does not overflow.
  auto subtracted = [t](uint64_t c) {
    int64_t v = SignedView(c, t);
    return v < 0 && SignedView(0 - c, t) > 0;
  };
  for (const auto& [key, term] : s.terms) {
    if (subtracted(term.coeff)) continue;
    Expr x = scaled(term, term.coeff);
    acc = acc ? Binary(BinOp::kAdd, std::move(*acc), std::move(x)) : std::move(x);
  }
  bool constant_used = false;
  if (!acc && s.constant != 0 && !subtracted(s.constant)) {
    acc = lit(s.constant); // `5 - x` rather than `-x + 5`
    constant_used = true;
  }
  for (const auto& [key, term] : s.terms) {
    if (!subtracted(term.coeff)) continue;
    Expr x = scaled(term, 0 - term.coeff);
    acc =
        acc ? Binary(BinOp::kSub, std::move(*acc), std::move(x)) : Unary(UnOp::kNeg, std::move(x));
  }
  if (!acc) return IntImm(Wrap(s.constant, t), t, loc);
  if (!constant_used && s.constant != 0) {
    acc = subtracted(s.constant) ? Binary(BinOp::kSub, std::move(*acc), lit(0 - s.constant))
                                 : Binary(BinOp::kAdd, std::move(*acc), lit(s.constant));
  }
  acc->dtype = t;
  acc->loc = loc;
  return std::move(*acc);
}

// ---------------------------------------------------------------------------
// The simplifier.

Expr SimplifyImpl(const Expr& e);
Expr Normalize(const Expr& e);

// Integer +, -, *, unary - whose operands share its dtype.
bool IsNormalizable(const Expr& e) {
  if (!IsIntType(e.dtype)) return false;
  if (e.kind == ExprKind::kBinary) {
    if (e.bop != BinOp::kAdd && e.bop != BinOp::kSub && e.bop != BinOp::kMul) return false;
    return e.args.size() == 2 && e.args[0].dtype == e.dtype && e.args[1].dtype == e.dtype;
  }
  if (e.kind == ExprKind::kUnary) {
    return e.uop == UnOp::kNeg && e.args.size() == 1 && e.args[0].dtype == e.dtype;
  }
  return false;
}

// `simplified`: e is already the output of SimplifyImpl (its atoms need no
// more work).
Sum Linearize(const Expr& e, DType t, bool simplified) {
  if (e.dtype == t && IsIntLit(e)) return Constant(static_cast<uint64_t>(e.ival), t);
  if (e.dtype == t && IsNormalizable(e)) {
    if (e.kind == ExprKind::kUnary) {
      return Scale(Linearize(e.args[0], t, simplified), ~uint64_t{0});
    }
    Sum a = Linearize(e.args[0], t, simplified);
    Sum b = Linearize(e.args[1], t, simplified);
    if (e.bop == BinOp::kMul) return Times(a, b);
    return Plus(std::move(a), b, e.bop == BinOp::kSub);
  }
  if (simplified) return Atom(e, t);
  Expr s = SimplifyImpl(e);
  if (s.dtype == t && (IsIntLit(s) || IsNormalizable(s))) return Linearize(s, t, true);
  return Atom(std::move(s), t);
}

Sum LinearizeSimplified(const Expr& e) { return Linearize(e, e.dtype, true); }

// a - b as a sum, for integer operands of one dtype.
Sum Difference(const Expr& a, const Expr& b) {
  return Plus(LinearizeSimplified(a), LinearizeSimplified(b), /*negate_b=*/true);
}

// Floor division, floor modulo and exact truncating division of a signed
// integer by a nonzero constant c. With n = c*Q + R + k (Q collecting the
// terms whose coefficient c divides) and k = c*q0 + r0 (Python's divmod):
// n // c = Q + q0 + (R + r0) // c and n % c = (R + r0) % c.
std::optional<Expr> DivideByConstant(const Expr& e) {
  const Expr& n = e.args[0];
  const DType t = e.dtype;
  const int64_t c = Wrap(static_cast<uint64_t>(e.args[1].ival), t);
  if (c == 0) return std::nullopt;
  // (x // c1) // c2 == x // (c1 * c2) for positive constants.
  if (e.bop == BinOp::kFloorDiv && c > 0 && n.kind == ExprKind::kBinary &&
      n.bop == BinOp::kFloorDiv && n.args.size() == 2 && n.dtype == t && IsIntLit(n.args[1]) &&
      n.args[1].dtype == t) {
    int64_t c1 = Wrap(static_cast<uint64_t>(n.args[1].ival), t);
    int64_t prod;
    if (c1 > 0 && !__builtin_mul_overflow(c1, c, &prod) && Wrap(prod, t) == prod) {
      return SimplifyImpl(Binary(BinOp::kFloorDiv, n.args[0], IntImm(prod, t), e.loc));
    }
  }
  auto div = [c, t](int64_t v) { // exact division, v divisible by c
    return c == -1 ? static_cast<uint64_t>(Wrap(0 - static_cast<uint64_t>(v), t))
                   : static_cast<uint64_t>(v / c);
  };
  Sum sum = LinearizeSimplified(n);
  Sum quotient = Constant(0, t);
  Sum rest = Constant(0, t);
  for (const auto& [key, term] : sum.terms) {
    int64_t coeff = SignedView(term.coeff, t);
    if (c == -1 || coeff % c == 0) {
      AddTerm(&quotient, term.atoms, key, div(coeff));
    } else {
      AddTerm(&rest, term.atoms, key, term.coeff);
    }
  }
  const int64_t k = SignedView(sum.constant, t);
  if (e.bop == BinOp::kDiv) {
    // Truncation only commutes with exact division.
    if (!rest.terms.empty() || (c != -1 && k % c != 0)) return std::nullopt;
    quotient.constant = static_cast<uint64_t>(Wrap(div(k), t));
    return Rebuild(quotient, e.loc);
  }
  int64_t q0 = 0, r0 = k;
  if (c != -1) {
    q0 = k / c;
    r0 = k % c;
    if (r0 != 0 && ((r0 < 0) != (c < 0))) {
      q0 -= 1;
      r0 += c;
    }
  } else {
    q0 = static_cast<int64_t>(div(k));
    r0 = 0;
  }
  if (quotient.terms.empty() && q0 == 0) {
    if (rest.terms.empty()) return IntImm(e.bop == BinOp::kFloorMod ? r0 : 0, t, e.loc);
    return std::nullopt; // nothing to take out
  }
  if (rest.terms.empty()) {
    if (e.bop == BinOp::kFloorMod) return IntImm(r0, t, e.loc);
    quotient.constant = static_cast<uint64_t>(Wrap(static_cast<uint64_t>(q0), t));
    return Rebuild(quotient, e.loc);
  }
  rest.constant = static_cast<uint64_t>(Wrap(static_cast<uint64_t>(r0), t));
  Expr inner = Binary(e.bop, Rebuild(rest, {}), IntImm(c, t));
  inner.dtype = t;
  if (e.bop == BinOp::kFloorMod) return WithLoc(std::move(inner), e.loc);
  quotient.constant = static_cast<uint64_t>(Wrap(static_cast<uint64_t>(q0), t));
  return Rebuild(Plus(std::move(quotient), Atom(std::move(inner), t), false), e.loc);
}

std::optional<BinOp> NegatedComparison(BinOp op) {
  switch (op) {
  case BinOp::kEq:
    return BinOp::kNe;
  case BinOp::kNe:
    return BinOp::kEq;
  case BinOp::kLt:
    return BinOp::kGe;
  case BinOp::kLe:
    return BinOp::kGt;
  case BinOp::kGt:
    return BinOp::kLe;
  case BinOp::kGe:
    return BinOp::kLt;
  default:
    return std::nullopt;
  }
}

Expr SimplifyBinary(Expr e) {
  if (std::optional<Expr> folded = FoldConstant(e)) return *folded;
  const Expr& a = e.args[0];
  const Expr& b = e.args[1];
  const DType t = a.dtype;
  if (a.dtype != b.dtype) return e;

  if (IsLogical(e.bop) && t == DType::kBool && e.dtype == DType::kBool) {
    const bool is_and = e.bop == BinOp::kAnd;
    for (int side = 0; side < 2; ++side) {
      const Expr& lit = e.args[side];
      const Expr& other = e.args[1 - side];
      if (!IsIntLit(lit)) continue;
      // true && x == x, false && x == false; dually for ||.
      if ((lit.ival != 0) == is_and) return WithLoc(other, e.loc);
      return IntImm(is_and ? 0 : 1, DType::kBool, e.loc);
    }
    if (SameStructure(a, b)) return WithLoc(a, e.loc);
    return e;
  }

  if (IsFloatType(t) && e.dtype == t) {
    // Identities exact for every float, NaN and signed zero included.
    auto is_one = [](const Expr& x) { return IsFloatLit(x) && x.fval == 1.0; };
    if ((e.bop == BinOp::kMul || e.bop == BinOp::kDiv) && is_one(b)) return WithLoc(a, e.loc);
    if (e.bop == BinOp::kMul && is_one(a)) return WithLoc(b, e.loc);
    return e;
  }

  if (!IsIntType(t)) return e;
  const bool is_signed = IsSignedInt(t);
  if (IsComparison(e.bop) && e.dtype == DType::kBool) {
    Sum d = Difference(a, b);
    if (!d.IsConstant()) return e;
    const bool ordered = e.bop != BinOp::kEq && e.bop != BinOp::kNe;
    if (ordered && !is_signed) return e;
    int64_t v = SignedView(d.constant, t);
    bool r = false;
    switch (e.bop) {
    case BinOp::kEq:
      r = v == 0;
      break;
    case BinOp::kNe:
      r = v != 0;
      break;
    case BinOp::kLt:
      r = v < 0;
      break;
    case BinOp::kLe:
      r = v <= 0;
      break;
    case BinOp::kGt:
      r = v > 0;
      break;
    case BinOp::kGe:
      r = v >= 0;
      break;
    default:
      break;
    }
    return IntImm(r, DType::kBool, e.loc);
  }
  if (e.dtype != t) return e;
  if (e.bop == BinOp::kMin || e.bop == BinOp::kMax) {
    if (SameStructure(a, b)) return WithLoc(a, e.loc);
    if (!is_signed) return e;
    Sum d = Difference(a, b);
    if (!d.IsConstant()) return e;
    bool a_smaller = SignedView(d.constant, t) <= 0;
    return WithLoc((e.bop == BinOp::kMin) == a_smaller ? a : b, e.loc);
  }
  if ((e.bop == BinOp::kFloorDiv || e.bop == BinOp::kFloorMod || e.bop == BinOp::kDiv) &&
      is_signed && IsIntLit(b)) {
    if (std::optional<Expr> r = DivideByConstant(e)) return *r;
  }
  return e;
}

Expr SimplifyNode(Expr out);

// The recursion only descends; normalization and the per-node rules run out
// of line, so that each level of a deep expression costs a small frame
// (docs/design/ir-text.md, Limits).
Expr SimplifyImpl(const Expr& e) {
  if (IsNormalizable(e)) return Normalize(e);
  Expr out = e;
  for (Expr& a : out.args) a = SimplifyImpl(a);
  return SimplifyNode(std::move(out));
}

ABSL_ATTRIBUTE_NOINLINE Expr Normalize(const Expr& e) {
  return Rebuild(Linearize(e, e.dtype, false), e.loc);
}

// The rules for one node whose operands are simplified already.
ABSL_ATTRIBUTE_NOINLINE Expr SimplifyNode(Expr out) {
  switch (out.kind) {
  case ExprKind::kBinary:
    if (out.args.size() != 2) return out;
    return SimplifyBinary(std::move(out));
  case ExprKind::kUnary: {
    if (out.args.size() != 1) return out;
    if (std::optional<Expr> folded = FoldConstant(out)) return *folded;
    const Expr& x = out.args[0];
    // !!x == x and ~~x == x.
    if (x.kind == ExprKind::kUnary && x.uop == out.uop && out.uop != UnOp::kNeg &&
        x.args.size() == 1 && x.args[0].dtype == out.dtype) {
      return WithLoc(x.args[0], out.loc);
    }
    // !(a < b) == (a >= b) for integers (not floats: NaN).
    if (out.uop == UnOp::kNot && x.kind == ExprKind::kBinary && x.args.size() == 2 &&
        IsIntType(x.args[0].dtype)) {
      if (std::optional<BinOp> neg = NegatedComparison(x.bop)) {
        Expr r = x;
        r.bop = *neg;
        r.loc = out.loc;
        return r;
      }
    }
    return out;
  }
  case ExprKind::kCast: {
    if (out.args.size() != 1) return out;
    if (std::optional<Expr> folded = FoldConstant(out)) return *folded;
    if (out.args[0].dtype == out.dtype) return WithLoc(out.args[0], out.loc);
    return out;
  }
  case ExprKind::kSelect: {
    if (out.args.size() != 3) return out;
    const Expr& cond = out.args[0];
    if (IsIntLit(cond) && cond.dtype == DType::kBool) {
      return WithLoc(out.args[cond.ival != 0 ? 1 : 2], out.loc);
    }
    if (SameStructure(out.args[1], out.args[2]) && out.args[1].dtype == out.dtype) {
      return WithLoc(out.args[1], out.loc);
    }
    return out;
  }
  case ExprKind::kInt:
    // One spelling per value: int8 300 is int8 44, bool 2 is true.
    if (ValidDType(out.dtype) && !IsFloat(out.dtype)) {
      out.ival = Wrap(static_cast<uint64_t>(out.ival), out.dtype);
    }
    return out;
  case ExprKind::kFloat:
  case ExprKind::kVar:
  case ExprKind::kLoad: // indices simplified above
  case ExprKind::kCall: // arguments simplified above
  case ExprKind::kThreadIdx:
  case ExprKind::kAddress: // thread IR: the flat index simplified above
    return out;
  }
  return out;
}

} // namespace

Expr Simplify(const Expr& e) {
  if (BoundedDepth(e, kMaxDepth) > kMaxDepth) return e;
  return SimplifyImpl(e);
}

std::optional<int64_t> ConstInt(const Expr& e) {
  Expr s = Simplify(e);
  if (s.kind != ExprKind::kInt || !ValidDType(s.dtype) || IsFloat(s.dtype)) return std::nullopt;
  return Wrap(static_cast<uint64_t>(s.ival), s.dtype);
}

std::optional<int64_t> ConstGridBlocks(const Kernel& kernel) {
  int64_t blocks = 1;
  for (const Expr& g : kernel.grid) {
    const std::optional<int64_t> n = ConstInt(g);
    if (!n || *n <= 0) return std::nullopt;
    blocks *= *n;
  }
  return blocks;
}

bool ProvablyEqual(const Expr& a, const Expr& b) {
  const bool int_a = ValidDType(a.dtype) && !IsFloat(a.dtype);
  const bool int_b = ValidDType(b.dtype) && !IsFloat(b.dtype);
  if (int_a && int_b) {
    std::optional<int64_t> ca = ConstInt(a), cb = ConstInt(b);
    if (ca && cb) return *ca == *cb;
    if (a.dtype == b.dtype && IsInteger(a.dtype)) {
      if (BoundedDepth(a, kMaxDepth) + 1 > kMaxDepth ||
          BoundedDepth(b, kMaxDepth) + 1 > kMaxDepth) {
        return SameStructure(a, b);
      }
      std::optional<int64_t> d = ConstInt(Binary(BinOp::kSub, a, b));
      return d && *d == 0;
    }
  }
  return SameStructure(Simplify(a), Simplify(b));
}

} // namespace kiln::ir
