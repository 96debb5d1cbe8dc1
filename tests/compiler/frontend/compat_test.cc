// TileLang compatibility of the frontend (issue 30): the host helpers of
// tilelang.math, the Python subset TileLang's examples use around their
// kernels (f-strings, str.join, int.bit_length, isinstance, math.gcd,
// while), small T.* ops, and the diagnostics for TileLang names Kiln lacks
// and for parameters left unbound. Programs that reach execution also run
// on the CPU target through the real kiln-run binary.
#include <algorithm>
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
#include "compiler/passes/pass_registry.h"
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

// The whole message of a compile that must fail.
std::string ErrorOf(std::string_view src, const Bindings& binds = {}, std::string entry = "") {
  absl::StatusOr<ir::Program> p = Compile(src, binds, std::move(entry));
  EXPECT_FALSE(p.ok()) << ir::PrintProgram(*p);
  return p.ok() ? "" : std::string(p.status().message());
}

std::string P(const ir::Expr& e) { return ir::PrintExpr(e); }

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
  auto out = cpu.MustRun(kHostHelpers, {{"M", "3"}, {"N", "20"}}, {"A", "B"});
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

// ---------------------------------------------------------------------------
// 2. The Python subset: f-strings, str.join, int.bit_length, isinstance,
//    math.gcd / math.exp2, while.

constexpr char kPythonSubset[] = R"py(import math
import tilelang
import tilelang.language as T


def tag(prefix, *parts):
    return "_".join([prefix] + [f"{p}" for p in parts])


def never_called(x):
    return f"{x y}"  # an f-string that does not parse breaks only what evaluates it


@tilelang.jit
def scaled(A, N, mode="x"):
    M = T.const("M")
    assert N.bit_length() == 7, f"N={N} has {N.bit_length()} bits"
    block = 1
    while block < N and block < 64:
        block *= 2
    else:
        block = block + 0
    g = math.gcd(N, 40, 0)
    name = f"{mode!r}:{block:>4}|{g:03d}|{1 / 3:.3f}|{{lit}}|{tag('k', block, 2.5)}|{math.exp2(3)}"
    assert name == "'x':  64|008|0.333|{lit}|k_64_2.5|8.0", name
    assert f"{(1, 'a')}" == "(1, 'a')" and f"{0.1 + 0.2}" == "0.30000000000000004"
    assert f'{255:#x}{-7:+05d}{1e-5}{"s":^5}{T.float16}' == "0xff-00071e-05  s  float16"
    assert f"{T.bfloat16:>9}|{T.float32:.5}" == " bfloat16|float"
    assert f"{N=}|{mode = }|{N=:5d}|{mode=!s}" == "N=96|mode = 'x'|N=   96|mode=x"
    assert f"{ {1: 2}[1] }|{'}'}|{3.5:%}|{2**62:b}|{-0.0}|{'abc':.2}" == (
        "2|}|350.000000%|1" + "0" * 62 + "|-0.0|ab")
    assert f"""{N
        + 1}""" == "97"
    assert isinstance(block, int) and not isinstance(block, (float, str)) and isinstance(True, int)
    assert ",".join([str(1), "2", f"{N}", *("x", "y")]) == "1,2,96,x,y"
    assert "".join(c for c in T.float16 if not c.isdigit()) == "float" and "16".isdigit()
    s = 2.0 if isinstance(N, int) else 1.0
    n = 0
    while True:
        n += 1
        if n == 3:
            break
    A: T.Tensor((M, N), T.float32)
    B = T.empty((M, N), T.float32)
    with T.Kernel(M, T.ceildiv(N, block), threads=block) as (bx, by):
        for i in T.Parallel(block):
            if by * block + i < N:
                B[bx, by * block + i] = A[bx, by * block + i] * s + g * n
    return B
)py";

TEST(CompatPythonSubset, CompileTimePythonShapesTheKernel) {
  ir::Program p = MustCompile(kPythonSubset, {{"M", "2"}, {"N", "96"}});
  EXPECT_THAT(p.kernel.threads, ElementsAre(64));
  ASSERT_EQ(p.kernel.grid.size(), 2u);
  EXPECT_EQ(P(p.kernel.grid[1]), "2");
}

TEST(CompatPythonSubset, RunsOnTheCpu) {
  CpuRun cpu;
  auto out = cpu.MustRun(kPythonSubset, {{"M", "2"}, {"N", "96"}}, {"A", "B"});
  ASSERT_EQ(out["B"].size(), 192u);
  for (size_t k = 0; k < 192; ++k) EXPECT_EQ(out["B"][k], out["A"][k] * 2.0f + 24.0f) << k;
}

// A kernel-less @tilelang.jit body around `body` (one statement per line,
// indented by the caller), bound with n=8.
std::string HostOnly(const std::string& body) {
  return absl::StrCat("import math\nimport tilelang\nimport tilelang.language as T\n\n\n"
                      "@tilelang.jit\ndef f(n):\n",
                      body);
}

TEST(CompatPythonSubset, Errors) {
  struct Case {
    std::string body;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"    s = f\"{}\"\n", "t.py:8:11: f-string: empty expression not allowed"},
      {"    s = f\"a{n b}\"\n", "t.py:8:15: f-string: expected ',' or ')'"},
      {"    s = f\"{n!x}\"\n",
       "t.py:8:13: f-string: invalid conversion character (expected 'r', 's' or 'a')"},
      {"    s = f\"{n:{n}}\"\n",
       "t.py:8:14: f-string: nested replacement fields in a format spec are not supported"},
      {"    s = f\"}\"\n", "t.py:8:11: f-string: single '}' is not allowed"},
      {"    s = f\"{n:q}\"\n", "t.py:8:12: f-string: unknown format code 'q' for an int"},
      {"    s = f\"{n:.2d}\"\n",
       "t.py:8:12: f-string: precision is not allowed in an integer format specifier"},
      {"    s = f\"{'a':9999}\"\n",
       "t.py:8:12: f-string: format width above 4096 is not supported"},
      {"    s = \"-\".join([\"a\", n])\n",
       "t.py:8:9: join(): sequence item 1: expected str, got int"},
      {"    s = isinstance(n, math)\n",
       "t.py:8:9: isinstance() arg 2 must be a type or a tuple of types, got module"},
      {"    s = math.gcd(n, 2.0)\n", "t.py:8:9: math.gcd() needs compile-time integers, got float"},
      {"    s = n.bit_length(1)\n",
       "t.py:8:22: bit_length() takes 0 positional arguments but more were given"},
      {"    s = f\"{'x' * 40000}{'y' * 40000}\"\n",
       "t.py:8:25: f-string: formatted text is too long"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    EXPECT_EQ(ErrorOf(HostOnly(c.body), {{"n", "8"}}), c.message);
  }
}

TEST(CompatPythonSubset, SymbolicValuesAreRefusedWhereTheyMustBeKnown) {
  constexpr char kSymbolicWhile[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def f(A):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    with T.Kernel(1, threads=32) as bx:
        i = T.alloc_var(T.int32, 0)
        while i < N:
            A[i] = 0.0
)";
  EXPECT_EQ(ErrorOf(kSymbolicWhile),
            "t.py:11:15: a 'while' loop on a value only known at run time is not supported by "
            "Kiln yet (use a T.serial loop over a bound with an 'if' inside)");
  constexpr char kSymbolicFString[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def f(A):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    s = f"n={N + 1}"
)";
  EXPECT_EQ(ErrorOf(kSymbolicFString),
            "t.py:9:14: f-string: cannot format a value only known at run time (a symbolic "
            "expression)");
}

TEST(CompatPythonSubset, WhileTrueRunsOutOfTheBudget) {
  FrontendOptions o;
  o.file_name = "t.py";
  o.bindings.emplace_back("n", ParseBindingText("8"));
  o.limits.max_steps = 100'000;
  absl::StatusOr<ir::Program> p = CompileSource(HostOnly("    while True:\n        n += 1\n"), o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(p.status().message()), ::testing::StartsWith("t.py:"));
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("budget of 100000 steps"));
}

// ---------------------------------------------------------------------------
// 3. Small ops: T.clamp, lowercase T.parallel.

constexpr char kClamp[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def clip(A, lo=-0.25, hi=0.5):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    B = T.empty((M, N), T.float32)
    with T.Kernel(1, threads=32) as bx:
        for i, j in T.parallel(M, N):
            B[i, j] = T.clamp(A[i, j], lo, max_val=hi)
    return B
)";

TEST(CompatSmallOps, ClampAndLowercaseParallel) {
  ir::Program p = MustCompile(kClamp, {{"M", "4"}, {"N", "8"}});
  const ir::Stmt* loop = nullptr;
  ir::ForEachStmt(p.kernel.body, [&](const ir::Stmt& st) {
    if (st.kind == ir::StmtKind::kFor && loop == nullptr) loop = &st;
  });
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->for_kind, ir::ForKind::kParallel);
  EXPECT_THAT(ir::PrintProgram(p), HasSubstr("min(max(A[i, j], -0.25), 0.5)"));
}

TEST(CompatSmallOps, ClampRunsOnTheCpu) {
  CpuRun cpu;
  auto out = cpu.MustRun(kClamp, {{"M", "4"}, {"N", "8"}}, {"A", "B"});
  ASSERT_EQ(out["B"].size(), 32u);
  int clipped = 0;
  for (size_t k = 0; k < 32; ++k) {
    float a = out["A"][k];
    EXPECT_EQ(out["B"][k], std::min(std::max(a, -0.25f), 0.5f)) << k;
    clipped += a < -0.25f || a > 0.5f;
  }
  EXPECT_GT(clipped, 0); // the inputs reach both sides of the range
}

TEST(CompatSmallOps, ClampErrors) {
  constexpr char kTwoArgs[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def f(A):
    A: T.Tensor((8,), T.float32)
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(8):
            A[i] = T.clamp(A[i], 0.0)
)";
  EXPECT_EQ(ErrorOf(kTwoArgs), "t.py:10:20: T.clamp() missing required argument 'max_val'");
  constexpr char kBuffer[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def f(A):
    A: T.Tensor((8,), T.float32)
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(8):
            A[i] = T.clamp(A, 0.0, 1.0)
)";
  EXPECT_EQ(ErrorOf(kBuffer), "t.py:10:20: T.clamp() expects numbers or expressions, got buffer");
}

// T.tfloat32: float32 storage whose gemm runs on the TF32 tensor-core path.
constexpr char kTf32Gemm[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def tf32_gemm(A, B):
    A: T.Tensor((32, 16), T.tfloat32)
    B: T.Tensor((16, 32), T.tfloat32)
    C = T.empty((32, 32), T.float32)
    with T.Kernel(1, threads=128) as bx:
        a = T.alloc_shared((32, 16), T.tfloat32)
        b = T.alloc_shared((16, 32), T.tfloat32)
        c = T.alloc_fragment((32, 32), T.float32)
        T.copy(A, a)
        T.copy(B, b)
        T.clear(c)
        T.gemm(a, b, c)
        T.copy(c, C)
    return C
)";

TEST(CompatSmallOps, TFloat32IsFloat32StorageAndItsGemmRuns) {
  ir::Program p = MustCompile(kTf32Gemm);
  ASSERT_EQ(p.params.size(), 3u);
  EXPECT_EQ(p.params[0].buffer.dtype, ir::DType::kFloat32);
  CpuRun cpu;
  auto out = cpu.MustRun(kTf32Gemm, {}, {"A", "B", "C"});
  ASSERT_EQ(out["A"].size(), 512u);
  ASSERT_EQ(out["C"].size(), 1024u);
  for (int i = 0; i < 32; ++i) {
    for (int j = 0; j < 32; ++j) {
      double ref = 0;
      for (int k = 0; k < 16; ++k)
        ref += static_cast<double>(out["A"][i * 16 + k]) * out["B"][k * 32 + j];
      // TF32 keeps 10 mantissa bits: each product is off by about 2^-10 relative.
      EXPECT_NEAR(out["C"][i * 32 + j], ref, 16 * 2e-3) << i << "," << j;
    }
  }
}

// ---------------------------------------------------------------------------
// 4. Diagnostics: TileLang names Kiln lacks, parameters left unbound.

// A kernel whose T.Parallel body line is `stmt` (line 10, column 13).
std::string InKernel(const std::string& stmt) {
  return absl::StrCat(R"(import tilelang
import tilelang.language as T


@tilelang.jit
def f(A, block_M=None, block_N=32):
    A: T.Tensor((64,), T.float32)
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(64):
            )",
                      stmt, "\n");
}

TEST(CompatDiagnostics, TileLangNamesKilnLacks) {
  struct Case {
    std::string stmt;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"T.gemm_sp(A, A, A)", "t.py:10:13: 'T.gemm_sp' is not supported by Kiln yet"},
      {"T.rng_init(1, 0, i)", "t.py:10:13: 'T.rng_init' is not supported by Kiln yet"},
      {"A[i] = T.rng_rand()", "t.py:10:20: 'T.rng_rand' is not supported by Kiln yet"},
      {"T.sync_warp()", "t.py:10:13: 'T.sync_warp' is not supported by Kiln yet"},
      {"t = T.get_block_binding(0)",
       "t.py:10:17: 'T.get_block_binding' is not supported by Kiln yet; use the block variables "
       "of 'with T.Kernel(...) as (bx, by)'"},
      {"T.tcgen05_mma_arrive(A)",
       "t.py:10:13: 'T.tcgen05_mma_arrive' is not supported by Kiln yet; Blackwell tcgen05/TMEM "
       "needs an sm_100 target, which Kiln does not have yet"},
      {"A[i] = T.cast(A[i], T.int4)", "t.py:10:33: dtype 'T.int4' is not supported by Kiln yet"},
      {"A[i] = T.frobnicate(A[i])",
       "t.py:10:20: 'T.frobnicate' is not supported (unknown TileLang name)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.stmt);
    EXPECT_EQ(ErrorOf(InKernel(c.stmt), {{"block_M", "16"}}), c.message);
  }
}

TEST(CompatDiagnostics, UnboundParameterIsNamed) {
  struct Case {
    std::string stmt;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"A[i] = A[i] * block_M",
       "t.py:10:20: parameter 'block_M' has no binding (its default is None)"},
      {"A[i] = block_N * block_M",
       "t.py:10:20: parameter 'block_M' has no binding (its default is None)"},
      {"A[i] = -block_M", "t.py:10:20: parameter 'block_M' has no binding (its default is None)"},
      {"A[i] = A[i] if block_M > 4 else 0.0",
       "t.py:10:28: parameter 'block_M' has no binding (its default is None)"},
      {"s = T.alloc_fragment((block_M, 4), T.float32)",
       "t.py:10:34: parameter 'block_M' has no binding (its default is None)"},
      {"A[i] = T.max(A[i], block_M)",
       "t.py:10:32: parameter 'block_M' has no binding (its default is None)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.stmt);
    EXPECT_EQ(ErrorOf(InKernel(c.stmt)), c.message);
  }
  // Where a builtin, T.Kernel or a loop refuses the None.
  auto kernel_with = [](const std::string& lines) {
    return absl::StrCat("import tilelang\nimport tilelang.language as T\n\n\n@tilelang.jit\n"
                        "def f(A, block_M=None):\n    A: T.Tensor((64,), T.float32)\n",
                        lines);
  };
  const std::vector<Case> sites = {
      {"    with T.Kernel(T.ceildiv(64, block_M), threads=32) as bx:\n        pass\n",
       "t.py:8:33: parameter 'block_M' has no binding (its default is None)"},
      {"    with T.Kernel(1, threads=block_M) as bx:\n        pass\n",
       "t.py:8:30: parameter 'block_M' has no binding (its default is None)"},
      {"    with T.Kernel(block_M, threads=32) as bx:\n        pass\n",
       "t.py:8:19: parameter 'block_M' has no binding (its default is None)"},
      {"    n = list(range(block_M))\n",
       "t.py:8:20: parameter 'block_M' has no binding (its default is None)"},
      {"    with T.Kernel(1, threads=32) as bx:\n        for k in T.Pipelined(block_M):\n"
       "            pass\n",
       "t.py:9:30: parameter 'block_M' has no binding (its default is None)"},
      {"    with T.Kernel(1, threads=32) as bx:\n        for k in T.Parallel(4, block_M):\n"
       "            pass\n",
       "t.py:9:32: parameter 'block_M' has no binding (its default is None)"},
  };
  for (const Case& c : sites) {
    SCOPED_TRACE(c.stmt);
    EXPECT_EQ(ErrorOf(kernel_with(c.stmt)), c.message);
  }
  // A None default that is tested, not used, stays legal.
  MustCompile(InKernel("A[i] = A[i] * (2 if block_M is None else block_M)"));
}

// ---------------------------------------------------------------------------
// 5. Dynamic parameters: an integer parameter whose value is only known at
// run time (the token count of a variable-length batch) compiled as a shape
// symbol (FrontendOptions::dynamic_params, kiln-opt/kiln-run --dynamic).

constexpr char kVarlen[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[1])
def scale_tokens(UQ, heads, block=16):
    @T.prim_func
    def main(X: T.Tensor((UQ, heads), T.float32), Y: T.Tensor((UQ, heads), T.float32)):
        with T.Kernel(T.ceildiv(UQ, block), threads=32) as bx:
            for i, j in T.Parallel(block, heads):
                if bx * block + i < UQ:
                    Y[bx * block + i, j] = X[bx * block + i, j] * 2.0
    return main
)";

absl::StatusOr<ir::Program> CompileDynamic(std::string_view src, const Bindings& binds,
                                           std::vector<std::string> dynamic) {
  FrontendOptions o;
  o.file_name = "t.py";
  for (const auto& [k, v] : binds) o.bindings.emplace_back(k, ParseBindingText(v));
  o.dynamic_params = std::move(dynamic);
  return CompileSource(src, o);
}

TEST(CompatDynamicParams, UnboundTokenCountBecomesAShapeSymbol) {
  absl::StatusOr<ir::Program> p = CompileDynamic(kVarlen, {{"heads", "4"}}, {"UQ"});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(ir::Verify(*p).ok());
  ASSERT_EQ(p->symbols.size(), 1u);
  EXPECT_EQ(ir::UserName(p->symbols[0]), "UQ");
  ASSERT_EQ(p->kernel.grid.size(), 1u);
  EXPECT_THAT(P(p->kernel.grid[0]), HasSubstr(p->symbols[0].name));
  // Without --dynamic the parameter is still a required binding.
  EXPECT_THAT(ErrorOf(kVarlen, {{"heads", "4"}}),
              HasSubstr("parameter 'UQ' has no binding and no default"));
}

TEST(CompatDynamicParams, RunsOnTheCpuWithTheValueGivenAtLaunch) {
  CpuRun cpu;
  auto out = cpu.MustRun(kVarlen, {{"UQ", "37"}, {"heads", "4"}}, {"X", "Y"},
                         {.entry = "", .dynamic = {"UQ"}});
  ASSERT_EQ(out["X"].size(), 148u);
  ASSERT_EQ(out["Y"].size(), 148u);
  for (size_t k = 0; k < 148; ++k) EXPECT_EQ(out["Y"][k], out["X"][k] * 2.0f) << k;
}

TEST(CompatDynamicParams, Errors) {
  auto error = [](const Bindings& binds, std::vector<std::string> dynamic) {
    absl::StatusOr<ir::Program> p = CompileDynamic(kVarlen, binds, std::move(dynamic));
    EXPECT_FALSE(p.ok());
    return p.ok() ? std::string() : std::string(p.status().message());
  };
  EXPECT_THAT(error({{"UQ", "8"}, {"heads", "4"}}, {"UQ"}),
              HasSubstr("t.py:6:18: parameter 'UQ' is both bound and named dynamic"));
  EXPECT_THAT(error({{"UQ", "8"}, {"heads", "4"}}, {"nope"}),
              HasSubstr("dynamic parameter 'nope' is neither an integer parameter nor a "
                        "shape symbol of 'scale_tokens'"));
  // A value the kernel needs at compile time: a shared-memory tile's size.
  constexpr char kTiled[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[1])
def tiled(N, block=16):
    @T.prim_func
    def main(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            S = T.alloc_shared((block,), T.float32)
            T.copy(X[bx * block], S)
            T.copy(S, Y[bx * block])
    return main
)";
  ASSERT_TRUE(CompileDynamic(kTiled, {{"block", "16"}}, {"N"}).ok());
  absl::StatusOr<ir::Program> tiled = CompileDynamic(kTiled, {{"N", "64"}}, {"block"});
  ASSERT_TRUE(tiled.ok()) << tiled.status(); // verify-resources refuses it, located
  passes::PassContext ctx;
  ctx.target = "cuda:sm_90";
  EXPECT_THAT(passes::RunPasses(*tiled, {"verify-resources"}, ctx).message(),
              HasSubstr("t.py:10:17: shared.dyn buffer 'S' needs a constant shape"));
  // A tensor parameter of the @tilelang.jit form cannot be dynamic.
  constexpr char kJit[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def double(A, N):
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] * 2.0
    return B
)";
  absl::StatusOr<ir::Program> jit = CompileDynamic(kJit, {{"N", "8"}}, {"A"});
  ASSERT_FALSE(jit.ok());
  EXPECT_THAT(jit.status().message(), HasSubstr("t.py:6:12: parameter 'A' is a tensor"));
}

} // namespace
} // namespace kiln::frontend
