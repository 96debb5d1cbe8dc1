#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/simplify.h"
#include "gtest/gtest.h"
#include "tests/compiler/ir/expr_test_util.h"

namespace kiln::ir {
namespace {

struct Case {
  std::string name;
  Expr input;
  Expr expected;
};

std::vector<Case> Cases() {
  const Expr i = V("i"), j = V("j"), k = V("k"), bx = V("bx"), n = V("n");
  const Expr x = V("x"), c = V("c", DType::kBool), fx = V("fx", DType::kFloat32);
  const int64_t i32_max = std::numeric_limits<int32_t>::max();
  const int64_t i32_min = std::numeric_limits<int32_t>::min();
  const int64_t i64_min = std::numeric_limits<int64_t>::min();
  return {
      // Folding with the IR's integer semantics.
      {"add", Add(I(2), I(3)), I(5)},
      {"div truncates", Div(I(7), I(2)), I(3)},
      {"div truncates negative", Div(I(-7), I(2)), I(-3)},
      {"floordiv neg numerator", FDiv(I(-7), I(2)), I(-4)},
      {"floordiv neg divisor", FDiv(I(7), I(-2)), I(-4)},
      {"floordiv both neg", FDiv(I(-7), I(-2)), I(3)},
      {"floordiv exact neg", FDiv(I(-8), I(2)), I(-4)},
      {"floormod neg numerator", FMod(I(-7), I(2)), I(1)},
      {"floormod neg divisor", FMod(I(7), I(-2)), I(-1)},
      {"floormod both neg", FMod(I(-7), I(-2)), I(-1)},
      {"floormod positive", FMod(I(7), I(3)), I(1)},
      {"floormod -1 mod 64", FMod(I(-1), I(64)), I(63)},
      {"div by zero kept", Div(I(5), I(0)), Div(I(5), I(0))},
      {"floordiv by zero kept", FDiv(I(5), I(0)), FDiv(I(5), I(0))},
      {"floormod by zero kept", FMod(x, I(0)), FMod(x, I(0))},
      {"int32 overflow wraps", Add(I(i32_max), I(1)), I(i32_min)},
      {"int8 overflow wraps", Add(I(100, DType::kInt8), I(100, DType::kInt8)),
       I(-56, DType::kInt8)},
      {"int64 min / -1 wraps", Div(I(i64_min, DType::kInt64), I(-1, DType::kInt64)),
       I(i64_min, DType::kInt64)},
      {"int64 min % -1", FMod(I(i64_min, DType::kInt64), I(-1, DType::kInt64)),
       I(0, DType::kInt64)},
      {"uint32 0 - 1", Sub(I(0, DType::kUInt32), I(1, DType::kUInt32)),
       I(4294967295, DType::kUInt32)},
      {"uint32 compares unsigned",
       Op(BinOp::kGt, I(4294967295, DType::kUInt32), I(1, DType::kUInt32)), B(true)},
      {"uint32 floordiv", FDiv(I(4294967295, DType::kUInt32), I(2, DType::kUInt32)),
       I(2147483647, DType::kUInt32)},
      {"shl", Op(BinOp::kShl, I(1), I(4)), I(16)},
      {"shl out of range kept", Op(BinOp::kShl, I(1), I(40)), Op(BinOp::kShl, I(1), I(40))},
      {"shr arithmetic", Op(BinOp::kShr, I(-16), I(2)), I(-4)},
      {"shr logical", Op(BinOp::kShr, I(2147483648, DType::kUInt32), I(31, DType::kUInt32)),
       I(1, DType::kUInt32)},
      {"bit ops",
       Op(BinOp::kBitXor, Op(BinOp::kBitAnd, I(12), I(10)), Op(BinOp::kBitOr, I(1), I(2))), I(11)},
      {"bitnot", Unary(UnOp::kBitNot, I(0)), I(-1)},
      {"literal normalized to its dtype", I(300, DType::kInt8), I(44, DType::kInt8)},
      {"bool literal normalized", IntImm(2, DType::kBool), B(true)},
      {"neg literal", Unary(UnOp::kNeg, I(5)), I(-5)},
      {"min const", Op(BinOp::kMin, I(3), I(5)), I(3)},
      {"max const", Op(BinOp::kMax, I(-3), I(5)), I(5)},
      {"compare const", Op(BinOp::kLt, I(3), I(4)), B(true)},
      // Floats.
      {"float add", Add(F(1.5), F(2.25)), F(3.75)},
      {"float div is true division", Div(F(7.0), F(2.0)), F(3.5)},
      {"float32 rounding", Add(F(0.1), F(0.2)),
       F(static_cast<double>(static_cast<float>(0.1) + static_cast<float>(0.2)))},
      {"float64 no float32 rounding", Add(F(0.1, DType::kFloat64), F(0.2, DType::kFloat64)),
       F(0.1 + 0.2, DType::kFloat64)},
      {"float div by zero kept", Div(F(1.0), F(0.0)), Div(F(1.0), F(0.0))},
      {"float floordiv", FDiv(F(-7.0), F(2.0)), F(-4.0)},
      {"float floormod", FMod(F(-7.0), F(2.0)), F(1.0)},
      {"float16 exact", Add(F(0.5, DType::kFloat16), F(0.25, DType::kFloat16)),
       F(0.75, DType::kFloat16)},
      {"float16 inexact kept", Div(F(1.0, DType::kFloat16), F(3.0, DType::kFloat16)),
       Div(F(1.0, DType::kFloat16), F(3.0, DType::kFloat16))},
      {"float16 overflow kept", Mul(F(60000.0, DType::kFloat16), F(2.0, DType::kFloat16)),
       Mul(F(60000.0, DType::kFloat16), F(2.0, DType::kFloat16))},
      {"nan compares unequal", Op(BinOp::kEq, F(NAN), F(NAN)), B(false)},
      {"float min of signed zeros kept", Op(BinOp::kMin, F(0.0), F(-0.0)),
       Op(BinOp::kMin, F(0.0), F(-0.0))},
      {"float mul by one", Mul(fx, F(1.0)), fx},
      {"float add zero kept (-0.0)", Add(fx, F(0.0)), Add(fx, F(0.0))},
      // Casts.
      {"cast float to int truncates", Cast(DType::kInt32, F(3.75)), I(3)},
      {"cast negative float to int", Cast(DType::kInt32, F(-3.75)), I(-3)},
      {"cast out of range kept", Cast(DType::kInt32, F(1e20)), Cast(DType::kInt32, F(1e20))},
      {"cast int narrows", Cast(DType::kInt8, I(300)), I(44, DType::kInt8)},
      {"cast int to uint", Cast(DType::kUInt32, I(-1)), I(4294967295, DType::kUInt32)},
      {"cast int to float", Cast(DType::kFloat32, I(3)), F(3.0)},
      {"cast float to bool", Cast(DType::kBool, F(0.0)), B(false)},
      {"cast to float16 exact", Cast(DType::kFloat16, F(0.5)), F(0.5, DType::kFloat16)},
      {"cast to float16 inexact kept", Cast(DType::kFloat16, F(0.1, DType::kFloat64)),
       Cast(DType::kFloat16, F(0.1, DType::kFloat64))},
      {"cast to same dtype dropped", Cast(DType::kInt32, x), x},
      // Boolean short-cuts and select.
      {"true and x", Op(BinOp::kAnd, B(true), c), c},
      {"false and x", Op(BinOp::kAnd, c, B(false)), B(false)},
      {"x or true", Op(BinOp::kOr, c, B(true)), B(true)},
      {"x or false", Op(BinOp::kOr, B(false), c), c},
      {"not true", Unary(UnOp::kNot, B(true)), B(false)},
      {"not not", Unary(UnOp::kNot, Unary(UnOp::kNot, c)), c},
      {"not less", Unary(UnOp::kNot, Op(BinOp::kLt, i, n)), Op(BinOp::kGe, i, n)},
      {"select true", Select(B(true), i, j), i},
      {"select false", Select(B(false), i, j), j},
      {"select same arms", Select(c, Add(i, I(1)), Add(I(1), i)), Add(i, I(1))},
      // Index arithmetic normalization.
      {"bx tile offset", Sub(Mul(Add(bx, I(1)), I(64)), Mul(bx, I(64))), I(64)},
      {"plus zero", Add(Mul(k, I(32)), I(0)), Mul(k, I(32))},
      {"constants gathered", Add(Add(I(2), i), I(3)), Add(i, I(5))},
      {"x - x", Sub(i, i), I(0)},
      {"like terms", Add(Mul(i, I(2)), i), Mul(i, I(3))},
      {"times one", Mul(I(1), i), i},
      {"times zero", Mul(i, I(0)), I(0)},
      {"distribute", Sub(Mul(Add(i, j), I(2)), Mul(j, I(2))), Mul(i, I(2))},
      {"sorted terms", Add(Add(j, i), k), Add(Add(i, j), k)},
      {"constant minus var", Add(Mul(x, I(-1)), I(5)), Sub(I(5), x)},
      {"negative constant", Sub(Add(i, I(2)), I(3)), Sub(i, I(1))},
      {"products commute", Sub(Mul(i, j), Mul(j, i)), I(0)},
      {"nested in load", Load("A", DType::kFloat32, {Add(Add(I(1), i), I(-1))}),
       Load("A", DType::kFloat32, {i})},
      {"min by difference", Op(BinOp::kMin, i, Add(i, I(1))), i},
      {"max by difference", Op(BinOp::kMax, Add(i, I(4)), i), Add(i, I(4))},
      {"min symbolic kept", Op(BinOp::kMin, i, j), Op(BinOp::kMin, i, j)},
      {"compare by difference", Op(BinOp::kGt, Add(i, I(1)), i), B(true)},
      {"equal by difference", Op(BinOp::kEq, Mul(Add(i, I(1)), I(2)), Add(Mul(i, I(2)), I(2))),
       B(true)},
      // Floor division / modulo of sums (Python semantics).
      {"floordiv divisible sum", FDiv(Add(Mul(i, I(64)), I(128)), I(64)), Add(i, I(2))},
      {"floormod divisible sum", FMod(Add(Mul(i, I(64)), I(128)), I(64)), I(0)},
      {"floordiv negative constant", FDiv(Sub(Mul(i, I(64)), I(1)), I(64)), Sub(i, I(1))},
      {"floormod negative constant", FMod(Sub(Mul(i, I(64)), I(1)), I(64)), I(63)},
      {"floordiv partial", FDiv(Add(Mul(i, I(64)), j), I(64)), Add(i, FDiv(j, I(64)))},
      {"floormod partial", FMod(Add(Mul(i, I(64)), j), I(64)), FMod(j, I(64))},
      {"floordiv nothing to take", FDiv(Add(j, I(3)), I(64)), FDiv(Add(j, I(3)), I(64))},
      {"floordiv by one", FDiv(Add(i, j), I(1)), Add(i, j)},
      {"floordiv nested", FDiv(FDiv(x, I(4)), I(8)), FDiv(x, I(32))},
      {"trunc div exact", Div(Add(Mul(i, I(4)), I(8)), I(4)), Add(i, I(2))},
      {"trunc div inexact kept", Div(Add(Mul(i, I(4)), I(1)), I(4)),
       Div(Add(Mul(i, I(4)), I(1)), I(4))},
      {"unsigned floordiv not restructured",
       FDiv(Add(Mul(V("u", DType::kUInt32), I(64, DType::kUInt32)), I(128, DType::kUInt32)),
            I(64, DType::kUInt32)),
       FDiv(Add(Mul(V("u", DType::kUInt32), I(64, DType::kUInt32)), I(128, DType::kUInt32)),
            I(64, DType::kUInt32))},
      {"unsigned subtraction", Sub(V("u", DType::kUInt32), V("w", DType::kUInt32)),
       Sub(V("u", DType::kUInt32), V("w", DType::kUInt32))},
      {"int64 keeps dtype",
       Add(Add(I(2, DType::kInt64), V("l", DType::kInt64)), I(3, DType::kInt64)),
       Add(V("l", DType::kInt64), I(5, DType::kInt64))},
  };
}

TEST(SimplifyTest, Table) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    Expr got = NoLoc(Simplify(c.input));
    Expr want = NoLoc(c.expected);
    EXPECT_EQ(got, want) << "input: " << Str(c.input) << "\n got: " << Str(got)
                         << "\nwant: " << Str(want);
    EXPECT_EQ(got.dtype, c.input.dtype);
    // Simplification is idempotent.
    EXPECT_EQ(NoLoc(Simplify(got)), got) << Str(got);
  }
}

TEST(SimplifyTest, KeepsOuterLocation) {
  Loc loc{7, 9};
  Expr e = Binary(BinOp::kAdd, Binary(BinOp::kAdd, IntImm(2), VarRef("i", DType::kInt32, {7, 14})),
                  IntImm(3), loc);
  EXPECT_EQ(Simplify(e).loc, loc);
  EXPECT_EQ(Simplify(Binary(BinOp::kAdd, IntImm(2), IntImm(3), loc)).loc, loc);
  EXPECT_EQ(Simplify(Select(BoolImm(true), VarRef("a"), VarRef("b"), loc)).loc, loc);
}

TEST(SimplifyTest, ConstInt) {
  EXPECT_EQ(ConstInt(Sub(Mul(Add(V("bx"), I(1)), I(64)), Mul(V("bx"), I(64)))), 64);
  EXPECT_EQ(ConstInt(B(true)), 1);
  EXPECT_EQ(ConstInt(I(-5, DType::kInt64)), -5);
  EXPECT_EQ(ConstInt(V("n")), std::nullopt);
  EXPECT_EQ(ConstInt(F(2.0)), std::nullopt);
}

TEST(SimplifyTest, ProvablyEqual) {
  const Expr i = V("i"), n = V("n");
  EXPECT_TRUE(ProvablyEqual(Mul(Add(i, I(1)), I(2)), Add(Mul(I(2), i), I(2))));
  EXPECT_TRUE(ProvablyEqual(I(64), I(64, DType::kInt64)));
  EXPECT_TRUE(ProvablyEqual(F(1.5), F(1.5)));
  EXPECT_FALSE(ProvablyEqual(i, n)); // not proven, maybe equal
  EXPECT_FALSE(ProvablyEqual(Add(i, I(1)), i));
  EXPECT_FALSE(ProvablyEqual(F(1.5), F(2.5)));
}

TEST(SimplifyTest, AddressesSimplifyTheirIndexOnly) {
  const Expr idx = Sub(Mul(Add(V("tid"), I(1)), I(8)), I(8)); // tid * 8
  EXPECT_EQ(Simplify(Address("A", DType::kFloat16, idx, Loc{3, 4})),
            Address("A", DType::kFloat16, Mul(V("tid"), I(8)), Loc{3, 4}));
  // Addresses of different buffers are different atoms, even at one index.
  const Expr a = Address("A", DType::kFloat16, I(0));
  const Expr b = Address("B", DType::kFloat16, I(0));
  EXPECT_TRUE(ProvablyEqual(a, a));
  EXPECT_FALSE(ProvablyEqual(a, b));
}

TEST(SimplifyTest, DeepExpressionIsLeftAlone) {
  Expr e = V("i");
  for (int d = 0; d < 5000; ++d) e = Add(std::move(e), I(1));
  Expr s = Simplify(e);
  EXPECT_EQ(s, e);
  Expr shallow = V("i");
  for (int d = 0; d < 200; ++d) shallow = Add(std::move(shallow), I(1));
  EXPECT_EQ(NoLoc(Simplify(shallow)), Add(V("i"), I(200)));
}

TEST(SimplifyTest, LargeProductsStayBounded) {
  // (a0 + ... + a9) * (b0 + ... + b9) would be 100 terms; it stays a product
  // but is still recognized as equal to its mirror.
  Expr a = V("a0"), b = V("b0");
  for (int t = 1; t < 10; ++t) {
    a = Add(std::move(a), V(absl::StrCat("a", t)));
    b = Add(std::move(b), V(absl::StrCat("b", t)));
  }
  EXPECT_EQ(ConstInt(Sub(Mul(a, b), Mul(b, a))), 0);
}

Expr RandomExpr(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> pick(0, 99);
  if (depth == 0 || pick(rng) < 25) {
    if (pick(rng) < 50) return V(std::string(1, static_cast<char>('a' + pick(rng) % 3)));
    return I(pick(rng) % 21 - 10);
  }
  static const BinOp kOps[] = {BinOp::kAdd, BinOp::kAdd,      BinOp::kSub,      BinOp::kMul,
                               BinOp::kMul, BinOp::kFloorDiv, BinOp::kFloorMod, BinOp::kDiv,
                               BinOp::kMin, BinOp::kMax};
  int r = pick(rng);
  if (r < 5) return Unary(UnOp::kNeg, RandomExpr(rng, depth - 1));
  if (r < 10) {
    BinOp cmp = pick(rng) < 50 ? BinOp::kLt : BinOp::kEq;
    return Select(Binary(cmp, RandomExpr(rng, depth - 1), RandomExpr(rng, depth - 1)),
                  RandomExpr(rng, depth - 1), RandomExpr(rng, depth - 1));
  }
  BinOp op = kOps[pick(rng) % 10];
  Expr b = RandomExpr(rng, depth - 1);
  // Mostly constant divisors, as in index arithmetic.
  if ((op == BinOp::kFloorDiv || op == BinOp::kFloorMod || op == BinOp::kDiv) && pick(rng) < 80) {
    b = I(pick(rng) % 2 ? pick(rng) % 16 + 1 : -(pick(rng) % 16 + 1));
  }
  return Binary(op, RandomExpr(rng, depth - 1), std::move(b));
}

TEST(SimplifyTest, RandomExpressionsKeepTheirValue) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int64_t> value(-40, 40);
  int compared = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Expr e = RandomExpr(rng, 4);
    Expr s = Simplify(e);
    ASSERT_EQ(NoLoc(Simplify(s)), NoLoc(s)) << "not idempotent: " << Str(e);
    for (int sample = 0; sample < 8; ++sample) {
      Eval before, after;
      before.env = {{"a", value(rng)}, {"b", value(rng)}, {"c", value(rng)}};
      after.env = before.env;
      int64_t want = before(e);
      int64_t got = after(s);
      if (!before.ok) continue;
      EXPECT_FALSE(after.divided_by_zero) << Str(e) << " -> " << Str(s);
      if (!after.ok) continue;
      ++compared;
      ASSERT_EQ(got, want) << "input: " << Str(e) << "\nsimplified: " << Str(s)
                           << "\na=" << before.env["a"] << " b=" << before.env["b"]
                           << " c=" << before.env["c"];
    }
  }
  EXPECT_GT(compared, 10000);
}

} // namespace
} // namespace kiln::ir
