// Dotted entries (issue 30): a kernel function defined inside another
// function, as TileLang's autotune drivers write them
// (`def get_best_config(M, N, K): def kernel(block_M=None, ...): ...`),
// compiled as `outer.inner`. The enclosing function runs at compile time
// with its parameters bound, up to the definition of the kernel function,
// which then closes over its locals. One program also runs on the CPU
// target through the real kiln-run binary.
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
#include "compiler/tools/npy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cpu_run.h"
#include "tests/support/frontend_compile.h"
#include "util/subprocess.h"

namespace kiln::frontend {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

using testing::Bindings;
using testing::Compile;
using testing::CpuRun;
using testing::MustCompile;

std::string ErrorOf(std::string_view src, const Bindings& binds, std::string entry) {
  absl::StatusOr<ir::Program> p = Compile(src, binds, std::move(entry));
  EXPECT_FALSE(p.ok()) << ir::PrintProgram(*p);
  return p.ok() ? "" : std::string(p.status().message());
}

absl::StatusOr<EntrySignature> Describe(std::string_view src, std::string entry) {
  FrontendOptions o;
  o.file_name = "t.py";
  o.entry = std::move(entry);
  return DescribeEntry(src, o);
}

// An autotune driver in TileLang's style: the kernel function closes over
// the driver's parameter N and its local `factor`; its decorators are the
// same as a module-level kernel's.
constexpr char kDriver[] = R"(import tilelang
import tilelang.language as T
from tilelang.autotuner import AutoTuner, autotune


def get_configs():
    return [{"block": 16}, {"block": 32}]


def get_best(N, scale=1.5):
    factor = scale * 2
    block = 999  # shadowed by the kernel function's parameter

    @autotune(configs=get_configs(), warmup=3)
    @tilelang.jit(out_idx=[-1], pass_configs={"tl.enable_fast_math": factor > 2})
    def kernel(block=None, dtype="float32"):
        @T.prim_func
        def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
            with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
                for i in T.Parallel(block):
                    if bx * block + i < N:
                        B[bx * block + i] = A[bx * block + i] * factor

        return main

    tuner = AutoTuner.from_kernel(kernel=kernel, configs=get_configs())
    return tuner.run(warmup=3, rep=20)
)";

TEST(NestedEntry, ClosesOverTheEnclosingFunction) {
  ir::Program p = MustCompile(kDriver, {{"N", "40"}, {"block", "16"}}, "get_best.kernel");
  EXPECT_EQ(p.name, "kernel");
  ASSERT_EQ(p.params.size(), 2u);
  EXPECT_FALSE(p.params[0].is_output);
  EXPECT_TRUE(p.params[1].is_output); // out_idx=[-1] of the nested decorator
  EXPECT_EQ(ir::PrintExpr(p.params[0].buffer.shape[0]), "40");
  ASSERT_EQ(p.kernel.grid.size(), 1u);
  EXPECT_EQ(ir::PrintExpr(p.kernel.grid[0]), "3"); // ceildiv(40, 16): the bound block, not 999
  EXPECT_THAT(p.kernel.threads, ElementsAre(16));
  // pass_configs evaluated in the enclosing function's frame (factor = 3.0).
  ASSERT_TRUE(p.attrs.contains("tl.enable_fast_math"));
  EXPECT_EQ(p.attrs.at("tl.enable_fast_math"), "true");
  EXPECT_THAT(ir::PrintProgram(p), HasSubstr("* 3.0"));

  // The enclosing function's default is overridden by a binding.
  ir::Program q =
      MustCompile(kDriver, {{"N", "40"}, {"block", "32"}, {"scale", "0.5"}}, "get_best.kernel");
  EXPECT_THAT(q.kernel.threads, ElementsAre(32));
  EXPECT_EQ(q.attrs.at("tl.enable_fast_math"), "false");
  EXPECT_THAT(ir::PrintProgram(q), HasSubstr("* 1.0"));
}

TEST(NestedEntry, RunsOnTheCpu) {
  CpuRun cpu;
  auto out = cpu.MustRun(kDriver, {{"N", "40"}, {"block", "16"}, {"scale", "1.25"}}, {"A", "B"},
                         {.entry = "get_best.kernel", .dynamic = {}});
  ASSERT_EQ(out["A"].size(), 40u);
  ASSERT_EQ(out["B"].size(), 40u);
  for (size_t k = 0; k < 40; ++k) EXPECT_EQ(out["B"][k], out["A"][k] * 2.5f) << k;
}

// The @tilelang.jit form inside a function, and a name (N) that both levels
// declare: one binding binds both.
constexpr char kJitInside[] = R"(import tilelang
import tilelang.language as T


def build(N, M):
    total = N * M

    @tilelang.jit
    def kernel(A, N, block=32):
        A: T.Tensor((M, N), T.float32)
        B = T.empty((M, N), T.float32)
        with T.Kernel(M, threads=block) as bx:
            for i in T.Parallel(N):
                B[bx, i] = A[bx, i] + total

        return B

    return kernel
)";

TEST(NestedEntry, JitFormAndANameBothLevelsDeclare) {
  ir::Program p = MustCompile(kJitInside, {{"N", "8"}, {"M", "4"}}, "build.kernel");
  ASSERT_EQ(p.params.size(), 2u);
  EXPECT_EQ(p.params[0].buffer.name, "A");
  EXPECT_EQ(ir::PrintExpr(p.params[0].buffer.shape[0]), "4");
  EXPECT_EQ(ir::PrintExpr(p.params[0].buffer.shape[1]), "8");
  EXPECT_THAT(p.kernel.threads, ElementsAre(32));
  EXPECT_THAT(ir::PrintProgram(p), HasSubstr("+ 32.0")); // total = N * M of the outer N

  absl::StatusOr<EntrySignature> sig = Describe(kJitInside, "build.kernel");
  ASSERT_TRUE(sig.ok()) << sig.status();
  EXPECT_EQ(sig->name, "build.kernel");
  std::vector<std::string> names;
  for (const EntryParam& e : sig->params) names.push_back(e.name);
  // The kernel function's parameters, then the enclosing one's; N once.
  EXPECT_THAT(names, ElementsAre("A", "N", "block", "M"));
  EXPECT_TRUE(sig->params[0].is_tensor);
  EXPECT_FALSE(sig->params[1].is_tensor);
  ASSERT_TRUE(sig->params[2].default_value.has_value());
  EXPECT_EQ(sig->params[2].default_value->ival, 32);
  EXPECT_FALSE(sig->params[3].has_default);
}

TEST(NestedEntry, DescribesTheTunablesOfBothLevels) {
  absl::StatusOr<EntrySignature> sig = Describe(kDriver, "get_best.kernel");
  ASSERT_TRUE(sig.ok()) << sig.status();
  std::vector<std::string> names;
  for (const EntryParam& e : sig->params) names.push_back(e.name);
  EXPECT_THAT(names, ElementsAre("block", "dtype", "N", "scale"));
  EXPECT_TRUE(sig->params[0].has_default);
  EXPECT_FALSE(sig->params[0].default_value.has_value() &&
               sig->params[0].default_value->kind == BindingValue::Kind::kInt);
  ASSERT_TRUE(sig->params[3].default_value.has_value());
  EXPECT_EQ(sig->params[3].default_value->fval, 1.5);
}

// Any depth: the @T.prim_func of the nested factory named as the entry.
TEST(NestedEntry, ThreeLevels) {
  ir::Program p = MustCompile(kDriver, {{"N", "40"}, {"block", "32"}}, "get_best.kernel.main");
  EXPECT_EQ(p.name, "main");
  EXPECT_THAT(p.kernel.threads, ElementsAre(32));
  // A @T.prim_func entry has no jit decorator of its own: no outputs.
  ASSERT_EQ(p.params.size(), 2u);
  EXPECT_FALSE(p.params[1].is_output);
}

TEST(NestedEntry, DynamicParameterOfTheEnclosingFunction) {
  FrontendOptions o;
  o.file_name = "t.py";
  o.entry = "get_best.kernel";
  o.bindings.emplace_back("block", ParseBindingText("16"));
  o.dynamic_params = {"N"};
  absl::StatusOr<ir::Program> p = CompileSource(kDriver, o);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->symbols.size(), 1u);
  EXPECT_EQ(p->symbols[0].name, "N");
}

// ---------------------------------------------------------------------------
// Errors, each located.

TEST(NestedEntryErrors, UnknownOuterListsTheNestedKernels) {
  EXPECT_EQ(ErrorOf(kDriver, {}, "get_bset.kernel"),
            "t.py: function 'get_bset' of entry 'get_bset.kernel' not found at module level; "
            "kernels defined inside functions: get_best.kernel");
}

TEST(NestedEntryErrors, UnknownInnerListsWhatTheOuterDefines) {
  EXPECT_EQ(ErrorOf(kDriver, {{"N", "8"}}, "get_best.kernal"),
            "t.py:10:1: 'get_best' defines no function 'kernal'; it defines: kernel");
  EXPECT_EQ(ErrorOf(kDriver, {}, "get_configs.kernel"),
            "t.py:6:1: 'get_configs' defines no function 'kernel' (it defines no functions)");
  absl::StatusOr<EntrySignature> sig = Describe(kDriver, "get_best.kernal");
  ASSERT_FALSE(sig.ok());
  EXPECT_EQ(sig.status().message(),
            "t.py:10:1: 'get_best' defines no function 'kernal'; it defines: kernel");
}

TEST(NestedEntryErrors, ModuleLevelNameOfANestedKernel) {
  EXPECT_EQ(ErrorOf(kDriver, {}, "kernel"),
            "t.py: entry function 'kernel' not found; candidates: get_best.kernel");
  EXPECT_EQ(ErrorOf(kDriver, {}, ""),
            "t.py: no module-level kernel function; kernels defined inside functions: "
            "get_best.kernel (name one with the entry option, e.g. 'get_best.kernel')");
}

TEST(NestedEntryErrors, BadDottedName) {
  EXPECT_EQ(ErrorOf(kDriver, {}, "get_best..kernel"),
            "t.py: entry 'get_best..kernel' is neither a function name nor a dotted path of "
            "nested functions (outer.inner)");
  EXPECT_EQ(ErrorOf(kDriver, {}, "get_best.ker nel"),
            "t.py: entry '<invalid name>' is neither a function name nor a dotted path of "
            "nested functions (outer.inner)");
}

constexpr char kEarlyExit[] = R"(import tilelang
import tilelang.language as T


def outer(N, mode):
    if mode == 1:
        return None
    if mode == 2:
        raise ValueError("bad mode")
    if mode == 3:

        @tilelang.jit
        def kernel(A):
            A: T.Tensor((N,), T.float32)
            with T.Kernel(1, threads=N) as bx:
                for i in T.Parallel(N):
                    A[i] = 0.0
    # No return: a path that skips the definition ends here.
)";

TEST(NestedEntryErrors, InnerNotReached) {
  EXPECT_EQ(ErrorOf(kEarlyExit, {{"N", "8"}, {"mode", "1"}}, "outer.kernel"),
            "t.py:13:9: 'outer' returns before it defines 'kernel' (line 13) with these "
            "bindings; entry 'outer.kernel' needs that definition to run");
  EXPECT_EQ(ErrorOf(kEarlyExit, {{"N", "8"}, {"mode", "0"}}, "outer.kernel"),
            "t.py:13:9: 'outer' ends without defining 'kernel' (line 13) with these bindings; "
            "entry 'outer.kernel' needs that definition to run");
  EXPECT_EQ(ErrorOf(kEarlyExit, {{"N", "8"}, {"mode", "2"}}, "outer.kernel"),
            "t.py:9:9: exception ValueError raised at compile time (while running 'outer' up "
            "to its definition of 'kernel' (line 13))");
  MustCompile(kEarlyExit, {{"N", "8"}, {"mode", "3"}}, "outer.kernel");
}

TEST(NestedEntryErrors, ParametersOfBothLevels) {
  EXPECT_EQ(ErrorOf(kDriver, {{"block", "16"}}, "get_best.kernel"),
            "t.py:10:14: parameter 'N' of 'get_best' has no binding and no default");
  EXPECT_EQ(ErrorOf(kDriver, {{"N", "8"}, {"block", "16"}, {"blok", "1"}}, "get_best.kernel"),
            "t.py:16:5: unknown binding 'blok' for 'get_best.kernel'; valid names: N, block, "
            "dtype, scale");
  EXPECT_THAT(ErrorOf(kDriver, {{"N", "8"}}, "get_best.kernel"),
              HasSubstr("parameter 'block' has no binding (its default is None)"));
}

} // namespace
} // namespace kiln::frontend
