// Cache keys from source: cosmetic edits of a TileLang program (renamed
// local variables, comments, blank lines, a different function name) keep
// the key; every semantic edit, and renaming a parameter, changes it.
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/hash.h"
#include "gtest/gtest.h"

namespace kiln {
namespace {

constexpr char kGemm[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def matmul(A, B, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[by * block_M, k * block_K], A_shared)
            T.copy(B[k * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        for i, j in T.Parallel(block_M, block_N):
            C_local[i, j] = T.max(C_local[i, j], 0)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C
)";

std::string Key(const std::string& source, const std::string& target = "cuda:sm_90",
                const std::string& extra_binding = "") {
  frontend::FrontendOptions options;
  options.file_name = "gemm.py";
  for (const char* b : {"M=1024", "N=1024", "K=512", "block_M=128", "block_N=128", "block_K=32"}) {
    std::string s(b);
    size_t eq = s.find('=');
    options.bindings.emplace_back(s.substr(0, eq), frontend::ParseBindingText(s.substr(eq + 1)));
  }
  if (!extra_binding.empty()) {
    size_t eq = extra_binding.find('=');
    std::string name = extra_binding.substr(0, eq);
    for (auto& [n, v] : options.bindings) {
      if (n == name) v = frontend::ParseBindingText(extra_binding.substr(eq + 1));
    }
  }
  auto program = frontend::CompileSource(source, options);
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok()) return "error";
  ir::KeyContext ctx;
  ctx.target = target;
  return ir::ProgramKey(*program, ctx);
}

std::string Edit(const std::vector<std::pair<std::string, std::string>>& replacements) {
  std::vector<std::pair<absl::string_view, absl::string_view>> r;
  for (const auto& [from, to] : replacements) r.emplace_back(from, to);
  return absl::StrReplaceAll(kGemm, r);
}

TEST(KeyStability, CosmeticEditsKeepTheKey) {
  const std::string base = Key(kGemm);
  struct Case {
    const char* name;
    std::vector<std::pair<std::string, std::string>> edits;
  };
  const std::vector<Case> cases = {
      {"rename shared buffers", {{"A_shared", "a_tile"}, {"B_shared", "b_tile"}}},
      {"rename accumulator", {{"C_local", "acc"}}},
      {"rename loop variables", {{"for k in", "for ko in"}, {"k * block_K", "ko * block_K"}}},
      {"rename parallel variables", {{"i, j", "r, c"}, {"[i, j]", "[r, c]"}}},
      {"rename block variables",
       {{"(bx, by)", "(col, row)"}, {"bx *", "col *"}, {"by *", "row *"}}},
      {"rename the function", {{"def matmul", "def my_gemm"}}},
      {"comments and blank lines",
       {{"        T.clear(C_local)\n",
         "\n        # zero the accumulator\n        T.clear(C_local)  # !\n\n"}}},
      {"argument spelling", {{"num_stages=3", "num_stages = 3"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string edited = Edit(c.edits);
    ASSERT_NE(edited, kGemm);
    EXPECT_EQ(Key(edited), base);
  }
}

TEST(KeyStability, SemanticEditsChangeTheKey) {
  const std::string base = Key(kGemm);
  struct Case {
    const char* name;
    std::vector<std::pair<std::string, std::string>> edits;
  };
  const std::vector<Case> cases = {
      {"dtype", {{"dtype=T.float16", "dtype=T.bfloat16"}}},
      {"accumulator dtype", {{"accum_dtype=T.float32", "accum_dtype=T.float16"}}},
      {"threads", {{"threads=128", "threads=256"}}},
      {"num_stages", {{"num_stages=3", "num_stages=2"}}},
      {"transpose",
       {{"T.gemm(A_shared, B_shared, C_local)",
         "T.gemm(A_shared, B_shared, C_local, transpose_B=True)"}}},
      {"gemm policy",
       {{"T.gemm(A_shared, B_shared, C_local)",
         "T.gemm(A_shared, B_shared, C_local, policy=T.GemmWarpPolicy.FullRow)"}}},
      {"epilogue constant", {{"T.max(C_local[i, j], 0)", "T.max(C_local[i, j], 1)"}}},
      // A tensor's name is the kernel's interface: the launch metadata stored
      // with the artifact shows it, so a renamed tensor is another artifact.
      {"rename a tensor", {{"A:", "X:"}, {"(A, B,", "(X, B,"}, {"A[", "X["}}},
      {"epilogue op", {{"T.max(C_local[i, j], 0)", "T.min(C_local[i, j], 0)"}}},
      {"loop kind",
       {{"T.Pipelined(T.ceildiv(K, block_K), num_stages=3)", "T.serial(T.ceildiv(K, block_K))"}}},
      {"copy offset", {{"A[by * block_M, k * block_K]", "A[by * block_M + 1, k * block_K]"}}},
      {"shared scope",
       {{"A_shared = T.alloc_shared((block_M, block_K), dtype)",
         "A_shared = T.alloc_shared((block_M, block_K), dtype, scope=\"shared\")"}}},
      {"grid order",
       {{"T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)",
         "T.Kernel(T.ceildiv(N, block_N) + 1, T.ceildiv(M, block_M)"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string edited = Edit(c.edits);
    ASSERT_NE(edited, kGemm);
    EXPECT_NE(Key(edited), base);
  }
  EXPECT_NE(Key(kGemm, "cuda:sm_80"), base) << "target";
  EXPECT_NE(Key(kGemm, "cuda:sm_90", "block_K=64"), base) << "binding";
  EXPECT_NE(Key(kGemm, "cuda:sm_90", "M=2048"), base) << "shape";
}

} // namespace
} // namespace kiln
