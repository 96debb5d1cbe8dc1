// T.Layout(shape, fn) and T.annotate_layout on tensor parameters
// (compiler/frontend/layout_fn.cc), and lambda values.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/frontend_compile.h"

namespace kiln::frontend {
namespace {

using testing::Compile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MustCompile;

// The attention-backward pattern: a helper builds the layout from the
// tensor's shape, the kernel annotates the tensor and adds into it.
constexpr char kDq[] = R"(import tilelang
import tilelang.language as T


def make_dq_layout(dQ):
    return T.Layout(dQ.shape, lambda b, l, h, d: [b, l // 8, h, d // 8, (d % 2), 4 * (l % 8) + (d % 8) // 2])


def bwd(B, L, H, D):
    @T.prim_func
    def main(X: T.Tensor((B, L, H, D), "float32"), dQ: T.Tensor((B, L, H, D), "float32")):
        with T.Kernel(H, B, threads=128) as (bx, bz):
            acc = T.alloc_fragment((L, D), "float32")
            T.annotate_layout({dQ: make_dq_layout(dQ)})
            T.copy(X[bz, :, bx, :], acc)
            T.atomic_add(dQ[bz, :, bx, :], acc)

    return main
)";

TEST(IndexLayoutTest, AnnotatedTensorParameterCarriesTheLayout) {
  ir::Program p = MustCompile(kDq, {{"B", "2"}, {"L", "16"}, {"H", "2"}, {"D", "16"}});
  ASSERT_EQ(p.params.size(), 2u);
  EXPECT_FALSE(p.params[0].buffer.index_layout.has_value());
  ASSERT_TRUE(p.params[1].buffer.index_layout.has_value());
  const ir::IndexLayout& l = *p.params[1].buffer.index_layout;
  EXPECT_THAT(l.vars, ElementsAre("b", "l", "h", "d"));
  std::vector<std::string> fwd;
  for (const ir::Expr& e : l.forward) fwd.push_back(ir::PrintExpr(e));
  EXPECT_THAT(fwd, ElementsAre("b", "l // 8", "h", "d // 8", "d % 2", "d % 8 // 2 + l % 8 * 4"));
  EXPECT_EQ(l.loc.line, 6);
  EXPECT_EQ(l.loc.col, 12);
  // No statement is left in the body for it.
  for (const ir::Stmt& s : p.kernel.body) EXPECT_NE(s.kind, ir::StmtKind::kAnnotateLayout);
}

TEST(IndexLayoutTest, IdentityLambdaWithStarArgsAndDefs) {
  ir::Program p = MustCompile(R"(import tilelang.language as T

def swap(i, j):
    return j, i

@T.prim_func
def f(A: T.Tensor((8, 4), "float32"), B: T.Tensor((4, 8), "float32")):
    with T.Kernel(1, threads=32):
        T.annotate_layout({A: T.Layout(A.shape, lambda *args: args), B: T.Layout([4, 8], swap)})
        for i, j in T.Parallel(8, 4):
            B[j, i] = A[i, j]
)");
  ASSERT_TRUE(p.params[0].buffer.index_layout.has_value());
  EXPECT_THAT(p.params[0].buffer.index_layout->vars, ElementsAre("i0", "i1"));
  EXPECT_EQ(ir::PrintExpr(p.params[1].buffer.index_layout->forward[0]), "j");
}

TEST(IndexLayoutTest, LambdaIsAValue) {
  ir::Program p = MustCompile(R"(import tilelang.language as T

scale = lambda x, k=3: x * k

@T.prim_func
def f(A: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=32):
        T.fill(A, scale(2) + (lambda: 1)())
)");
  EXPECT_EQ(ir::PrintExpr(p.kernel.body[0].value), "7.0");
}

TEST(IndexLayoutTest, LocatedErrors) {
  struct Case {
    std::string body;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"s = T.alloc_shared((8, 8), \"float32\")\n        "
       "T.annotate_layout({s: T.Layout(s.shape, lambda i, j: [j, i])})",
       "t.py:6:27: T.Layout on shared buffer 's' is not supported yet"},
      {"T.annotate_layout({A: T.Layout(A.shape, lambda i, j: [i, j * 2])})",
       "t.py:5:31: T.Layout: the layout of 'A' maps into 120 elements but the tensor holds 64"},
      {"T.annotate_layout({A: T.Layout(A.shape, lambda i, j: [i - j])})",
       "t.py:5:31: T.Layout: the output index i - j may be negative (down to -7)"},
      {"T.annotate_layout({A: T.Layout((8, 4), lambda i, j: [i, j])})",
       "t.py:5:27: the T.Layout made at line 5 is for another shape than 'A' [8, 8]"},
      {"T.annotate_layout({A: T.Layout(A.shape, lambda i, j: [i] * 9)})",
       "t.py:5:31: T.Layout: the function must return 1 to 8 indices, got 9"},
      {"T.Layout([2] * 9, lambda *a: a)", "t.py:5:18: T.Layout takes at most 8 dimensions, got 9"},
      {"T.annotate_layout({A: T.Layout(A.shape, 3)})",
       "t.py:5:49: T.Layout expects a function of the indices (a lambda or a def), got int"},
      {"T.annotate_layout({A: T.Layout(A.shape, lambda i, j: [i, 0.5])})",
       "t.py:5:31: T.Layout: the function must return integer indices, got float"},
      {"T.annotate_layout({A: T.Layout(A.shape, lambda i, j: [i, j]), "
       "B: T.Layout(B.shape, lambda i, j: [j, i])})\n        "
       "T.annotate_layout({A: T.Layout(A.shape, lambda i, j: [j, i])})",
       "t.py:6:27: 'A' already has another T.Layout (from line 5)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    const std::string src = absl::StrCat(R"(import tilelang.language as T
@T.prim_func
def f(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
    with T.Kernel(1, threads=32):
        )",
                                         c.body, "\n");
    absl::StatusOr<ir::Program> p = Compile(src);
    ASSERT_FALSE(p.ok());
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(c.error));
  }
}

} // namespace
} // namespace kiln::frontend
