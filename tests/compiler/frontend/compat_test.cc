// TileLang compatibility of the frontend (issue 30): the host helpers of
// tilelang.math, the Python subset TileLang's examples use around their
// kernels (f-strings, str.join, int.bit_length, isinstance, math.gcd,
// while), small T.* ops, and the diagnostics for TileLang names Kiln lacks
// and for parameters left unbound. Programs that reach execution also run
// on the CPU target through the real kiln-run binary.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/tools/npy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/subprocess.h"

namespace kiln::frontend {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

using Bindings = std::vector<std::pair<std::string, std::string>>;

absl::StatusOr<ir::Program> Compile(std::string_view src, const Bindings& binds = {},
                                    std::string entry = "") {
  FrontendOptions o;
  o.file_name = "t.py";
  o.entry = std::move(entry);
  for (const auto& [k, v] : binds) o.bindings.emplace_back(k, ParseBindingText(v));
  return CompileSource(src, o);
}

ir::Program MustCompile(std::string_view src, const Bindings& binds = {}, std::string entry = "") {
  absl::StatusOr<ir::Program> p = Compile(src, binds, std::move(entry));
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return ir::Program();
  absl::Status v = ir::Verify(*p);
  EXPECT_TRUE(v.ok()) << v << "\n" << ir::PrintProgram(*p);
  return *std::move(p);
}

// The whole message of a compile that must fail.
std::string ErrorOf(std::string_view src, const Bindings& binds = {}, std::string entry = "") {
  absl::StatusOr<ir::Program> p = Compile(src, binds, std::move(entry));
  EXPECT_FALSE(p.ok()) << ir::PrintProgram(*p);
  return p.ok() ? "" : std::string(p.status().message());
}

std::string P(const ir::Expr& e) { return ir::PrintExpr(e); }

// Runs `src` once on the CPU target with kiln-run and returns the float32
// parameters `save` (inputs as generated, outputs as the kernel left them).
class CpuRun {
 public:
  CpuRun() {
    std::string pattern = (fs::temp_directory_path() / "kiln-compat-test-XXXXXX").string();
    EXPECT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  ~CpuRun() { fs::remove_all(dir_); }
  CpuRun(const CpuRun&) = delete;
  CpuRun& operator=(const CpuRun&) = delete;

  std::map<std::string, std::vector<float>> Run(const std::string& src, const Bindings& binds,
                                                const std::vector<std::string>& save) {
    std::ofstream((dir_ / "k.py").string()) << src;
    std::vector<std::string> args = {std::string(KILN_BINARY_DIR) + "/kiln-run",
                                     (dir_ / "k.py").string(), "--target", "cpu", "--quiet"};
    for (const auto& [k, v] : binds) {
      args.emplace_back("--bind");
      args.push_back(absl::StrCat(k, "=", v));
    }
    for (const std::string& name : save) {
      args.emplace_back("--save");
      args.push_back(absl::StrCat(name, "=", (dir_ / (name + ".npy")).string()));
    }
    util::SubprocessOptions options;
    options.timeout = std::chrono::seconds(300);
    absl::StatusOr<util::SubprocessResult> run = util::RunSubprocess(args, options);
    std::map<std::string, std::vector<float>> out;
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) return out;
    EXPECT_TRUE(run->success()) << run->stderr_data;
    for (const std::string& name : save) {
      absl::StatusOr<tools::NpyArray> a = tools::ReadNpyFile((dir_ / (name + ".npy")).string());
      EXPECT_TRUE(a.ok()) << a.status();
      if (!a.ok() || a->dtype != ir::DType::kFloat32) continue;
      std::vector<float>& v = out[name];
      v.resize(a->data.size() / sizeof(float));
      std::memcpy(v.data(), a->data.data(), v.size() * sizeof(float));
    }
    return out;
  }

 private:
  fs::path dir_;
};

// ---------------------------------------------------------------------------
// 1. Host helpers: tilelang.math, tilelang.cdiv, T.ceildiv outside kernels.

constexpr char kHostHelpers[] = R"(import tilelang
import tilelang as tl
import tilelang.language as T
import tilelang.math
from tilelang.math import next_power_of_2 as np2
from tilelang import cdiv


@tilelang.jit
def scale_rows(A, N):
    M = T.const("M")
    block = min(128, tilelang.math.next_power_of_2(N))
    nb = tilelang.cdiv(N, block)
    assert nb == T.ceildiv(N, block) == cdiv(N, block) == tl.math.cdiv(N, block)
    assert tilelang.next_power_of_2(1) == 1 and np2(0) == 2 and np2(64) == 64
    A: T.Tensor((M, N), T.float32)
    B = T.empty((M, N), T.float32)
    with T.Kernel(M, nb, threads=block) as (bx, by):
        for i in T.Parallel(block):
            if by * block + i < N:
                B[bx, by * block + i] = A[bx, by * block + i] * np2(N)
    return B
)";

TEST(CompatHostHelpers, NextPowerOfTwoAndCdivShapeTheKernel) {
  ir::Program p = MustCompile(kHostHelpers, {{"M", "3"}, {"N", "300"}});
  ASSERT_EQ(p.kernel.grid.size(), 2u);
  EXPECT_EQ(P(p.kernel.grid[0]), "3");
  EXPECT_EQ(P(p.kernel.grid[1]), "3"); // cdiv(300, 128)
  EXPECT_THAT(p.kernel.threads, ElementsAre(128));
  ir::Program small = MustCompile(kHostHelpers, {{"M", "3"}, {"N", "20"}});
  EXPECT_THAT(small.kernel.threads, ElementsAre(32));
  EXPECT_THAT(ir::PrintProgram(small), HasSubstr("* 32.0"));
}

TEST(CompatHostHelpers, RunsOnTheCpu) {
  CpuRun cpu;
  auto out = cpu.Run(kHostHelpers, {{"M", "3"}, {"N", "20"}}, {"A", "B"});
  ASSERT_EQ(out["A"].size(), 60u);
  ASSERT_EQ(out["B"].size(), 60u);
  for (size_t k = 0; k < 60; ++k) EXPECT_EQ(out["B"][k], out["A"][k] * 32.0f) << k;
}

TEST(CompatHostHelpers, Errors) {
  constexpr char kSymbolic[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def f(A):
    N = T.const("N")
    b = tilelang.math.next_power_of_2(N)
    A: T.Tensor((N,), T.float32)
)";
  EXPECT_EQ(ErrorOf(kSymbolic),
            "t.py:8:9: next_power_of_2() needs a compile-time integer, got symbolic int32 "
            "expression");
  constexpr char kUnknown[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def f(n):
    b = tilelang.math.prev_power_of_2(n)
)";
  EXPECT_EQ(ErrorOf(kUnknown, {{"n", "8"}}),
            "t.py:7:9: 'tilelang.math.prev_power_of_2' is not supported by "
            "Kiln yet");
  constexpr char kArity[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def f(n):
    b = tilelang.cdiv(n)
)";
  EXPECT_EQ(ErrorOf(kArity, {{"n", "8"}}),
            "t.py:7:9: tilelang.math.cdiv() takes 2 arguments but 1 were given");
}

} // namespace
} // namespace kiln::frontend
