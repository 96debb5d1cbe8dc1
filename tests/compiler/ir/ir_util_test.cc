#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/text_parser.h"
#include "gtest/gtest.h"

namespace kiln::ir {
namespace {

constexpr char kProgram[] = R"(program @t {
  sym n: int32
  param A: global float32[n, 4]
  kernel grid(n + 1) threads(32) as (bx) {
    alloc s: shared float32[4]
    alloc v: var int32[1] = bx
    copy A[bx +: 1, 0 +: 4] -> s[0 +: 4]
    for i in serial(n) {
      if i < 2 {
        s[i] = -(A[bx, i])
      } else {
        fill s[0 +: 4], 1.0
      }
    }
    atomic_add s[0 +: 1], 2.0
    use_swizzle panel=4 order=row enable=true
  }
}
)";

Program ParseOrDie(const std::string& text) {
  absl::StatusOr<Program> p = ParseProgramText(text, "t.kir");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Program{};
}

TEST(IrUtilTest, ForEachStmtIsPreOrderThroughBothBranches) {
  Program p = ParseOrDie(kProgram);
  std::vector<StmtKind> kinds;
  ForEachStmt(p.kernel.body, [&](const Stmt& s) { kinds.push_back(s.kind); });
  EXPECT_EQ(kinds,
            (std::vector<StmtKind>{StmtKind::kAlloc, StmtKind::kAlloc, StmtKind::kCopy,
                                   StmtKind::kFor, StmtKind::kIf, StmtKind::kStore, StmtKind::kFill,
                                   StmtKind::kAtomic, StmtKind::kUseSwizzle}));
}

TEST(IrUtilTest, ForEachExprVisitsEveryExpressionPreOrder) {
  Program p = ParseOrDie(kProgram);
  std::vector<std::string> seen;
  ForEachExpr(p, [&](const Expr& e) { seen.push_back(PrintExpr(e)); });
  EXPECT_EQ(seen, (std::vector<std::string>{// param shape, grid
                                            "n", "4", "n + 1", "n", "1",
                                            // alloc shapes and init
                                            "4", "1", "bx",
                                            // copy regions
                                            "bx", "1", "0", "4", "0", "4",
                                            // loop extent, if condition
                                            "n", "i < 2", "i", "2",
                                            // store: indices, then value
                                            "i", "-(A[bx, i])", "A[bx, i]", "bx", "i",
                                            // fill, atomic
                                            "0", "4", "1.0", "0", "1", "2.0"}));
}

TEST(IrUtilTest, ForEachExprVisitsCallArguments) {
  Program p = ParseOrDie(R"(program @t {
  param A: global float32[64]
  kernel grid(1) threads(32) as (bx) {
    alloc s: shared float32[64]
    call cp_async_4(&s[bx + 1], &A[bx], 4)
  }
}
)");
  std::vector<std::string> seen;
  ForEachExpr(p, [&](const Expr& e) { seen.push_back(PrintExpr(e)); });
  EXPECT_EQ(seen, (std::vector<std::string>{"64", "1", "64", "&s[bx + 1]", "bx + 1", "bx", "1",
                                            "&A[bx]", "bx", "4"}));
  RewriteExprs(&p, [](Expr e) {
    if (e.kind == ExprKind::kVar) return IntImm(2, DType::kInt32, e.loc);
    return e;
  });
  EXPECT_NE(PrintProgram(p).find("call cp_async_4(&s[2 + 1], &A[2], 4)\n"), std::string::npos)
      << PrintProgram(p);
}

TEST(IrUtilTest, RewriteExprsIsBottomUp) {
  Program p = ParseOrDie(kProgram);
  std::vector<std::string> order;
  RewriteExprs(&p, [&](Expr e) {
    order.push_back(PrintExpr(e));
    if (e.kind == ExprKind::kVar && e.name == "n") return IntImm(64, DType::kInt32, e.loc);
    // Children are already rewritten, so `n + 1` arrives as `64 + 1`.
    if (e.kind == ExprKind::kBinary && e.bop == BinOp::kAdd && e.args[0].kind == ExprKind::kInt &&
        e.args[1].kind == ExprKind::kInt) {
      return IntImm(e.args[0].ival + e.args[1].ival, e.dtype, e.loc);
    }
    return e;
  });
  EXPECT_EQ(std::vector<std::string>(order.begin(), order.begin() + 5),
            (std::vector<std::string>{"n", "4", "n", "1", "64 + 1"}));
  EXPECT_EQ(PrintProgram(p), "program @t {\n"
                             "  sym n: int32\n"
                             "  param A: global float32[64, 4]\n"
                             "  kernel grid(65) threads(32) as (bx) {\n"
                             "    alloc s: shared float32[4]\n"
                             "    alloc v: var int32[1] = bx\n"
                             "    copy A[bx +: 1, 0 +: 4] -> s[0 +: 4]\n"
                             "    for i in serial(64) {\n"
                             "      if i < 2 {\n"
                             "        s[i] = -(A[bx, i])\n"
                             "      } else {\n"
                             "        fill s[0 +: 4], 1.0\n"
                             "      }\n"
                             "    }\n"
                             "    atomic_add s[0 +: 1], 2.0\n"
                             "    use_swizzle panel=4 order=row enable=true\n"
                             "  }\n"
                             "}\n");
}

TEST(IrUtilTest, RewriteExprSingleTree) {
  Expr e = Binary(BinOp::kMul, VarRef("x"), Binary(BinOp::kAdd, VarRef("x"), IntImm(1)));
  int calls = 0;
  RewriteExpr(&e, [&](Expr x) {
    ++calls;
    if (x.kind == ExprKind::kVar) return VarRef("y");
    return x;
  });
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(PrintExpr(e), "y * (y + 1)");
}

TEST(IrUtilTest, StripLocationsClearsEveryLocation) {
  Program p = ParseOrDie(kProgram); // statements carry positions in the text
  ASSERT_EQ(p.kernel.body[2].loc, (Loc{7, 5}));
  // Locations on fields a statement kind does not use are cleared too, so
  // that == after stripping compares structure only.
  p.kernel.body[3].cond.loc = {3, 3};
  p.kernel.body[3].buffer.loc = {4, 4};
  StripLocations(&p);
  ForEachExpr(p, [](const Expr& e) { EXPECT_EQ(e.loc, Loc{}); });
  ForEachStmt(p.kernel.body, [](const Stmt& s) {
    EXPECT_EQ(s.loc, Loc{});
    EXPECT_EQ(s.buffer.loc, Loc{});
    EXPECT_EQ(s.cond.loc, Loc{});
    for (const Region& r : s.regions) EXPECT_EQ(r.loc, Loc{});
  });
  EXPECT_EQ(p.kernel.loc, Loc{});
  EXPECT_EQ(p.symbols[0].loc, Loc{});
  EXPECT_EQ(p.params[0].buffer.loc, Loc{});
  std::string text = PrintProgram(p, PrintOptions{.locations = true});
  EXPECT_EQ(text.find('@', 10), std::string::npos) << text;
  EXPECT_NE(text.find("copy A[bx +: 1, 0 +: 4] -> s[0 +: 4] loc(0:0)\n"), std::string::npos);
}

} // namespace
} // namespace kiln::ir
