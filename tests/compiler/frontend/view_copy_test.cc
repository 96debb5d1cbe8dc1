// T.Tensor over another tensor's storage (x.data) and T.im2col (issue 30:
// TileLang's convolution example): how a tile copy through a reshaped global
// view is rewritten (a copy of the tensor's own rectangle where one exists,
// else an element-wise loop with bounds checks), the im2col loop, and the
// located errors. Running them is tests/programs/global_view_copy.py,
// im2col_stride_dilation.py and cpu/tilelang/convolution*.
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/frontend_compile.h"

namespace kiln::frontend {
namespace {

using testing::Compile;
using ::testing::HasSubstr;
using testing::MustCompile;
using ::testing::Not;

std::string ErrorOf(const std::string& src) {
  absl::StatusOr<ir::Program> p = Compile(src);
  EXPECT_FALSE(p.ok()) << ir::PrintProgram(*p);
  return p.ok() ? "" : std::string(p.status().message());
}

// A kernel over A (3, 3, C, 8) and an output O (2, 4, 6, 8) with `body` in
// its T.Kernel block (8 spaces of indent); C is 16 unless given.
std::string Program(const std::string& body, int c = 16) {
  return absl::StrCat("import tilelang\nimport tilelang.language as T\n\n\n@tilelang.jit\n"
                      "def f(A):\n    A: T.Tensor((3, 3, ",
                      c,
                      ", 8), T.float16)\n"
                      "    O = T.empty((2, 4, 6, 8), T.float16)\n"
                      "    with T.Kernel(4, threads=128) as bx:\n"
                      "        s = T.alloc_shared((16, 8), T.float16)\n",
                      body, "    return O\n");
}

TEST(ViewCopy, RectangleOfTheTensor) {
  // 16-row tiles of the (9 C, 8) view: C = 16 rows of one (kh, kw) each.
  ir::Program p = MustCompile(Program("        a = T.Tensor((9 * 16, 8), T.float16, A.data)\n"
                                      "        o = T.Tensor((48, 8), T.float16, O.data)\n"
                                      "        T.copy(a[bx * 16, 0], s)\n"
                                      "        T.copy(s, o[bx * 12 : bx * 12 + 16, :])\n"));
  const std::string text = ir::PrintProgram(p);
  EXPECT_THAT(text, HasSubstr("copy A[bx // 3 +: 1, bx % 3 +: 1, 0 +: 16, 0 +: 8] -> "
                              "s[0 +: 16, 0 +: 8]"));
  // 16 rows from bx * 12 are no rectangle of O (rows of 6): element-wise,
  // stores past the view's 48 rows dropped.
  EXPECT_THAT(text, HasSubstr("if bx * 12 + i < 48"));
  EXPECT_THAT(text, HasSubstr("O[(bx * 12 + i) // 6 // 4, (bx * 12 + i) // 6 % 4, "
                              "(bx * 12 + i) % 6, 0 + i_1] = s["));
  // The view never reaches the IR: only A and O are parameters.
  EXPECT_EQ(p.params.size(), 2u);
  // The storage is a value like any other: it can be named first.
  EXPECT_EQ(text, ir::PrintProgram(
                      MustCompile(Program("        d = A.data\n"
                                          "        a = T.Tensor((9 * 16, 8), T.float16, data=d)\n"
                                          "        o = T.Tensor((48, 8), T.float16, O.data)\n"
                                          "        T.copy(a[bx * 16, 0], s)\n"
                                          "        T.copy(s, o[bx * 12 : bx * 12 + 16, :])\n"))));
}

TEST(ViewCopy, ElementwiseWhenTheTileStraddlesRows) {
  // C = 12: a 16-row tile crosses from one (kh, kw) to the next; reads past
  // the view's end are zeros.
  ir::Program p = MustCompile(Program("        a = T.Tensor((9 * 12, 8), T.float16, A.data)\n"
                                      "        T.copy(a[bx * 16, 0], s)\n",
                                      12));
  const std::string text = ir::PrintProgram(p);
  EXPECT_THAT(text, Not(HasSubstr("copy A[")));
  EXPECT_THAT(text, HasSubstr("select(bx * 16 + i < 108"));
  EXPECT_THAT(text, HasSubstr("A[(bx * 16 + i) // 12 // 3, (bx * 16 + i) // 12 % 3, "
                              "(bx * 16 + i) % 12, 0 + i_1], float16(0.0))"));
}

TEST(ViewCopy, Errors) {
  EXPECT_THAT(ErrorOf(Program("        a = T.Tensor((9 * 16, 8), T.float32, A.data)\n")),
              HasSubstr("t.py:11:13: T.Tensor() as float32 of 'A' (float16) reinterprets its "
                        "bytes, which Kiln does not support yet"));
  EXPECT_THAT(ErrorOf(Program("        a = T.Tensor((9 * 16, 9), T.float16, A.data)\n")),
              HasSubstr("t.py:11:13: T.Tensor(): shape [144, 9] does not hold the same number of "
                        "elements as 'A' [3, 3, 16, 8]"));
  EXPECT_THAT(ErrorOf(Program("        a = T.Tensor((9 * 16, 8), T.float16, A)\n")),
              HasSubstr("t.py:11:46: T.Tensor() data must be another buffer's storage (x.data), "
                        "got buffer"));
  EXPECT_THAT(ErrorOf(Program("        a = T.Tensor((128,), T.float16, s.data)\n")),
              HasSubstr("t.py:11:41: T.Tensor() over the storage of 's' is supported for tensor "
                        "parameters and outputs only; use T.view for other buffers"));
  EXPECT_THAT(ErrorOf(Program("        a = A.data + 1\n")),
              HasSubstr("t.py:11:13: unsupported operand types for +: 'unsupported object' and "
                        "'int'"));
}

// im2col of a (2, 5, 5, 3) image, 3 x 3 kernel, stride 2, dilation 1, pad 1.
std::string Im2col(const std::string& call, const std::string& img_dtype = "T.float16") {
  return absl::StrCat("import tilelang\nimport tilelang.language as T\n\n\n@tilelang.jit\n"
                      "def f(X):\n    X: T.Tensor((2, 5, 5, 3), ",
                      img_dtype,
                      ")\n"
                      "    O = T.empty((16, 8), T.float16)\n"
                      "    with T.Kernel(1, 1, threads=128) as (bx, by):\n"
                      "        s = T.alloc_shared((16, 8), T.float16)\n"
                      "        ",
                      call,
                      "\n"
                      "        T.copy(s, O)\n"
                      "    return O\n");
}

TEST(Im2col, OneParallelLoopOverTheTile) {
  ir::Program p = MustCompile(Im2col("T.im2col(X, s, by, bx, 3, 2, 1, 1)"));
  const std::string text = ir::PrintProgram(p);
  EXPECT_THAT(text, HasSubstr("for i, j in parallel(16, 8)"));
  // Output 3 x 3 pixels, taps of 3 channels: row by * 16 + i, column bx * 8 + j.
  // n = m // 9, h = oh * 2 + kh - 1 with oh = m % 9 // 3 and kh = k // 9, ...
  EXPECT_THAT(text, HasSubstr("X[(i + by * 16) // 9, (j + bx * 8) // 9 + (i + by * 16) % 9 // 3 * "
                              "2 - 1, (i + by * 16) % 3 * 2 + (j + bx * 8) // 3 % 3 - 1, "
                              "(j + bx * 8) % 3]"));
  // ... read inside the image only, for real rows and columns.
  EXPECT_THAT(text, HasSubstr("(i + by * 16) // 9 < 2 && (j + bx * 8) // 9 < 3, X["));
  EXPECT_THAT(text, HasSubstr(", float16(0.0))"));
  // The older name is the same op.
  EXPECT_EQ(text, ir::PrintProgram(MustCompile(Im2col("T.c2d_im2col(X, s, by, bx, 3, 2, 1, 1)"))));
}

TEST(Im2col, Errors) {
  EXPECT_THAT(ErrorOf(Im2col("T.im2col(X, s, by, bx, 3, 2, 1, 1)", "T.float32")),
              HasSubstr("t.py:11:21: T.im2col col 's' (float16) must have the dtype of img 'X' "
                        "(float32)"));
  EXPECT_THAT(ErrorOf(Im2col("T.im2col(X, s, by, bx, 3, 0, 1, 1)")),
              HasSubstr("t.py:11:35: T.im2col stride must be at least 1, got 0"));
  EXPECT_THAT(ErrorOf(Im2col("T.im2col(X, s, by, bx, 3, 1, 1, -1)")),
              HasSubstr("t.py:11:41: T.im2col pad must be at least 0, got -1"));
  EXPECT_THAT(ErrorOf(Im2col("T.im2col(s, s, by, bx, 3, 1, 1, 1)")),
              HasSubstr("t.py:11:18: T.im2col img 's' must have 4 dimensions (N, H, W, C), got 2"));
  EXPECT_THAT(ErrorOf(Im2col("T.im2col(X, s[0, 0], by, bx, 3, 1, 1, 1)")),
              HasSubstr("t.py:11:21: T.im2col col must be a buffer or a sliced region"));
  EXPECT_THAT(ErrorOf(Im2col("T.im2col(X, s, by, bx, 7, 1, 1, 0)")),
              HasSubstr("t.py:11:9: T.im2col: the convolution has no output pixels (-1 x -1)"));
  EXPECT_THAT(ErrorOf(Im2col("T.im2col(X, s, by, bx, 3, 1, 1, 1, annotations={1: 2})")),
              HasSubstr("argument 'annotations' is not supported"));
}

} // namespace
} // namespace kiln::frontend
