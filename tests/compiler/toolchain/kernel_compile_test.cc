// An emitted kernel through both CUDA toolchains: NVRTC in process and nvcc
// as a subprocess give a cubin with the launch symbol, and ptxas's resource
// report is parsed; a CPU kernel is refused.
#include <string>

#include "compiler/codegen/codegen.h"
#include "compiler/frontend/frontend.h"
#include "compiler/toolchain/kernel_compile.h"
#include "compiler/toolchain/resource_usage.h"
#include "gtest/gtest.h"
#include "tests/compiler/toolchain/cuda_test_util.h"
#include "tests/support/example_loader.h"

namespace kiln::toolchain {
namespace {

codegen::EmittedKernel Gemm(const std::string& target) {
  const kiln::testing::ExampleFile ex =
      kiln::testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/gemm/gemm.py");
  absl::StatusOr<ir::Program> program = frontend::CompileSource(ex.source, ex.Options(true));
  EXPECT_TRUE(program.ok()) << program.status();
  absl::StatusOr<codegen::EmittedKernel> kernel = codegen::LowerAndEmit(*program, target);
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  return *kernel;
}

class KernelCompileTest : public ::testing::TestWithParam<bool> {};

TEST_P(KernelCompileTest, CubinHasTheKernelAndItsResources) {
  if (!testing::CudaToolkitPresent()) GTEST_SKIP() << testing::kNoToolkit;
  KernelCompileOptions options;
  options.use_nvcc = GetParam();
  options.want_ptx = true;
  const codegen::EmittedKernel kernel = Gemm("cuda:sm_80");
  absl::StatusOr<CompileOutput> out = CompileCudaKernel(kernel, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->cubin.substr(0, 4), std::string("\x7f"
                                                 "ELF"));
  EXPECT_NE(out->ptx.find(".entry kiln_kernel"), std::string::npos);
  EXPECT_NE(out->ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos);
  EXPECT_NE(out->ptx.find("ldmatrix.sync.aligned"), std::string::npos);
  EXPECT_NE(out->ptx.find("cp.async"), std::string::npos);
  const ResourceUsage* usage = FindKernel(out->kernels, kernel.launch.symbol);
  ASSERT_NE(usage, nullptr) << out->log;
  EXPECT_GT(usage->registers, 16);
  EXPECT_EQ(usage->spill_store_bytes, 0);
}

INSTANTIATE_TEST_SUITE_P(NvrtcAndNvcc, KernelCompileTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "nvcc" : "nvrtc"; });

TEST(KernelCompile, RefusesACpuKernel) {
  const codegen::EmittedKernel kernel = Gemm("cpu");
  absl::StatusOr<CompileOutput> out = CompileCudaKernel(kernel);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("CPU"), std::string::npos);
}

} // namespace
} // namespace kiln::toolchain
