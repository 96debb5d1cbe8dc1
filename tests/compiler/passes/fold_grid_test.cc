// compiler/passes/fold_grid.h: a grid of more than 65535 blocks along y or z
// becomes one whose x holds them, with each block's indices recovered from
// it; grids CUDA launches as they are stay unchanged; what cannot be folded
// (a rasterized or clustered kernel, an x extent past 2**31 - 1) is a located
// error. The results are checked against ref_program by the ctests
// cpu/programs/tall_grid_{y,z} and gpu/programs/tall_grid_{y,z}.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/simplify.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/fold_grid.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A kernel over a grid of `grid` (the T.Kernel extents, as Python text),
// optionally rasterized with T.use_swizzle.
ir::Program Program(const std::string& grid, const std::string& vars, bool swizzle = false) {
  const std::string source = absl::StrCat("import tilelang\nimport tilelang.language as T\n\n\n"
                                          "@tilelang.jit\ndef k(X):\n"
                                          "    X: T.Tensor((16, 16), T.float32)\n"
                                          "    with T.Kernel(",
                                          grid, ", threads=32) as (", vars, "):\n",
                                          swizzle ? "        T.use_swizzle(panel_size=8)\n" : "",
                                          "        for j in T.Parallel(16):\n"
                                          "            X[0, j] = X[0, j] + ",
                                          vars.substr(vars.rfind(' ') + 1), "\n\n    return X\n");
  frontend::FrontendOptions o;
  o.file_name = "tall.py";
  absl::StatusOr<ir::Program> p = frontend::CompileSource(source, o);
  EXPECT_TRUE(p.ok()) << p.status() << "\n" << source;
  return p.ok() ? *p : ir::Program();
}

std::string Grid(const ir::Program& p) {
  std::string out;
  for (const ir::Expr& g : p.kernel.grid) {
    absl::StrAppend(&out, out.empty() ? "" : " ", *ir::ConstInt(ir::Simplify(g)));
  }
  return out;
}

TEST(FoldGrid, TallYFoldsIntoX) {
  ir::Program p = Program("3, 70000", "bx, by");
  ASSERT_TRUE(FoldGrid(p, 1).ok());
  ASSERT_TRUE(ir::Verify(p).ok()) << ir::Verify(p) << ir::PrintProgram(p);
  EXPECT_EQ(Grid(p), "210000 1 1");
  const std::string text = ir::PrintProgram(p);
  EXPECT_THAT(text, HasSubstr("as (kiln_folded_block, by, "));
  // by is the x index over 3; the last folded dimension needs no modulo.
  EXPECT_THAT(text, HasSubstr("kiln_folded_block // 3"));
  EXPECT_THAT(text, Not(HasSubstr("kiln_folded_block // 3 %")));
}

TEST(FoldGrid, TallZFoldsIntoXAndYStays) {
  ir::Program p = Program("3, 2, 70000", "bx, by, bz");
  ASSERT_TRUE(FoldGrid(p, 1).ok());
  ASSERT_TRUE(ir::Verify(p).ok()) << ir::Verify(p) << ir::PrintProgram(p);
  EXPECT_EQ(Grid(p), "210000 2 1");
  EXPECT_THAT(ir::PrintProgram(p), HasSubstr("kiln_folded_block // 3"));
}

// Both tall: 65536 * 65536 blocks already pass x's limit.
TEST(FoldGrid, BothTallIsMoreThanXHolds) {
  ir::Program p = Program("1, 65536, 65536", "bx, by, bz");
  EXPECT_THAT(FoldGrid(p, 1).message(), HasSubstr("4294967296 passes CUDA's 2147483647"));
}

TEST(FoldGrid, LaunchableGridsStayAsTheyAre) {
  for (const char* grid : {"3, 65535", "100000, 4", "3, 2, 65535"}) {
    SCOPED_TRACE(grid);
    const std::string vars = std::string(grid).size() > 9 ? "bx, by, bz" : "bx, by";
    ir::Program p = Program(grid, vars);
    const ir::Program before = p;
    ASSERT_TRUE(FoldGrid(p, 1).ok());
    EXPECT_TRUE(p == before);
  }
}

TEST(FoldGrid, RefusesWhatItCannotFold) {
  {
    ir::Program p = Program("3, 70000", "bx, by", /*swizzle=*/true);
    const absl::Status s = FoldGrid(p, 1);
    EXPECT_THAT(s.message(), HasSubstr("tall.py:8:"));
    EXPECT_THAT(s.message(), HasSubstr("T.use_swizzle"));
  }
  {
    ir::Program p = Program("4, 70000", "bx, by");
    EXPECT_THAT(FoldGrid(p, 2).message(), HasSubstr("cluster=2"));
  }
  {
    ir::Program p = Program("40000, 70000", "bx, by");
    EXPECT_THAT(FoldGrid(p, 1).message(), HasSubstr("2800000000 passes CUDA's 2147483647"));
  }
}

// LowerAndEmit folds before lowering: the emitted launch is the folded grid,
// for the CPU and for sm_90.
TEST(FoldGrid, LowerAndEmitLaunchesTheFoldedGrid) {
  const ir::Program p = Program("3, 70000", "bx, by");
  for (const char* target : {"cpu", "cuda:sm_90"}) {
    SCOPED_TRACE(target);
    absl::StatusOr<codegen::EmittedKernel> k = codegen::LowerAndEmit(p, target, {});
    ASSERT_TRUE(k.ok()) << k.status();
    ASSERT_EQ(k->launch.grid.size(), 3u);
    EXPECT_EQ(ir::ConstInt(ir::Simplify(k->launch.grid[0])), 210000);
    EXPECT_EQ(ir::ConstInt(ir::Simplify(k->launch.grid[1])), 1);
  }
}

} // namespace
} // namespace kiln::passes
