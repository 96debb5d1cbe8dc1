// GPU test (label gpu): the dlopen'ed CUDA driver wrapper. Where a GPU is
// attached, a vector add compiled by NVRTC for the device's architecture is
// loaded, launched (plainly and with over 48 KiB of dynamic shared memory,
// which needs the opt-in attribute) and checked; driver errors carry
// cuGetErrorName and cuGetErrorString. Without /dev/nvidiactl the GPU cases
// skip, and loading the driver must fail cleanly (NotFound / Unavailable).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <unistd.h>

#include "compiler/toolchain/nvrtc.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tuner/measure/cuda_driver.h"

namespace kiln::measure {
namespace {

using ::testing::HasSubstr;

bool GpuAttached() { return access("/dev/nvidiactl", F_OK) == 0; }

constexpr char kKernels[] = R"(
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Reverses each block's slice through `bytes` of dynamic shared memory.
extern "C" __global__ void reverse_smem(const float* in, float* out, int per_block) {
  extern __shared__ float tile[];
  const int base = blockIdx.x * per_block;
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) tile[i] = in[base + i];
  __syncthreads();
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) {
    out[base + i] = tile[per_block - 1 - i];
  }
}
)";

TEST(CudaDriverNoGpu, MissingLibraryIsNotFound) {
  absl::StatusOr<std::shared_ptr<CudaDriver>> driver =
      CudaDriver::Load("libkiln-no-such-cuda.so.1");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(driver.status().message(), HasSubstr("CUDA driver not found"));
}

TEST(CudaDriverNoGpu, LoadFailsCleanlyWithoutAGpu) {
  if (GpuAttached()) GTEST_SKIP() << "a GPU is attached";
  absl::StatusOr<std::shared_ptr<CudaDriver>> driver = CudaDriver::Load();
  ASSERT_FALSE(driver.ok());
  EXPECT_TRUE(absl::IsNotFound(driver.status()) || absl::IsUnavailable(driver.status()))
      << driver.status();
}

class CudaDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!GpuAttached()) GTEST_SKIP() << "no GPU attached (/dev/nvidiactl missing)";
    absl::StatusOr<std::shared_ptr<CudaDriver>> driver = CudaDriver::Load();
    ASSERT_TRUE(driver.ok()) << driver.status();
    driver_ = *driver;
    ASSERT_GE(driver_->device_count(), 1);
    absl::StatusOr<std::shared_ptr<Device>> device = Device::Open(driver_, 0);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = *device;
    const std::string arch = device_->properties().arch();
    const auto& archs = toolchain::SupportedCudaArchs();
    if (std::find(archs.begin(), archs.end(), arch) == archs.end()) {
      GTEST_SKIP() << "device architecture " << arch << " is not one Kiln compiles for";
    }
    toolchain::CudaCompileInput in;
    in.source = kKernels;
    in.program_name = "driver_test.cu";
    in.arch = arch;
    absl::StatusOr<toolchain::CompileOutput> out = toolchain::NvrtcCompile(in);
    if (!out.ok() && absl::IsFailedPrecondition(out.status())) {
      GTEST_SKIP() << out.status(); // no NVRTC on this GPU machine
    }
    ASSERT_TRUE(out.ok()) << out.status();
    cubin_ = out->cubin;
  }

  std::shared_ptr<CudaDriver> driver_;
  std::shared_ptr<Device> device_;
  std::string cubin_;
};

TEST_F(CudaDriverTest, ReportsDeviceProperties) {
  const DeviceProperties& p = device_->properties();
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.cc_major, 7);
  EXPECT_GT(p.multiprocessors, 0);
  EXPECT_EQ(p.max_shared_per_block, 48 * 1024);
  EXPECT_GE(p.max_shared_per_block_optin, p.max_shared_per_block);
  EXPECT_EQ(p.arch().rfind("sm_", 0), 0u);
  EXPECT_GT(driver_->version(), 11000);
  absl::StatusOr<std::shared_ptr<Device>> bad = Device::Open(driver_, driver_->device_count());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaDriverTest, LaunchesAVectorAdd) {
  absl::StatusOr<Module> module = Module::Load(device_, cubin_);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<Function> vadd = module->GetFunction("vadd");
  ASSERT_TRUE(vadd.ok()) << vadd.status();

  const int n = 100'000;
  std::vector<float> a(n), b(n), c(n, 0.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.25f * static_cast<float>(i % 13);
  }
  const size_t bytes = n * sizeof(float);
  absl::StatusOr<DeviceBuffer> da = DeviceBuffer::Allocate(device_, bytes);
  absl::StatusOr<DeviceBuffer> db = DeviceBuffer::Allocate(device_, bytes);
  absl::StatusOr<DeviceBuffer> dc = DeviceBuffer::Allocate(device_, bytes);
  ASSERT_TRUE(da.ok() && db.ok() && dc.ok());
  ASSERT_TRUE(da->CopyFromHost(a.data(), bytes).ok());
  ASSERT_TRUE(db->CopyFromHost(b.data(), bytes).ok());
  ASSERT_TRUE(dc->Fill(0xff).ok());

  uint64_t pa = da->address(), pb = db->address(), pc = dc->address();
  int count = n;
  void* args[] = {&pa, &pb, &pc, &count};
  LaunchConfig config;
  config.grid = {(n + 255) / 256, 1, 1};
  config.block = {256, 1, 1};
  absl::StatusOr<float> ms = TimedLaunch(device_, *vadd, config, args);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GT(*ms, 0.0f);
  ASSERT_TRUE(dc->CopyToHost(c.data(), bytes).ok());
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;

  // A plain launch plus Synchronize works too.
  ASSERT_TRUE(dc->Fill(0).ok());
  ASSERT_TRUE(Launch(*vadd, config, args).ok());
  ASSERT_TRUE(device_->Synchronize().ok());
  ASSERT_TRUE(dc->CopyToHost(c.data(), bytes).ok());
  EXPECT_EQ(c[n - 1], a[n - 1] + b[n - 1]);
}

TEST_F(CudaDriverTest, OptsInToLargeDynamicSharedMemory) {
  absl::StatusOr<Module> module = Module::Load(device_, cubin_);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<Function> reverse = module->GetFunction("reverse_smem");
  ASSERT_TRUE(reverse.ok()) << reverse.status();
  const int64_t optin = device_->properties().max_shared_per_block_optin;
  if (optin < 100 * 1024) GTEST_SKIP() << "device allows only " << optin << " bytes";
  const int per_block = 100 * 1024 / 4; // 100 KiB of floats per block
  const int blocks = 3;
  std::vector<float> in(per_block * blocks), out(per_block * blocks);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  absl::StatusOr<DeviceBuffer> din = DeviceBuffer::Allocate(device_, in.size() * 4);
  absl::StatusOr<DeviceBuffer> dout = DeviceBuffer::Allocate(device_, out.size() * 4);
  ASSERT_TRUE(din.ok() && dout.ok());
  ASSERT_TRUE(din->CopyFromHost(in.data(), in.size() * 4).ok());
  uint64_t pin = din->address(), pout = dout->address();
  int pb = per_block;
  void* args[] = {&pin, &pout, &pb};
  LaunchConfig config;
  config.grid = {blocks, 1, 1};
  config.block = {256, 1, 1};
  config.dynamic_smem_bytes = per_block * 4;
  absl::StatusOr<float> ms = TimedLaunch(device_, *reverse, config, args);
  ASSERT_TRUE(ms.ok()) << ms.status();
  ASSERT_TRUE(dout->CopyToHost(out.data(), out.size() * 4).ok());
  for (int blk = 0; blk < blocks; ++blk) {
    for (int i = 0; i < per_block; ++i) {
      ASSERT_EQ(out[blk * per_block + i], in[blk * per_block + per_block - 1 - i]);
    }
  }
  // Over the device's limit: refused before launching, naming both sizes.
  config.dynamic_smem_bytes = static_cast<uint32_t>(optin + 1024);
  absl::Status too_much = Launch(*reverse, config, args);
  EXPECT_EQ(too_much.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(too_much.message(), HasSubstr("exceed the device's limit"));
}

TEST_F(CudaDriverTest, ErrorsCarryTheDriversNameAndText) {
  absl::StatusOr<Module> module = Module::Load(device_, cubin_);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<Function> missing = module->GetFunction("no_such_kernel");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("cuModuleGetFunction(no_such_kernel): CUDA_ERROR_NOT_FOUND ("));

  absl::StatusOr<Module> garbage = Module::Load(device_, std::string(256, 'x'));
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(), HasSubstr("cuModuleLoadData: CUDA_ERROR_"));

  absl::StatusOr<DeviceBuffer> huge = DeviceBuffer::Allocate(device_, size_t{1} << 50);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(huge.status().message(), HasSubstr("CUDA_ERROR_OUT_OF_MEMORY"));

  absl::StatusOr<DeviceBuffer> small = DeviceBuffer::Allocate(device_, 16);
  ASSERT_TRUE(small.ok());
  float host[3];
  EXPECT_EQ(small->CopyToHost(host, sizeof(host)).code(), absl::StatusCode::kInvalidArgument);
}

} // namespace
} // namespace kiln::measure
