// Integer ranges in the frontend (issue 27, item 3): a tile size, extent,
// shape or count that does not fit the type the compiler keeps it in is a
// located error, never a silent wrap. Before these checks block_M = 2**31 or
// 2**32 + 32 compiled, and the lowered loop ran -2147483648 or 32 times.
//
// Each case is a kernel body (or a whole program) with one out-of-range
// value; the diagnostic must be located at the first occurrence of `anchor`
// in the source (line:col computed from the text, so the table stays
// readable) and contain `message`.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/ir_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::frontend {
namespace {

using ::testing::HasSubstr;

// BODY, SHAPE, GRID and THREADS are replaced by the case's.
constexpr char kTemplate[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def kern(A, block_M=16, n=8):
    A: T.Tensor(SHAPE, T.float16)
    with T.Kernel(GRID, threads=THREADS) as bx:
BODY
)";

struct Case {
  std::string name;
  std::string body;   // indented by 8 spaces, inside the kernel
  std::string value;  // the binding of block_M ("" for none)
  std::string anchor; // the diagnostic's location: first occurrence in the source
  std::string message;
  std::string shape = "(1024,)";
  std::string grid = "4";
  std::string threads = "128";
};

std::string Source(const Case& c) {
  return absl::StrReplaceAll(
      kTemplate, {{"BODY", c.body}, {"SHAPE", c.shape}, {"GRID", c.grid}, {"THREADS", c.threads}});
}

// "line:col" of the first occurrence of `anchor` in `source` (1-based).
std::string LineCol(const std::string& source, const std::string& anchor) {
  size_t pos = source.find(anchor);
  if (pos == std::string::npos) return "anchor not found: " + anchor;
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < pos; ++i) {
    if (source[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return absl::StrCat(line, ":", pos - line_start + 1);
}

void ExpectLocatedError(const Case& c, const std::string& source) {
  SCOPED_TRACE(c.name);
  FrontendOptions o;
  o.file_name = "t.py";
  if (!c.value.empty()) o.bindings.emplace_back("block_M", ParseBindingText(c.value));
  o.bindings.emplace_back("n", ParseBindingText("8"));
  absl::StatusOr<ir::Program> p = CompileSource(source, o);
  ASSERT_FALSE(p.ok()) << "compiled, but an error was expected:\n" << source;
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
  const std::string message(p.status().message());
  const std::string prefix = absl::StrCat("t.py:", LineCol(source, c.anchor), ": ");
  EXPECT_EQ(message.rfind(prefix, 0), 0u) << "message: " << message << "\nwant prefix: " << prefix;
  EXPECT_THAT(message, HasSubstr(c.message));
}

constexpr char kParallelBody[] = R"(        for i in T.Parallel(block_M):
            A[i] = 0)";

// The tile size of issue 27 item 3, from a binding: every shape of bad value.
TEST(IntRangeTest, ParallelExtentFromBinding) {
  const std::vector<std::pair<std::string, std::string>> values = {
      {"2147483648", "T.Parallel extent must be in [1, 1073741824], got 2147483648"},
      {"4294967328", "T.Parallel extent must be in [1, 1073741824], got 4294967328"},
      {"9223372036854775807",
       "T.Parallel extent must be in [1, 1073741824], got 9223372036854775807"},
      {"-1", "T.Parallel extent must be positive, got -1"},
      {"0", "T.Parallel extent must be positive, got 0"},
  };
  for (const auto& [value, message] : values) {
    Case c{"block_M=" + value, kParallelBody, value, "block_M):", message};
    ExpectLocatedError(c, Source(c));
  }
}

TEST(IntRangeTest, ParallelExtentAtTheLimitCompiles) {
  Case c{"block_M=2**30", kParallelBody, "1073741824", "", ""};
  FrontendOptions o;
  o.file_name = "t.py";
  o.bindings.emplace_back("block_M", ParseBindingText("1073741824"));
  o.bindings.emplace_back("n", ParseBindingText("8"));
  EXPECT_TRUE(CompileSource(Source(c), o).ok());
}

TEST(IntRangeTest, EachSiteRejectsOutOfRangeValues) {
  const std::vector<Case> cases = {
      // Loop extents written in the source.
      {"parallel literal 2**31", "        for i in T.Parallel(2**31):\n            A[i] = 0", "",
       "2**31)", "T.Parallel extent must be in [1, 1073741824], got 2147483648"},
      {"parallel literal 2**32+32",
       "        for i in T.Parallel(2**32 + 32):\n            A[i] = 0", "", "2**32 + 32)",
       "got 4294967328 (lowering spreads it over the threads with int32 indices)"},
      {"parallel second extent",
       "        for i, j in T.Parallel(4, 9223372036854775807):\n            A[i] = 0", "",
       "9223372036854775807)",
       "T.Parallel extent must be in [1, 1073741824], got 9223372036854775807"},
      {"parallel product", "        for i, j in T.Parallel(65536, 65536):\n            A[i] = 0",
       "", "65536)",
       "iteration space (the product of its extents) must be at most 1073741824, got "
       "65536 x 65536"},
      {"parallel product of bindings",
       "        for i, j, k in T.Parallel(block_M, 1024, 1024):\n            A[i] = 0", "4096",
       "1024):", "got 4194304 x 1024"},
      // Just below int32: r * threads + tid runs past the extent into the
      // thread layout's padding (2147483647 at 1000 threads reached
      // 2147484000 and wrote A[negative]).
      {"parallel 2**31-1 padded over 1000 threads",
       "        for i in T.Parallel(2**31 - 1):\n            A[i] = 0", "", "2**31 - 1)",
       "T.Parallel extent must be in [1, 1073741824], got 2147483647", "(1024,)", "1", "1000"},
      {"pipelined 2**31-1 (loads ahead past it)",
       "        for k in T.Pipelined(2**31 - 1, num_stages=3):\n            A[0] = 0", "",
       "2**31 - 1,", "T.Pipelined trip count must be in [0, 1073741824], got 2147483647"},
      {"serial 2**31", "        for i in T.serial(2**31):\n            A[0] = 0", "", "2**31)",
       "T.serial(0, 2147483648, 1) runs more than 2147483647 iterations"},
      {"serial from binding 2**32+32", "        for i in T.serial(block_M):\n            A[0] = 0",
       "4294967328", "block_M)", "T.serial(0, 4294967328, 1) runs more than"},
      {"range from binding 2**63-1", "        for i in range(block_M):\n            A[0] = 0",
       "9223372036854775807", "range(", "range(0, 9223372036854775807, 1) runs more than"},
      {"serial whose distance overflows int64",
       "        for i in T.serial(-9223372036854775807 - 1, 9223372036854775807):\n"
       "            A[0] = 0",
       "", "-9223372036854775807 - 1,", "runs more than 2147483647 iterations"},
      {"serial negative step",
       "        for i in T.serial(0, -2**31 - 5, -1):\n            A[0] = 0", "", "0, -2**31",
       "T.serial(0, -2147483653, -1) runs more than"},
      {"unroll 2**31", "        for i in T.unroll(2**31):\n            A[0] = 0", "", "2**31)",
       "T.unroll(0, 2147483648, 1) runs more than"},
      {"vectorized 2**32+32", "        for i in T.vectorized(2**32 + 32):\n            A[0] = 0",
       "", "2**32 + 32)", "T.vectorized(0, 4294967328, 1) runs more than"},
      {"pipelined from binding",
       "        for k in T.Pipelined(block_M, num_stages=2):\n            A[0] = 0", "2147483648",
       "block_M,", "T.Pipelined(0, 2147483648, 1) runs more than"},
      {"serial step -2**63 over a symbolic stop",
       "        for i in T.serial(0, bx, -9223372036854775807 - 1):\n            A[0] = 0", "",
       "0, bx,", "T.serial step must be in [-9223372036854775807, 9223372036854775807]"},
      // The loop variable's values: i * step and start + i * step are int32
      // arithmetic where step and start fit int32.
      {"serial step product beyond int32",
       "        for i in T.serial(-10, 2**31 - 1, 2**30):\n            A[0] = 0", "", "-10,",
       "T.serial loop values from -10 to 2147483638 do not fit the loop's int32 index arithmetic"},
      {"serial last value beyond int32",
       "        for i in T.serial(2**31 - 2, 2**31 + 2):\n            A[0] = 0", "", "2**31 - 2,",
       "T.serial loop values from 2147483646 to 2147483649 do not fit the loop's int32"},
      {"serial values beyond int64",
       "        for i in T.serial(-9223372036854775807, 9223372036854775807, 2**62):\n"
       "            A[0] = 0",
       "", "-9223372036854775807,", "do not fit the loop's int64 index arithmetic"},
      // Pipeline annotations.
      {"num_stages 2**31",
       "        for k in T.Pipelined(4, num_stages=2**31):\n            A[0] = 0", "", "2**31)",
       "num_stages must be in [0, 64], got 2147483648"},
      {"num_stages 2**32+2",
       "        for k in T.Pipelined(4, num_stages=2**32 + 2):\n            A[0] = 0", "",
       "2**32 + 2)", "num_stages must be in [0, 64], got 4294967298"},
      {"num_stages -1", "        for k in T.Pipelined(4, num_stages=-1):\n            A[0] = 0", "",
       "-1)", "num_stages must be in [0, 64], got -1"},
      {"order entry 2**32",
       "        for k in T.Pipelined(4, num_stages=2, order=[0, 2**32]):\n            A[0] = 0", "",
       "[0, 2**32]", "T.Pipelined order must be a list of compile-time integers"},
      // Launch shape.
      {"grid 2**31", "        pass", "", "2**31,",
       "grid extent must be a positive int32, got 2147483648", "(1024,)", "2**31"},
      {"grid 2**32+32 from binding", "        pass", "4294967328", "block_M,",
       "grid extent must be a positive int32, got 4294967328", "(1024,)", "block_M"},
      {"grid -1 from binding", "        pass", "-1", "block_M,",
       "grid extent must be a positive int32, got -1", "(1024,)", "block_M"},
      {"grid 0 from binding", "        pass", "0", "block_M,",
       "grid extent must be a positive int32, got 0", "(1024,)", "block_M"},
      {"threads 2**32+32", "        pass", "", "2**32 + 32)",
       "thread count must be in [1, 1024], got 4294967328", "(1024,)", "4", "2**32 + 32"},
      {"threads from binding 2**31", "        pass", "2147483648", "block_M)",
       "thread count must be in [1, 1024], got 2147483648", "(1024,)", "4", "block_M"},
      // Regions of tile ops.
      {"slice extent 2**31",
       "        S = T.alloc_shared((64,), T.float16)\n        T.copy(A[0:2**31], S)", "", "A[0:",
       "slice extent in dimension 0 of 'A' must be in [1, 1073741824], got 2147483648", "(2**33,)"},
      {"slice extent from binding",
       "        S = T.alloc_shared((64,), T.float16)\n        T.copy(A[0:block_M], S)",
       "4294967328", "A[0:", "got 4294967328 (tile ops loop over regions with int32 indices)",
       "(2**33,)"},
      // Sizes: a product of dimensions that overflows int64.
      {"tensor bytes overflow", "        pass", "", "T.Tensor(",
       "buffer of 4611686018427387904 x 4 float16 elements is larger than 9223372036854775807 "
       "bytes",
       "(2**62, 4)"},
      {"tensor bytes overflow from binding", "        pass", "4611686018427387904", "T.Tensor(",
       "is larger than 9223372036854775807 bytes", "(block_M, block_M)"},
      {"shared bytes overflow", "        S = T.alloc_shared((2**40, 2**40), T.float32)", "",
       "T.alloc_shared(", "buffer of 1099511627776 x 1099511627776 float32 elements is larger"},
      {"fragment bytes overflow", "        F = T.alloc_fragment((2**62, 2), T.float16)", "",
       "T.alloc_fragment(", "float16 elements is larger than"},
      // Other narrowed integers.
      {"use_swizzle panel 2**32+32", "        T.use_swizzle(2**32 + 32)", "", "2**32 + 32)",
       "T.use_swizzle panel_size must be a positive compile-time integer"},
      {"thread binding dim 2**32", "        t = T.get_thread_binding(2**32)", "",
       "T.get_thread_binding(", "T.get_thread_binding: dim 4294967296 is out of range"},
      // Literals beyond int64 and compile-time arithmetic that overflows.
      {"decimal literal beyond int64", "        x = 99999999999999999999", "", "99999",
       "integer literal too large for int64"},
      {"hex literal beyond int64", "        x = 0x1_0000_0000_0000_0000", "", "0x1_",
       "integer literal too large for int64"},
      {"2**63 overflows", "        for i in T.Parallel(2**63):\n            A[i] = 0", "", "2**63",
       "integer overflow in compile-time arithmetic"},
      {"tile size product overflows", "        x = block_M * block_M", "4294967296",
       "block_M * block_M", "integer overflow in compile-time arithmetic"},
  };
  for (const Case& c : cases) {
    std::string source = Source(c);
    ExpectLocatedError(c, source);
  }
}

// Reductions and gemm flags are narrowed to int32 in the IR.
TEST(IntRangeTest, TileOpIntegersAreRangeChecked) {
  const std::vector<Case> cases = {
      {"reduce dim 2**32",
       "        F = T.alloc_fragment((4, 4), T.float32)\n"
       "        G = T.alloc_fragment((4,), T.float32)\n"
       "        T.reduce_sum(F, G, dim=2**32)",
       "", "2**32)", "dim 4294967296 is out of range"},
      {"gemm k_pack 2**32+1",
       "        X = T.alloc_shared((16, 16), T.float16)\n"
       "        C = T.alloc_fragment((16, 16), T.float32)\n"
       "        T.gemm(X, X, C, k_pack=2**32 + 1)",
       "", "2**32 + 1)", "T.gemm k_pack must be 1 or 2"},
  };
  for (const Case& c : cases) ExpectLocatedError(c, Source(c));
}

// A Python float stored to an integer buffer became the literal
// static_cast<int64_t>(1e30): undefined behaviour in the compiler, which gave
// -9223372036854775808 on x86. Beyond the type it stays a conversion (what
// the device does with it); within the type it is still a literal.
TEST(IntRangeTest, FloatsBeyondAnIntegerTypeStayConversions) {
  Case c{"float to int", R"(        for i in T.Parallel(4):
            B[i] = 1e30
            B[i + 4] = -1e300
            B[i + 8] = 2.0**40
            B[i + 12] = 7.9)",
         "", "", ""};
  std::string source = absl::StrReplaceAll(
      Source(c), {{"    A: T.Tensor((1024,), T.float16)\n",
                   "    A: T.Tensor((1024,), T.float16)\n    B: T.Tensor((64,), T.int32)\n"},
                  {"def kern(A,", "def kern(A, B,"}});
  FrontendOptions o;
  o.file_name = "t.py";
  absl::StatusOr<ir::Program> p = CompileSource(source, o);
  ASSERT_TRUE(p.ok()) << p.status() << "\n" << source;
  std::vector<const ir::Stmt*> stores;
  ir::ForEachStmt(p->kernel.body, [&](const ir::Stmt& s) {
    if (s.kind == ir::StmtKind::kStore) stores.push_back(&s);
  });
  ASSERT_EQ(stores.size(), 4u);
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(stores[k]->value.kind, ir::ExprKind::kCast);
    EXPECT_EQ(stores[k]->value.dtype, ir::DType::kInt32);
  }
  EXPECT_EQ(stores[3]->value.kind, ir::ExprKind::kInt);
  EXPECT_EQ(stores[3]->value.ival, 7);
}

} // namespace
} // namespace kiln::frontend
