// Fragment layouts: the (thread, register) -> element maps that every
// lowering decision rests on, checked by evaluating their index expressions
// for every thread and register.
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/passes/layout.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

// Evaluates an index expression over `tid` (thread_idx(0)) and `r` (the
// integer and boolean operators layouts produce).
int64_t Eval(const ir::Expr& e, int64_t tid, int64_t reg) {
  switch (e.kind) {
  case ir::ExprKind::kInt:
    return e.ival;
  case ir::ExprKind::kThreadIdx:
    return tid;
  case ir::ExprKind::kVar:
    EXPECT_EQ(e.name, "r");
    return reg;
  case ir::ExprKind::kCast:
    return Eval(e.args[0], tid, reg);
  case ir::ExprKind::kBinary: {
    const int64_t a = Eval(e.args[0], tid, reg), b = Eval(e.args[1], tid, reg);
    switch (e.bop) {
    case ir::BinOp::kAdd:
      return a + b;
    case ir::BinOp::kSub:
      return a - b;
    case ir::BinOp::kMul:
      return a * b;
    case ir::BinOp::kFloorDiv:
      return a >= 0 ? a / b : -((-a + b - 1) / b);
    case ir::BinOp::kFloorMod:
      return ((a % b) + b) % b;
    case ir::BinOp::kLt:
      return a < b;
    case ir::BinOp::kEq:
      return a == b;
    case ir::BinOp::kAnd:
      return a && b;
    default:
      break;
    }
    break;
  }
  default:
    break;
  }
  ADD_FAILURE() << "unexpected expression in a layout";
  return -1;
}

// Checks that `layout` covers every element of its shape, that replicas
// hold the same elements, and that RegisterOf inverts ElementIndex.
void CheckCovers(const FragmentLayout& layout) {
  SCOPED_TRACE(layout.ToString());
  const ir::Expr tid = ir::ThreadIdx(0);
  const ir::Expr reg = ir::VarRef("r");
  const std::vector<ir::Expr> index = ElementIndex(layout, tid, reg);
  const ir::Expr in = InBounds(layout, index);
  const ir::Expr back = RegisterOf(layout, index);
  const ir::Expr first = IsFirstReplica(layout, tid);
  std::map<std::vector<int64_t>, int> owners; // element -> first replicas holding it
  for (int64_t t = 0; t < layout.NumThreads(); ++t) {
    for (int64_t r = 0; r < layout.NumRegs(); ++r) {
      std::vector<int64_t> at;
      for (const ir::Expr& e : index) at.push_back(Eval(e, t, r));
      if (Eval(in, t, r) == 0) continue; // padding
      for (size_t d = 0; d < at.size(); ++d) {
        ASSERT_GE(at[d], 0);
        ASSERT_LT(at[d], layout.shape[d]);
      }
      EXPECT_EQ(Eval(back, t, r), r) << "thread " << t;
      if (Eval(first, t, r) != 0) ++owners[at];
    }
  }
  int64_t elements = 1;
  for (int64_t s : layout.shape) elements *= s;
  EXPECT_EQ(static_cast<int64_t>(owners.size()), elements) << "some element has no owner";
  for (const auto& [element, count] : owners) EXPECT_EQ(count, 1) << "two first replicas";
}

TEST(Layout, MmaAccumulatorMatchesThePtxTable) {
  // One warp, one 16x8 atom: lane l register k holds row l/4 + 8*(k/2),
  // column 2*(l%4) + k%2 (PTX ISA, mma.m16n8k16 C/D fragment).
  const FragmentLayout layout = MmaAccumulatorLayout(16, 8, 1, 1, 32);
  const std::vector<ir::Expr> index = ElementIndex(layout, ir::ThreadIdx(0), ir::VarRef("r"));
  for (int l = 0; l < 32; ++l) {
    for (int k = 0; k < 4; ++k) {
      SCOPED_TRACE(testing::Message() << "lane " << l << " reg " << k);
      EXPECT_EQ(Eval(index[0], l, k), l / 4 + 8 * (k / 2));
      EXPECT_EQ(Eval(index[1], l, k), 2 * (l % 4) + k % 2);
    }
  }
  CheckCovers(layout);
}

TEST(Layout, MmaAccumulatorOverAWarpGrid) {
  for (auto [m, n, wm, wn, threads] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>>{
           {64, 32, 4, 1, 128}, {128, 256, 2, 4, 256}, {64, 64, 2, 2, 128}, {32, 16, 1, 1, 64}}) {
    SCOPED_TRACE(testing::Message() << m << "x" << n << " warps " << wm << "x" << wn);
    const FragmentLayout layout = MmaAccumulatorLayout(m, n, wm, wn, threads);
    EXPECT_EQ(layout.NumRegs(), m * n * (threads / (32 * wm * wn)) / threads);
    CheckCovers(layout);
  }
}

TEST(Layout, MmaOperandAMatchesThePtxTables) {
  // One warp, one k-step, the A fragment registers in the instruction's
  // order (PTX ISA): m16n8k8 tf32: register r holds row l/4 + 8*(r%2),
  // column l%4 + 4*(r/2); m16n8k32 s8: element e (register e/4, byte e%4)
  // holds row l/4 + 8*((e/4)%2), column 4*(l%4) + e%4 + 16*(e/8); 16-bit
  // inputs are the accumulator layout of (16 x 16).
  const FragmentLayout tf32 = MmaOperandALayout(16, 8, 1, 32, 32);
  const FragmentLayout s8 = MmaOperandALayout(16, 32, 1, 32, 8);
  const std::vector<ir::Expr> it = ElementIndex(tf32, ir::ThreadIdx(0), ir::VarRef("r"));
  const std::vector<ir::Expr> is = ElementIndex(s8, ir::ThreadIdx(0), ir::VarRef("r"));
  for (int l = 0; l < 32; ++l) {
    for (int r = 0; r < 4; ++r) {
      SCOPED_TRACE(testing::Message() << "lane " << l << " tf32 reg " << r);
      EXPECT_EQ(Eval(it[0], l, r), l / 4 + 8 * (r % 2));
      EXPECT_EQ(Eval(it[1], l, r), l % 4 + 4 * (r / 2));
    }
    for (int e = 0; e < 16; ++e) {
      SCOPED_TRACE(testing::Message() << "lane " << l << " s8 element " << e);
      EXPECT_EQ(Eval(is[0], l, e), l / 4 + 8 * ((e / 4) % 2));
      EXPECT_EQ(Eval(is[1], l, e), 4 * (l % 4) + e % 4 + 16 * (e / 8));
    }
  }
  EXPECT_EQ(MmaOperandALayout(64, 32, 2, 128, 16), MmaAccumulatorLayout(64, 32, 2, 1, 128));
  // Over warps and k-steps: every element held, the warps along N replicating.
  for (auto [m, k, wm, threads, bits] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, int>>{
           {64, 32, 4, 128, 32}, {64, 64, 2, 128, 8}, {32, 24, 1, 64, 32}, {128, 96, 2, 256, 8}}) {
    SCOPED_TRACE(testing::Message() << m << "x" << k << " warps_m " << wm << " bits " << bits);
    const FragmentLayout layout = MmaOperandALayout(m, k, wm, threads, bits);
    EXPECT_EQ(layout.NumRegs(), m * k / (32 * wm));
    CheckCovers(layout);
  }
}

TEST(Layout, DefaultLayoutsCoverTheirShapes) {
  for (const auto& [shape, threads, vector] :
       std::vector<std::tuple<std::vector<int64_t>, int64_t, int64_t>>{
           {{4, 128}, 128, 4},
           {{1, 8192}, 128, 8},
           {{64}, 128, 4},
           {{100}, 128, 1},  // padded
           {{3, 40}, 64, 4}, // 40 is not a multiple of 64 threads
           {{2, 4096}, 128, 4},
           {{16, 512}, 128, 8}}) {
    SCOPED_TRACE(testing::Message() << shape.size() << "-d, " << threads << " threads");
    CheckCovers(DefaultLayout(shape, threads, vector));
    CheckCovers(DefaultLayout(shape, threads, vector, /*row_warps=*/false));
  }
}

TEST(Layout, RowWarpsKeepRowsInsideAWarp) {
  // (4, 128) over 4 warps: a warp per row, 4-element vectors per lane.
  const FragmentLayout layout = DefaultLayout({4, 128}, 128, 4);
  EXPECT_EQ(layout.ToString(), "threads(1:32@4 0:4@1) regs(1:4@1)");
  // Without: the threads run along the row first.
  EXPECT_EQ(DefaultLayout({4, 128}, 128, 4, false).ToString(), "threads(1:32@4 0:4@1) regs(1:4@1)");
  EXPECT_EQ(DefaultLayout({4, 1024}, 128, 4, false).ToString(),
            "threads(1:128@4) regs(1:4@1 1:2@512 0:4@1)");
  EXPECT_EQ(DefaultLayout({4, 1024}, 128, 4).ToString(),
            "threads(1:32@4 0:4@1) regs(1:4@1 1:8@128)");
}

TEST(Layout, ProjectionDropsADimension) {
  const FragmentLayout acc = MmaAccumulatorLayout(64, 32, 4, 1, 128);
  const FragmentLayout rows = Project(acc, {0}, {64});
  // The row of every register is kept; the four lanes of a quad replicate it.
  EXPECT_EQ(rows.ToString(), "threads(-:4 0:8@1 0:4@16) regs(0:2@8)");
  EXPECT_TRUE(rows.HasReplication());
  CheckCovers(rows);
  CheckCovers(Project(acc, {1}, {32}));
  CheckCovers(Project(DefaultLayout({8, 64}, 128, 4), {1}, {64}));
}

TEST(Layout, TextRoundTrips) {
  for (const FragmentLayout& layout :
       {MmaAccumulatorLayout(128, 128, 2, 2, 128), DefaultLayout({4, 128}, 128, 4),
        Project(MmaAccumulatorLayout(64, 32, 4, 1, 128), {0}, {64})}) {
    absl::StatusOr<FragmentLayout> parsed = ParseLayout(layout.ToString(), layout.shape);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, layout);
  }
}

TEST(Layout, BadTextIsAnError) {
  for (const char* text : {"", "threads() regs", "threads(1:4) regs()", "threads(x:4@1) regs()",
                           "threads(-:4@1) regs()", "threads(0:0@1) regs()",
                           "threads(2:4@1) regs()", "threads(0:4@1) regs(-:2)"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(ParseLayout(text, {8, 8}).ok());
  }
}

} // namespace
} // namespace kiln::passes
