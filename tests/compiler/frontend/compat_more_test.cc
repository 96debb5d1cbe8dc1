// TileLang compatibility of the frontend, continued (issue 30): buffer views
// (T.reshape, T.view), explicit block barriers (T.sync_threads), thread-bound
// loops (T.thread_binding), run-time assertions (assert, T.device_assert)
// and small parts of the Python subset (str.strip, several context managers
// in one `with`). Programs that reach execution run on the CPU target
// through the real kiln-run binary and their outputs are checked.
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/cxx_emitter.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/hash.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/proto_convert.h"
#include "compiler/ir/text_parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/tools/npy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cpu_run.h"
#include "tests/support/example_loader.h"
#include "tests/support/frontend_compile.h"
#include "util/subprocess.h"

namespace kiln::frontend {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

using testing::Bindings;
using testing::Compile;
using testing::CpuResult;
using testing::CpuRun;
using testing::MustCompile;

// The whole message of a compile that must fail.
std::string ErrorOf(std::string_view src, const Bindings& binds = {}) {
  absl::StatusOr<ir::Program> p = Compile(src, binds);
  EXPECT_FALSE(p.ok()) << ir::PrintProgram(*p);
  return p.ok() ? "" : std::string(p.status().message());
}

// ---------------------------------------------------------------------------
// 1. T.reshape / T.view: another shape over the same storage.

// A shared buffer split (M, 4N) -> (M, N, 4) and written through the view,
// a fragment read through a view, a global tensor flattened and read, an
// output written through a flat view, and an identity view as a T.copy
// operand.
constexpr char kReshape[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def reshape_kernel(A):
    M, N = T.const("M, N")
    A: T.Tensor((M, N * 4), T.float32)
    B = T.empty((M, N * 4), T.float32)
    C = T.empty((M, N), T.float32)
    D = T.empty((M, N * 4), T.float32)
    with T.Kernel(1, threads=64) as bx:
        a_shared = T.alloc_shared((M, N * 4), T.float32)
        s = T.alloc_fragment((M, N * 4), T.float32)
        T.copy(A, a_shared)
        a3 = T.reshape(a_shared, (M, N, 4))
        for i, j, k in T.Parallel(M, N, 4):
            a3[i, j, k] = a3[i, j, k] * (k + 1)
        T.copy(a_shared, s)
        s3 = T.reshape(s, [M, N, 4])
        for i, j in T.Parallel(M, N * 4):
            B[i, j] = s3[i, j // 4, j % 4]
        flat = T.reshape(A, (M * N * 4,))
        cv = T.view(C, shape=(M * N,))
        for i in T.Parallel(M * N):
            cv[i] = flat[i * 4]
        d = T.view(D)
        T.copy(A, d)
    return B, C, D
)";

TEST(CompatViews, AccessesAreRewrittenToTheViewedBuffer) {
  ir::Program p = MustCompile(kReshape, {{"M", "4"}, {"N", "8"}});
  std::string text = ir::PrintProgram(p);
  // No view is allocated; its accesses name the viewed buffer.
  EXPECT_THAT(text, Not(HasSubstr("a3")));
  EXPECT_THAT(text, Not(HasSubstr("cv")));
  EXPECT_THAT(text, HasSubstr("a_shared[i, j * 4 + k] = a_shared[i, j * 4 + k]"));
  EXPECT_THAT(text, HasSubstr("C[i_2 // 8, i_2 % 8] = A[i_2 * 4 // 32, i_2 * 4 % 32]"));
  EXPECT_THAT(text, HasSubstr("copy A[0 +: 4, 0 +: 32] -> D[0 +: 4, 0 +: 32]"));
}

TEST(CompatViews, RunOnTheCpu) {
  CpuRun cpu;
  auto out = cpu.MustRun(kReshape, {{"M", "4"}, {"N", "8"}}, {"A", "B", "C", "D"});
  const std::vector<float>& a = out["A"];
  ASSERT_EQ(a.size(), 128u);
  ASSERT_EQ(out["B"].size(), 128u);
  ASSERT_EQ(out["C"].size(), 32u);
  ASSERT_EQ(out["D"].size(), 128u);
  for (size_t k = 0; k < 128; ++k) {
    EXPECT_EQ(out["B"][k], a[k] * static_cast<float>(k % 4 + 1)) << k;
    EXPECT_EQ(out["D"][k], a[k]) << k;
  }
  for (size_t m = 0; m < 4; ++m) {
    for (size_t n = 0; n < 8; ++n) EXPECT_EQ(out["C"][m * 8 + n], a[m * 32 + 4 * n]) << m << n;
  }
}

// (4, 6) read as (3, 8): one group of 24 elements, divided on both sides.
constexpr char kRegroup[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def regroup(A):
    A: T.Tensor((4, 6), T.float32)
    D = T.empty((3, 8), T.float32)
    with T.Kernel(1, threads=32) as bx:
        f = T.alloc_fragment((4, 6), T.float32)
        T.copy(A, f)
        v = T.reshape(T.view(f, (24,)), (3, 8))
        g = T.alloc_fragment((3, 8), T.float32)
        for i, j in T.Parallel(3, 8):
            g[i, j] = v[i, j] + 1.0
        T.copy(g, D)
    return D
)";

TEST(CompatViews, RegroupedFragmentReadRunsOnTheCpu) {
  CpuRun cpu;
  auto out = cpu.MustRun(kRegroup, {}, {"A", "D"});
  ASSERT_EQ(out["A"].size(), 24u);
  ASSERT_EQ(out["D"].size(), 24u);
  for (size_t k = 0; k < 24; ++k) EXPECT_EQ(out["D"][k], out["A"][k] + 1.0f) << k;
}

// A view's shape with extents known only at run time: [Q, H] is [Q * H].
TEST(CompatViews, SymbolicExtentsGroupByFactors) {
  constexpr char kSrc[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def sym(A):
    Q, H = T.const("Q, H")
    A: T.Tensor((4, Q * H), T.float32)
    B = T.empty((4, Q, H), T.float32)
    with T.Kernel(1, threads=32) as bx:
        a = T.reshape(A, (4, Q, H))
        for i, j, k in T.Parallel(4, Q, H):
            B[i, j, k] = a[i, j, k]
    return B
)";
  ir::Program p = MustCompile(kSrc);
  EXPECT_THAT(ir::PrintProgram(p), HasSubstr("= A[i, j * H + k]"));
}

// A view over a base with the error located at the view's call.
std::string ViewProgram(const std::string& alloc, const std::string& body) {
  return absl::StrCat("import tilelang\nimport tilelang.language as T\n\n\n@tilelang.jit\n"
                      "def f(A):\n    A: T.Tensor((8, 8), T.float32)\n"
                      "    with T.Kernel(1, threads=32) as bx:\n        x = ",
                      alloc, "\n", body);
}

TEST(CompatViews, Errors) {
  const std::string shared = "T.alloc_shared((8, 8), T.float16)";
  EXPECT_THAT(ErrorOf(ViewProgram(shared, "        v = T.reshape(x, (8, 9))\n")),
              HasSubstr("t.py:10:13: T.reshape(): shape [8, 9] does not hold the same number of "
                        "elements as 'x' [8, 8]"));
  EXPECT_THAT(ErrorOf(ViewProgram(shared, "        v = T.view(x, (32,), dtype=T.float32)\n")),
              HasSubstr("t.py:10:13: T.view() as float32 of 'x' (float16) reinterprets its bytes, "
                        "which Kiln does not support yet"));
  EXPECT_THAT(ErrorOf(ViewProgram(shared, "        v = T.reshape(x, (64,))\n"
                                          "        T.clear(v)\n")),
              HasSubstr("t.py:11:17: T.clear on 'v', a view of 'x' with another shape"));
  EXPECT_THAT(ErrorOf(ViewProgram("T.alloc_var(T.int32)", "        v = T.reshape(x, (1,))\n")),
              HasSubstr("t.py:10:23: T.reshape() expects a buffer, got symbolic int32 expression"));
  EXPECT_THAT(ErrorOf(ViewProgram("T.alloc_fragment((8, 8), T.float32)",
                                  "        v = T.reshape(x, (64,))\n"
                                  "        for i in T.Parallel(64):\n"
                                  "            v[i] = 1.0\n")),
              HasSubstr("t.py:12:13: store through 'v', a reshaped view of fragment 'x', is not "
                        "supported"));
  EXPECT_THAT(ErrorOf(ViewProgram(shared, "        v = T.reshape(x)\n")), HasSubstr("shape"));
}

// ---------------------------------------------------------------------------
// 2. T.thread_binding and T.sync_threads.

// Both forms of T.thread_binding (an expression, a loop) and both barriers:
// the block's, and a named one of the 64 threads that take a branch. The
// results depend on each barrier: each thread reads what others wrote.
constexpr char kThreads[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def threads(A):
    A: T.Tensor((128,), T.float32)
    B = T.empty((128,), T.float32)
    C = T.empty((64,), T.float32)
    with T.Kernel(1, threads=128) as bx:
        s = T.alloc_shared((128,), T.float32)
        tx = T.thread_binding(0, 128, thread="threadIdx.x")
        s[tx] = A[tx] * 2.0
        T.sync_threads()
        B[tx] = s[127 - tx]
        T.sync_threads()
        for t in T.thread_binding(128, "threadIdx.x"):
            if t < 64:
                s[t] = s[t] + s[t + 64]
                T.sync_threads(1, 64)
                C[t] = s[63 - t]
    return B, C
)";

TEST(CompatThreads, ThreadBindingIsTheThreadIndexAndBarriersAreCalls) {
  ir::Program p = MustCompile(kThreads);
  std::string text = ir::PrintProgram(p);
  EXPECT_THAT(text, HasSubstr("s[thread_idx(0)] = A[thread_idx(0)] * 2.0\n"
                              "    call sync_threads()\n"));
  EXPECT_THAT(text, HasSubstr("if thread_idx(0) < 64 {"));
  EXPECT_THAT(text, HasSubstr("call named_barrier_sync(1, 64)"));
  EXPECT_THAT(text, Not(HasSubstr("for t"))); // the loop body runs once per thread
}

TEST(CompatThreads, ExplicitBarriersReplaceTheLoweringsOwn) {
  // Lowering adds no barrier where the program has one (none inside the
  // branch only 64 threads take, where a block barrier would hang).
  ir::Program p = MustCompile(kThreads);
  absl::Status lowered = passes::RunPasses(p, {"layout-inference", "lower-tile-ops"});
  ASSERT_TRUE(lowered.ok()) << lowered;
  std::string text = ir::PrintProgram(p);
  EXPECT_THAT(text, Not(HasSubstr("sync_threads()\n    call sync_threads()")));
  size_t branch = text.find("if thread_idx(0) < 64 {");
  ASSERT_NE(branch, std::string::npos);
  EXPECT_EQ(text.find("call sync_threads()", branch), std::string::npos) << text;
}

TEST(CompatThreads, RunOnTheCpu) {
  CpuRun cpu;
  auto out = cpu.MustRun(kThreads, {}, {"A", "B", "C"});
  const std::vector<float>& a = out["A"];
  ASSERT_EQ(a.size(), 128u);
  ASSERT_EQ(out["B"].size(), 128u);
  ASSERT_EQ(out["C"].size(), 64u);
  for (size_t k = 0; k < 128; ++k) EXPECT_EQ(out["B"][k], a[127 - k] * 2.0f) << k;
  for (size_t t = 0; t < 64; ++t) {
    EXPECT_EQ(out["C"][t], a[63 - t] * 2.0f + a[127 - t] * 2.0f) << t;
  }
}

std::string ThreadsProgram(const std::string& body) {
  return absl::StrCat("import tilelang\nimport tilelang.language as T\n\n\n@tilelang.jit\n"
                      "def f(A):\n    A: T.Tensor((128,), T.float32)\n"
                      "    with T.Kernel(1, threads=128) as bx:\n",
                      body);
}

TEST(CompatThreads, Errors) {
  EXPECT_THAT(
      ErrorOf(ThreadsProgram("        t = T.thread_binding(0, 64, thread=\"threadIdx.x\")\n")),
      HasSubstr("t.py:9:13: T.thread_binding over threadIdx.x with extent 64, but the "
                "kernel has 128 threads along it"));
  EXPECT_THAT(
      ErrorOf(ThreadsProgram("        t = T.thread_binding(0, 4, thread=\"threadIdx.y\")\n")),
      HasSubstr("t.py:9:13: T.thread_binding over threadIdx.y, but the kernel's thread "
                "block is 1-d"));
  EXPECT_THAT(
      ErrorOf(ThreadsProgram("        t = T.thread_binding(0, 4, thread=\"blockIdx.x\")\n")),
      HasSubstr("T.thread_binding over blockIdx.x is not supported; use the block "
                "variables"));
  EXPECT_THAT(ErrorOf(ThreadsProgram("        t = T.thread_binding(0, 128)\n")),
              HasSubstr("T.thread_binding needs thread=\"threadIdx.x\""));
  EXPECT_THAT(ErrorOf(ThreadsProgram("        T.sync_threads(1, 48)\n")),
              HasSubstr("t.py:9:27: T.sync_threads: arrive_count must be a positive multiple of "
                        "32 of at most the block's 128 threads, got 48"));
  EXPECT_THAT(ErrorOf(ThreadsProgram("        T.sync_threads(16)\n")),
              HasSubstr("t.py:9:24: T.sync_threads: barrier_id must be a compile-time integer "
                        "in [0, 15]"));
  EXPECT_THAT(ErrorOf("import tilelang.language as T\n\n\n@T.prim_func\ndef f():\n"
                      "    T.sync_threads()\n"),
              HasSubstr("T.sync_threads"));
}

// ---------------------------------------------------------------------------
// 3. assert on values known at run time, and T.device_assert.

// A host-level assert on a parameter compiled as a launch-time symbol (it
// moves to the start of the kernel), and a device check on loaded data.
constexpr char kChecked[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def checked(A, N, limit):
    assert N % 4 == 0, "N must be a multiple of 4"
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(1, threads=32) as bx:
        for i in T.serial(N // 32):
            T.device_assert(A[i * 32 + bx] < limit, "value over the limit")
        T.device_assert(N > 0)
        for i in T.Parallel(64):
            if i < N:
                B[i] = A[i] + 1.0
    return B
)";

absl::StatusOr<ir::Program> CompileDynamic(std::string_view src, const Bindings& binds,
                                           const std::vector<std::string>& dynamic) {
  FrontendOptions o;
  o.file_name = "t.py";
  for (const auto& [k, v] : binds) o.bindings.emplace_back(k, ParseBindingText(v));
  o.dynamic_params = dynamic;
  return CompileSource(src, o);
}

TEST(CompatAssert, RunTimeAssertsBecomeChecksInTheKernel) {
  absl::StatusOr<ir::Program> p = CompileDynamic(kChecked, {{"limit", "2.0"}}, {"N"});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(ir::Verify(*p).ok()) << ir::Verify(*p);
  std::string text = ir::PrintProgram(*p);
  // The host assert is the kernel's first statement.
  EXPECT_THAT(text, HasSubstr("as (bx) {\n    assert N % 4 == 0, \"assert at line 7 failed: N must "
                              "be a multiple of 4\"\n"));
  EXPECT_THAT(text, HasSubstr("assert A[i * 32 + bx] < 2.0, \"T.device_assert at line 12 failed: "
                              "value over the limit\""));
  EXPECT_THAT(text, HasSubstr("assert N > 0, \"T.device_assert at line 13 failed\""));
  // A bound N decides the assert at compile time: no check is left.
  ir::Program bound = MustCompile(kChecked, {{"N", "64"}, {"limit", "2.0"}});
  EXPECT_THAT(ir::PrintProgram(bound), Not(HasSubstr("assert N")));
  EXPECT_THAT(ErrorOf(kChecked, {{"N", "62"}, {"limit", "2.0"}}),
              HasSubstr("t.py:7:5: assertion failed: N must be a multiple of 4"));
}

TEST(CompatAssert, TextAndProtoRoundTrip) {
  absl::StatusOr<ir::Program> p = CompileDynamic(kChecked, {{"limit", "2.0"}}, {"N"});
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string text = ir::PrintProgram(*p, {.locations = true});
  absl::StatusOr<ir::Program> parsed = ir::ParseProgramText(text, "t.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(ir::PrintProgram(*parsed, {.locations = true}), text);
  absl::StatusOr<v1::Program> wire = ir::ToProto(*p);
  ASSERT_TRUE(wire.ok()) << wire.status();
  absl::StatusOr<ir::Program> back = ir::FromProto(*wire);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ir::PrintProgram(*back, {.locations = true}), text);
  // The message is part of the key.
  ir::Program other = *p;
  other.kernel.body[0].message = "another message";
  EXPECT_NE(ir::ProgramKey(*p), ir::ProgramKey(other));
}

TEST(CompatAssert, VerifierAndWireRefuseBadChecks) {
  absl::StatusOr<ir::Program> p = CompileDynamic(kChecked, {{"limit", "2.0"}}, {"N"});
  ASSERT_TRUE(p.ok()) << p.status();
  ir::Program bad_message = *p;
  bad_message.kernel.body[0].message = "line\nbreak";
  EXPECT_THAT(std::string(ir::Verify(bad_message).message()),
              HasSubstr("assert message must be printable ASCII of at most 256 bytes"));
  ir::Program long_message = *p;
  long_message.kernel.body[0].message = std::string(257, 'x');
  EXPECT_FALSE(ir::Verify(long_message).ok());
  ir::Program not_bool = *p;
  not_bool.kernel.body[0].cond = ir::IntImm(1, ir::DType::kInt32);
  EXPECT_THAT(std::string(ir::Verify(not_bool).message()), HasSubstr("assert condition"));
  absl::StatusOr<v1::Program> wire = ir::ToProto(*p);
  ASSERT_TRUE(wire.ok()) << wire.status();
  v1::Program tampered = *wire;
  tampered.mutable_kernel()->mutable_body(0)->set_message("quote \" and \\ are fine, \x01 is not");
  EXPECT_THAT(std::string(ir::FromProto(tampered).status().message()),
              HasSubstr("message must be printable ASCII"));
  v1::Program no_cond = *wire;
  no_cond.mutable_kernel()->mutable_body(0)->clear_cond();
  EXPECT_THAT(std::string(ir::FromProto(no_cond).status().message()), HasSubstr("without cond"));
}

TEST(CompatAssert, ChecksRunOnTheCpu) {
  CpuRun cpu;
  // Passing checks: the kernel's result.
  CpuResult ok = cpu.Run(kChecked, {{"N", "64"}, {"limit", "2.0"}}, {"A", "B"});
  ASSERT_TRUE(ok.success) << ok.stderr_data;
  ASSERT_EQ(ok.arrays["B"].size(), 64u);
  for (size_t k = 0; k < 64; ++k) EXPECT_EQ(ok.arrays["B"][k], ok.arrays["A"][k] + 1.0f) << k;
  // Inputs are in [-1, 1): every element is over a limit of -1.
  CpuResult over = cpu.Run(kChecked, {{"N", "64"}, {"limit", "-1.0"}}, {});
  EXPECT_FALSE(over.success);
  EXPECT_THAT(over.stderr_data, HasSubstr("kernel check failed: T.device_assert at line 12 "
                                          "failed: value over the limit"));
}

// kiln-run with N dynamic: the launch-time value fails the host assert.
TEST(CompatAssert, HostAssertFailsAtLaunchOnTheCpu) {
  fs::path dir = fs::temp_directory_path() / absl::StrCat("kiln-compat-assert-", getpid());
  fs::create_directories(dir);
  std::ofstream((dir / "k.py").string()) << kChecked;
  auto run = [&](const std::string& n) {
    std::vector<std::string> args = {std::string(KILN_BINARY_DIR) + "/kiln-run",
                                     (dir / "k.py").string(),
                                     "--target",
                                     "cpu",
                                     "--quiet",
                                     "--dynamic",
                                     "N",
                                     "--bind",
                                     "N=" + n,
                                     "--bind",
                                     "limit=2.0"};
    return util::RunSubprocess(args, util::SubprocessOptions{});
  };
  absl::StatusOr<util::SubprocessResult> good = run("64");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_TRUE(good->success()) << good->stderr_data;
  absl::StatusOr<util::SubprocessResult> bad = run("62");
  ASSERT_TRUE(bad.ok()) << bad.status();
  EXPECT_FALSE(bad->success());
  EXPECT_THAT(bad->stderr_data, HasSubstr("kernel check failed: assert at line 7 failed: N must "
                                          "be a multiple of 4"));
  fs::remove_all(dir);
}

TEST(CompatAssert, CodegenSpellsTheMessageInEscapes) {
  absl::StatusOr<ir::Program> p = CompileDynamic(kChecked, {{"limit", "2.0"}}, {"N"});
  ASSERT_TRUE(p.ok()) << p.status();
  // A message with C++ and format metacharacters reaches the source only
  // as octal escapes.
  p->kernel.body[0].message = "\"); system(\"x\"); // %s %n";
  ASSERT_TRUE(passes::RunPasses(*p, {"layout-inference", "lower-tile-ops"}).ok());
  absl::StatusOr<codegen::EmittedBody> body = codegen::EmitBody(*p);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_THAT(body->body, HasSubstr("kiln::rt::assert_fail(\"\\042\\051\\073\\040\\163"));
  EXPECT_THAT(body->body, Not(HasSubstr("system")));
}

TEST(CompatAssert, Errors) {
  EXPECT_THAT(ErrorOf("import tilelang.language as T\n\n\n@T.prim_func\ndef f():\n"
                      "    T.device_assert(1 > 0)\n"),
              HasSubstr("T.device_assert"));
  EXPECT_THAT(ErrorOf(ThreadsProgram("        T.device_assert(A)\n")),
              HasSubstr("t.py:9:25: T.device_assert expects a condition, got buffer"));
}

// ---------------------------------------------------------------------------
// 4. The Python subset: str.strip / lstrip / rstrip, and `with` statements
// that pair T.Kernel with TileLang's profiling ranges.

TEST(CompatPython, StripMethods) {
  constexpr char kSrc[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def f(A):
    name = "  Radeon RX \n".strip()
    assert name == "Radeon RX"
    assert "xxabcxx".strip("x") == "abc" and "xxabc".lstrip("x") == "abc"
    assert "abc  ".rstrip() == "abc" and "  abc".lstrip() == "abc" and "abc".strip(None) == "abc"
    assert "".strip() == "" and "xxx".strip("x") == ""
    A: T.Tensor((32,), T.float32)
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(32):
            A[i] = len(name) * 1.0
)";
  ir::Program p = MustCompile(kSrc);
  EXPECT_THAT(ir::PrintProgram(p), HasSubstr("A[i] = 9.0"));
  std::string src = kSrc;
  src.replace(src.find("\"xxabcxx\".strip(\"x\")"), 20, "\"xxabcxx\".strip(1)");
  EXPECT_THAT(ErrorOf(src), HasSubstr("t.py:9:12: strip() arg must be None or str, got int"));
}

// TileLang's iket example, unchanged but for the file layout: a profiling
// range next to T.Kernel and marks inside it.
constexpr char kIket[] = R"(import tilelang
import tilelang.language as T
from tilelang.tools.cuda import iket


def add_scale_with_iket(n: int, threads: int = 128, dtype=T.float32):
    @T.prim_func
    def main(
        A: T.Tensor((n,), dtype),
        B: T.Tensor((n,), dtype),
        Scale: T.Tensor((1,), dtype),
        C: T.Tensor((n,), dtype),
    ):
        with T.Kernel(T.ceildiv(n, threads), threads=threads) as bx, iket.range("block_total"):
            iket.mark("block_enter", payload=iket.payload(bx, dtype="int32"))
            for i in T.Parallel(threads):
                idx = bx * threads + i
                if idx < n:
                    iket.mark("load_inputs")
                    value = (A[idx] + B[idx]) * Scale[0]
                    C[idx] = value
            iket.mark("block_exit", payload=iket.payload(bx, dtype="int32"))

    return main
)";

TEST(CompatPython, ProfilingRangesAreNoOps) {
  ir::Program p = MustCompile(kIket, {{"n", "200"}});
  EXPECT_EQ(p.kernel.block_vars.size(), 1u);
  EXPECT_THAT(ir::PrintProgram(p), HasSubstr("C[bx * 128 + i] = (A[bx * 128 + i] + B[bx * 128 + "
                                             "i]) * Scale[0]"));
  CpuRun cpu;
  auto out = cpu.MustRun(kIket, {{"n", "200"}}, {"A", "B", "Scale", "C"});
  ASSERT_EQ(out["C"].size(), 200u);
  ASSERT_EQ(out["Scale"].size(), 1u);
  for (size_t k = 0; k < 200; ++k) {
    EXPECT_EQ(out["C"][k], (out["A"][k] + out["B"][k]) * out["Scale"][0]) << k;
  }
}

TEST(CompatPython, WithErrors) {
  auto with = [](const std::string& items) {
    return absl::StrCat("import tilelang\nimport tilelang.language as T\n"
                        "from tilelang.tools.cuda import iket\n\n\n@tilelang.jit\n"
                        "def f(A):\n    A: T.Tensor((32,), T.float32)\n    with ",
                        items, ":\n        A[0] = 1.0\n");
  };
  EXPECT_THAT(ErrorOf(with("T.Kernel(1) as bx, range(3)")),
              HasSubstr("t.py:9:29: a with statement may combine T.Kernel or T.ws only with no-op "
                        "context managers (iket.range), not a range"));
  EXPECT_THAT(ErrorOf(with("iket.range(\"a\"), iket.range(\"b\")")),
              HasSubstr("t.py:9:5: a with statement must have exactly one T.Kernel or T.ws"));
  EXPECT_THAT(ErrorOf(with("T.Kernel(1) as bx, iket.range(\"a\") as r")),
              HasSubstr("t.py:9:48: 'as' on a profiling range is not supported"));
  EXPECT_THAT(ErrorOf(with("T.Kernel(1) as bx, T.Kernel(2) as by")),
              HasSubstr("exactly one T.Kernel or T.ws"));
}

// print() while the kernel is built (TileLang's examples print the
// prim_func they made, e.g. blocksparse_attention's paged decode) is a no-op:
// the program is the same as without it, and its arguments are still
// evaluated (an error in them is still an error).
TEST(CompatPython, PrintIsANoOp) {
  constexpr char kPrinted[] = R"(import tilelang
import tilelang.language as T


@tilelang.jit
def kern(A, block):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    print("building", block, N)
    with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
        print(bx)
        for i in T.Parallel(block):
            A[bx * block + i] = A[bx * block + i] * 2.0
)";
  const Bindings binds = {{"N", "256"}, {"block", "64"}};
  std::string plain = kPrinted;
  for (const char* line : {"    print(\"building\", block, N)\n", "        print(bx)\n"}) {
    plain.erase(plain.find(line), std::string_view(line).size());
  }
  EXPECT_EQ(ir::PrintProgram(MustCompile(kPrinted, binds)),
            ir::PrintProgram(MustCompile(plain, binds)));
  std::string bad = kPrinted;
  bad.replace(bad.find("print(bx)"), 9, "print(nope)");
  EXPECT_THAT(ErrorOf(bad, binds), HasSubstr("name 'nope' is not defined"));
}

// The register hints of warp-specialized code (T.set_max_nreg, T.dec_max_nreg,
// T.inc_max_nreg, T.no_set_max_nreg, T.disable_warp_group_reg_alloc,
// T.annotate_producer_reg_dealloc, T.annotate_consumer_reg_alloc) are
// accepted and change nothing: Kiln plans the registers of its
// warp-specialized loops itself. Their arguments must be compile-time
// integers.
TEST(CompatHopper, RegisterHintsAreAcceptedAndChangeNothing) {
  const std::string src =
      kiln::testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/warp_specialize/gemm_ws_ring.py")
          .source;
  const Bindings binds = {{"M", "256"},       {"N", "256"},       {"K", "256"},
                          {"block_M", "128"}, {"block_N", "128"}, {"block_K", "64"}};
  const std::string producer = "            with T.ws(1):\n";
  const std::string consumer = "            with T.ws(0):\n                T.mbarrier_wait_parity";
  ASSERT_NE(src.find(producer), std::string::npos);
  ASSERT_NE(src.find(consumer), std::string::npos);
  const auto with_hints = [&](const std::string& p, const std::string& c) {
    std::string out = src;
    out.replace(out.find(producer), producer.size(), producer + "                " + p + "\n");
    const size_t at = out.find(consumer) + std::string("            with T.ws(0):\n").size();
    out.insert(at, "                " + c + "\n");
    return out;
  };
  const std::string plain = ir::PrintProgram(MustCompile(src, binds));
  for (const auto& [p, c] : std::vector<std::pair<std::string, std::string>>{
           {"T.annotate_producer_reg_dealloc()", "T.annotate_consumer_reg_alloc()"},
           {"T.annotate_producer_reg_dealloc(24)", "T.annotate_consumer_reg_alloc(240)"},
           {"T.dec_max_nreg(40)", "T.inc_max_nreg(232)"},
           {"T.set_max_nreg(40, 0)", "T.set_max_nreg(232, 1)"},
           {"T.no_set_max_nreg()", "T.disable_warp_group_reg_alloc()"}}) {
    SCOPED_TRACE(p);
    EXPECT_EQ(ir::PrintProgram(MustCompile(with_hints(p, c), binds)), plain);
  }
  EXPECT_THAT(ErrorOf(with_hints("T.annotate_producer_reg_dealloc(\"x\")",
                                 "T.annotate_consumer_reg_alloc()"),
                      binds),
              HasSubstr("T.annotate_producer_reg_dealloc takes compile-time integers"));
}

} // namespace
} // namespace kiln::frontend
