#include <random>
#include <string>
#include <vector>

#include "compiler/ir/bounds.h"
#include "compiler/ir/simplify.h"
#include "gtest/gtest.h"
#include "tests/compiler/ir/expr_test_util.h"

namespace kiln::ir {
namespace {

Expr Tid() { return ThreadIdx(0); }
Expr Xor(Expr a, Expr b) { return Binary(BinOp::kBitXor, std::move(a), std::move(b)); }

// Thread x in [0, 256), loop variables i in [0, 4) and ko in [0, 128).
BoundContext Context() {
  BoundContext ctx;
  ctx.SetThreadExtents({256});
  ctx.Push("i", {0, 3});
  ctx.Push("ko", {0, 127});
  return ctx;
}

TEST(BoundsTest, IntervalsOfIndexArithmetic) {
  const BoundContext ctx = Context();
  struct Case {
    std::string name;
    Expr e;
    std::optional<IntBounds> want;
  };
  const std::vector<Case> cases = {
      {"thread", Tid(), IntBounds{0, 255}},
      {"lane", FMod(Tid(), I(32)), IntBounds{0, 31}},
      {"warp", FDiv(Tid(), I(32)), IntBounds{0, 7}},
      {"affine", Add(Mul(V("i"), I(2048)), I(5)), IntBounds{5, 6149}},
      {"difference", Sub(V("i"), V("ko")), IntBounds{-127, 3}},
      {"xor", Xor(FMod(Tid(), I(8)), V("i")), IntBounds{0, 7}},
      {"mod of a range inside one period", FMod(Add(V("i"), I(8)), I(8)), IntBounds{0, 3}},
      {"min", Op(BinOp::kMin, V("i"), V("ko")), IntBounds{0, 3}},
      {"unknown variable", Add(V("n"), I(1)), std::nullopt},
      {"load", Load("A", DType::kInt32, {I(0)}), std::nullopt},
      {"overflow", Mul(Mul(V("ko"), I(1 << 20)), I(1 << 20)), std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(BoundsOf(c.e, ctx), c.want);
  }
}

TEST(BoundsTest, ContextScopesShadowAndPop) {
  BoundContext ctx;
  ctx.Push("i", {0, 9});
  ctx.Push("i", {0, 1});
  EXPECT_EQ(ctx.Var("i"), (IntBounds{0, 1}));
  ctx.Pop("i");
  EXPECT_EQ(ctx.Var("i"), (IntBounds{0, 9}));
  ctx.Pop("i");
  EXPECT_EQ(ctx.Var("i"), std::nullopt);
  EXPECT_EQ(ctx.Thread(0), std::nullopt);
}

// A branch taken by some threads only (a warp-specialized kernel's
// consumers, `if thread_idx(0) < 256` in a 384-thread block) narrows the
// thread index until it is popped; an empty range claims nothing.
TEST(BoundsTest, ThreadRangesOfABranchNarrowAndPop) {
  BoundContext ctx;
  ctx.SetThreadExtents({384});
  EXPECT_EQ(ctx.Thread(0), (IntBounds{0, 383}));
  ctx.PushThread(0, {0, 255});
  EXPECT_EQ(ctx.Thread(0), (IntBounds{0, 255}));
  ctx.PushThread(0, {256, 1000});
  EXPECT_EQ(ctx.Thread(0), (IntBounds{256, 383}));
  ctx.PushThread(0, {400, 500});
  EXPECT_EQ(ctx.Thread(0), std::nullopt);
  ctx.PopThread(0);
  ctx.PopThread(0);
  EXPECT_EQ(ctx.Thread(0), (IntBounds{0, 255}));
  ctx.PopThread(0);
  EXPECT_EQ(ctx.Thread(0), (IntBounds{0, 383}));
}

TEST(BoundsTest, RedundantOperationsDisappear) {
  const BoundContext ctx = Context();
  struct Case {
    std::string name;
    Expr input;
    Expr expected;
  };
  const Expr lane = FMod(Tid(), I(32));
  const std::vector<Case> cases = {
      {"mod of a value below the modulus", FMod(FDiv(lane, I(16)), I(8)), FDiv(lane, I(16))},
      {"div of a value below the divisor", FDiv(Mul(FDiv(lane, I(16)), I(8)), I(64)), I(0)},
      {"scaled mod", FDiv(FMod(Mul(Tid(), I(8)), I(64)), I(8)), FMod(Tid(), I(8))},
      {"scaled div", FDiv(Mul(Tid(), I(8)), I(64)), FDiv(Tid(), I(8))},
      {"nested mod", FMod(FMod(Tid(), I(32)), I(16)), FMod(Tid(), I(16))},
      {"stage of a two-step prologue", FMod(V("i"), I(8)), V("i")},
      {"split sum", FDiv(Add(Mul(V("ko"), I(64)), V("i")), I(64)), V("ko")},
      {"split sum mod", FMod(Add(Mul(V("ko"), I(64)), V("i")), I(64)), V("i")},
      {"decided bound check", Op(BinOp::kLt, V("i"), I(128)), B(true)},
      {"decided by the difference", Op(BinOp::kLt, V("ko"), Add(V("ko"), I(1))), B(true)},
      {"undecided stays", Op(BinOp::kLt, Add(V("ko"), I(2)), I(128)),
       Op(BinOp::kLt, Add(V("ko"), I(2)), I(128))},
      {"decided min", Op(BinOp::kMin, V("i"), I(16)), V("i")},
      {"decided select", Select(Op(BinOp::kGe, Tid(), I(0)), V("i"), V("ko")), V("i")},
      {"truncating div of a nonnegative value", Div(Mul(Tid(), I(8)), I(64)), Div(Tid(), I(8))},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Expr got = NoLoc(SimplifyWithBounds(c.input, ctx));
    const Expr want = NoLoc(Simplify(c.expected));
    EXPECT_EQ(got, want) << "got " << Str(got) << "\nwant " << Str(want);
  }
}

TEST(BoundsTest, UnknownBoundsChangeNothingBeyondSimplify) {
  const BoundContext none;
  const Expr e = FMod(FDiv(FMod(V("t"), I(32)), I(16)), I(8));
  EXPECT_EQ(NoLoc(SimplifyWithBounds(e, none)), NoLoc(Simplify(e)));
}

// Random index expressions over bounded variables keep their value on every
// sample inside the bounds.
Expr RandomBoundedExpr(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> pick(0, 99);
  if (depth == 0 || pick(rng) < 20) {
    const int r = pick(rng);
    if (r < 30) return Tid();
    if (r < 50) return V("i");
    if (r < 70) return V("ko");
    return I(pick(rng) % 70 - 6);
  }
  static const BinOp kOps[] = {BinOp::kAdd,      BinOp::kSub,      BinOp::kMul,
                               BinOp::kMul,      BinOp::kFloorDiv, BinOp::kFloorDiv,
                               BinOp::kFloorMod, BinOp::kFloorMod, BinOp::kDiv,
                               BinOp::kMin,      BinOp::kMax,      BinOp::kBitXor};
  const int r = pick(rng);
  if (r < 8) {
    static const BinOp kCmp[] = {BinOp::kLt, BinOp::kLe, BinOp::kGt,
                                 BinOp::kGe, BinOp::kEq, BinOp::kNe};
    return Select(Binary(kCmp[pick(rng) % 6], RandomBoundedExpr(rng, depth - 1),
                         RandomBoundedExpr(rng, depth - 1)),
                  RandomBoundedExpr(rng, depth - 1), RandomBoundedExpr(rng, depth - 1));
  }
  const BinOp op = kOps[pick(rng) % 12];
  Expr b = RandomBoundedExpr(rng, depth - 1);
  if (op == BinOp::kFloorDiv || op == BinOp::kFloorMod || op == BinOp::kDiv) {
    static const int kDivisors[] = {1, 2, 3, 4, 8, 16, 32, 64, 128, 7};
    b = I(kDivisors[pick(rng) % 10]);
  }
  if (op == BinOp::kMul && pick(rng) < 70) b = I(pick(rng) % 2 ? 8 : 64);
  return Binary(op, RandomBoundedExpr(rng, depth - 1), std::move(b));
}

TEST(BoundsTest, RandomExpressionsKeepTheirValueInsideTheBounds) {
  const BoundContext ctx = Context();
  std::mt19937 rng(2026);
  std::uniform_int_distribution<int64_t> tid(0, 255), i(0, 3), ko(0, 127);
  int compared = 0;
  int changed = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    const Expr e = RandomBoundedExpr(rng, 4);
    const Expr s = SimplifyWithBounds(e, ctx);
    if (NoLoc(s) != NoLoc(Simplify(e))) ++changed;
    for (int sample = 0; sample < 12; ++sample) {
      Eval before, after;
      before.env = {{"tid0", tid(rng)}, {"i", i(rng)}, {"ko", ko(rng)}};
      after.env = before.env;
      const int64_t want = before(e);
      const int64_t got = after(s);
      if (!before.ok) continue;
      ASSERT_TRUE(after.ok) << Str(e) << " -> " << Str(s);
      ++compared;
      ASSERT_EQ(got, want) << "input: " << Str(e) << "\nsimplified: " << Str(s)
                           << "\ntid=" << before.env["tid0"] << " i=" << before.env["i"]
                           << " ko=" << before.env["ko"];
    }
  }
  EXPECT_GT(compared, 20000);
  EXPECT_GT(changed, 400); // the bounds actually do something
}

} // namespace
} // namespace kiln::ir
