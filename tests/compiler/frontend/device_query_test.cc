// Build-time device queries (issue 30): TileLang programs ask the device for
// its SM count, compute capability and name while the kernel is built.
// Kiln answers from the compile target's model (DeviceModelForTarget), in
// the frontend and through the compile driver, and refuses on the CPU target
// with a located error that names the target to pass.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/driver/compile_driver.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::frontend {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<ir::Program> Compile(std::string_view src, std::string_view target,
                                    const std::vector<std::pair<std::string, std::string>>& binds) {
  FrontendOptions o;
  o.file_name = "t.py";
  o.device = DeviceModelForTarget(target);
  for (const auto& [k, v] : binds) o.bindings.emplace_back(k, ParseBindingText(v));
  return CompileSource(src, o);
}

ir::Program MustCompile(std::string_view src, std::string_view target,
                        const std::vector<std::pair<std::string, std::string>>& binds = {}) {
  absl::StatusOr<ir::Program> p = Compile(src, target, binds);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return ir::Program();
  absl::Status v = ir::Verify(*p);
  EXPECT_TRUE(v.ok()) << v << "\n" << ir::PrintProgram(*p);
  return *std::move(p);
}

std::string ErrorOf(std::string_view src, std::string_view target,
                    const std::vector<std::pair<std::string, std::string>>& binds = {}) {
  absl::StatusOr<ir::Program> p = Compile(src, target, binds);
  EXPECT_FALSE(p.ok()) << ir::PrintProgram(*p);
  return p.ok() ? "" : std::string(p.status().message());
}

// Every form the TileLang examples use: carver's driver (imported and by its
// full path), torch.cuda.get_device_properties(...) with an index, a
// torch.device and no argument, get_device_capability with and without
// current_device(), get_device_name, is_available. The grid is the SM count;
// the threads and the scale come from the capability.
constexpr char kPersistent[] = R"(import torch
import tilelang
import tilelang.language as T
from tilelang.carver.arch import driver


@tilelang.jit
def persistent(A):
    N = T.const("N")
    sm_num = driver.get_num_sms()
    props = torch.cuda.get_device_properties(torch.device("cuda:0"))
    assert props.multi_processor_count == sm_num == tilelang.carver.arch.driver.get_num_sms()
    assert torch.cuda.get_device_properties(0).multi_processor_count == sm_num
    assert torch.cuda.get_device_properties().major == torch.cuda.get_device_capability()[0]
    major, minor = torch.cuda.get_device_capability(torch.cuda.current_device())
    assert (props.major, props.minor) == (major, minor)
    assert torch.cuda.is_available() and torch.cuda.get_device_name(0) == props.name
    assert props.name.startswith("NVIDIA") and props.shared_memory_per_block_optin > 48 * 1024
    threads = 128 if major >= 9 else 64
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(sm_num, threads=threads) as bx:
        for i in T.Parallel(threads):
            if bx * threads + i < N:
                B[bx * threads + i] = A[bx * threads + i] * (major * 10 + minor)
    return B
)";

TEST(DeviceQuery, HopperTargetsAnswerAsAnH100) {
  for (std::string_view target : {"cuda:sm_90", "cuda:sm_90a"}) {
    ir::Program p = MustCompile(kPersistent, target, {{"N", "1000"}});
    ASSERT_EQ(p.kernel.grid.size(), 1u) << target;
    EXPECT_EQ(ir::PrintExpr(p.kernel.grid[0]), "132") << target;
    EXPECT_THAT(p.kernel.threads, ElementsAre(128)) << target;
    EXPECT_THAT(ir::PrintProgram(p), HasSubstr("* 90.0")) << target;
  }
}

TEST(DeviceQuery, EachCudaTargetHasItsOwnModel) {
  struct Case {
    std::string_view target;
    std::string grid;
    int64_t threads;
    std::string scale;
  };
  for (const Case& c :
       {Case{"cuda:sm_80", "108", 64, "* 80.0"}, Case{"cuda:sm_86", "84", 64, "* 86.0"},
        Case{"cuda:sm_89", "142", 64, "* 89.0"}}) {
    ir::Program p = MustCompile(kPersistent, c.target, {{"N", "1000"}});
    ASSERT_EQ(p.kernel.grid.size(), 1u) << c.target;
    EXPECT_EQ(ir::PrintExpr(p.kernel.grid[0]), c.grid) << c.target;
    EXPECT_THAT(p.kernel.threads, ElementsAre(c.threads)) << c.target;
    EXPECT_THAT(ir::PrintProgram(p), HasSubstr(c.scale)) << c.target;
  }
}

TEST(DeviceQuery, ModelTable) {
  DeviceModel h100 = DeviceModelForTarget("cuda:sm_90");
  EXPECT_TRUE(h100.known);
  EXPECT_EQ(h100.target, "cuda:sm_90");
  EXPECT_EQ(h100.sm_count, 132);
  EXPECT_EQ(h100.cc_major, 9);
  EXPECT_EQ(h100.cc_minor, 0);
  EXPECT_EQ(h100.shared_memory_per_block, 48 * 1024);
  EXPECT_EQ(h100.shared_memory_per_block_optin, 232448);
  for (std::string_view t : {"cpu", "", "cuda:sm_70", "cuda", "hip:gfx942"}) {
    DeviceModel m = DeviceModelForTarget(t);
    EXPECT_FALSE(m.known) << t;
    EXPECT_EQ(m.target, t);
  }
}

// The compile driver (the daemon's path) fills the model from the target.
TEST(DeviceQuery, CompileDriverUsesTheTarget) {
  driver::ProgramInput in;
  in.text = kPersistent;
  in.file_name = "t.py";
  in.bindings.emplace_back("N", ParseBindingText("1000"));
  driver::BuildOptions options;
  options.target = "cuda:sm_80";
  absl::StatusOr<driver::Prepared> a100 = driver::Prepare(in, options);
  ASSERT_TRUE(a100.ok()) << a100.status();
  EXPECT_EQ(ir::PrintExpr(a100->program.kernel.grid[0]), "108");
  options.target = "cuda:sm_90";
  absl::StatusOr<driver::Prepared> h100 = driver::Prepare(in, options);
  ASSERT_TRUE(h100.ok()) << h100.status();
  EXPECT_EQ(ir::PrintExpr(h100->program.kernel.grid[0]), "132");
  EXPECT_NE(a100->key, h100->key);
  options.target = "cpu";
  absl::StatusOr<driver::Prepared> cpu = driver::Prepare(in, options);
  ASSERT_FALSE(cpu.ok());
  EXPECT_EQ(cpu.status().message(),
            "t.py:10:14: tilelang.carver.arch.driver.get_num_sms() asks for the device the "
            "kernel is built for, but target 'cpu' has no device; compile for a CUDA target "
            "(e.g. --target cuda:sm_90)");
}

TEST(DeviceQuery, CpuTargetIsRefusedWithALocation) {
  EXPECT_EQ(ErrorOf(kPersistent, "cpu", {{"N", "1000"}}),
            "t.py:10:14: tilelang.carver.arch.driver.get_num_sms() asks for the device the "
            "kernel is built for, but target 'cpu' has no device; compile for a CUDA target "
            "(e.g. --target cuda:sm_90)");
  constexpr char kCapability[] = R"(import torch
import tilelang
import tilelang.language as T


@tilelang.jit
def f(n):
    ok = not torch.cuda.is_available()
    major, minor = torch.cuda.get_device_capability()
)";
  EXPECT_EQ(ErrorOf(kCapability, "", {{"n", "1"}}),
            "t.py:9:20: torch.cuda.get_device_capability() asks for the device the kernel is "
            "built for, but this compile names no target; compile for a CUDA target (e.g. "
            "--target cuda:sm_90)");
}

TEST(DeviceQuery, BadArgumentsAndAttributes) {
  constexpr char kBadDevice[] = R"(import torch
import tilelang
import tilelang.language as T


@tilelang.jit
def f(n):
    props = torch.cuda.get_device_properties("cpu")
)";
  EXPECT_EQ(ErrorOf(kBadDevice, "cuda:sm_90", {{"n", "1"}}),
            "t.py:8:46: torch.cuda.get_device_properties() needs a CUDA device (an index >= 0, "
            "'cuda' or 'cuda:N'), got 'cpu'");
  constexpr char kBadAttr[] = R"(import torch
import tilelang
import tilelang.language as T


@tilelang.jit
def f(n):
    x = torch.cuda.get_device_properties(0).clock_rate
)";
  EXPECT_THAT(ErrorOf(kBadAttr, "cuda:sm_90", {{"n", "1"}}),
              HasSubstr("t.py:8:9: device properties have no attribute 'clock_rate' in Kiln's "
                        "device model (it has multi_processor_count, "));
  constexpr char kBadTorchDevice[] = R"(import torch
import tilelang
import tilelang.language as T


@tilelang.jit
def f(n):
    d = torch.device("cuda", "x")
)";
  EXPECT_EQ(ErrorOf(kBadTorchDevice, "cuda:sm_90", {{"n", "1"}}),
            "t.py:8:30: torch.device(type, index) needs type 'cuda' and an integer index");
}

} // namespace
} // namespace kiln::frontend
