// GPU test (label gpu; skipped without /dev/nvidiactl; $KILN_WORKER names
// the worker binary when not in the build tree): the device pool
// discovers cuda:0 through `kiln-worker --list` and its worker describes the
// GPU; a vector add compiled by NVRTC loads, runs with correct outputs,
// validates, and is timed with events (plain, after an L2 flush, as CUDA
// graph replays); an illegal-address kernel is a launch failure and a
// kernel that never ends is killed at the timeout, and after each the
// restarted worker serves the next request.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include <unistd.h>

#include "compiler/toolchain/cuda_compile.h"
#include "compiler/toolchain/nvrtc.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/device_pool.h"
#include "tests/support/worker_test_kernels.h"
#include "tuner/measure/tensor_data.h"

namespace kiln::server {
namespace {

namespace pb = kiln::v1;
using ::testing::HasSubstr;

constexpr char kKernels[] = R"(
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void oob(float* c) {
  c[(1ll << 40) + threadIdx.x] = 1.0f;  // far outside any allocation
}
extern "C" __global__ void spin(float* c) {
  volatile float* p = c;
  while (true) p[0] = p[0] + 1.0f;
}
)";

class DevicePoolGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/dev/nvidiactl", F_OK) != 0) {
      GTEST_SKIP() << "no GPU attached (/dev/nvidiactl missing)";
    }
    DevicePoolOptions options;
    // $KILN_WORKER lets a relocated bundle of the binaries run this test.
    const char* worker = std::getenv("KILN_WORKER");
    options.worker_path = worker != nullptr && worker[0] != '\0'
                              ? std::string(worker)
                              : std::string(KILN_BINARY_DIR "/kiln-worker");
    options.restart_backoff = absl::Milliseconds(50);
    absl::StatusOr<std::unique_ptr<DevicePool>> pool = DevicePool::Start(options);
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = *std::move(pool);
    for (const pb::Device& d : pool_->Devices()) {
      if (d.id() == "cuda:0") device_ = d;
    }
    ASSERT_EQ(device_.id(), "cuda:0") << pool_->discovery_note();
    ASSERT_EQ(device_.worker_state(), "running") << pool_->Stats("cuda:0")->last_error;
    const auto& archs = toolchain::SupportedCudaArchs();
    if (std::find(archs.begin(), archs.end(), device_.arch()) == archs.end()) {
      GTEST_SKIP() << device_.arch() << " is not an architecture Kiln compiles for";
    }
    toolchain::CudaCompileInput in;
    in.source = kKernels;
    in.program_name = "pool_gpu_test.cu";
    in.arch = device_.arch();
    absl::StatusOr<toolchain::CompileOutput> out = toolchain::NvrtcCompile(in);
    if (!out.ok() && absl::IsFailedPrecondition(out.status())) GTEST_SKIP() << out.status();
    ASSERT_TRUE(out.ok()) << out.status();
    cubin_ = out->cubin;
  }

  void Load(const std::string& symbol) {
    absl::StatusOr<pb::WorkerResponse> r =
        pool_->Call("cuda:0", testing::LoadRequest(symbol, cubin_, symbol));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GT(r->load().registers_per_thread(), 0);
    EXPECT_GT(r->load().max_threads_per_block(), 0);
  }

  static pb::LaunchSpec VaddLaunch(int n) {
    pb::LaunchSpec launch;
    launch.set_module_id("vadd");
    launch.add_grid((n + 255) / 256);
    launch.add_block(256);
    testing::AddTensor(&launch, "a", pb::DTYPE_FLOAT32, {n}, pb::TensorSpec::INIT_ARANGE, false);
    testing::AddTensor(&launch, "b", pb::DTYPE_FLOAT32, {n}, pb::TensorSpec::INIT_ONES, false);
    testing::AddTensor(&launch, "c", pb::DTYPE_FLOAT32, {n}, pb::TensorSpec::INIT_ZEROS, true);
    pb::TensorSpec* count = launch.add_args();
    count->set_name("n");
    count->set_dtype(pb::DTYPE_INT32);
    count->mutable_scalar()->set_int_value(n);
    return launch;
  }

  void ExpectVaddWorks() {
    Load("vadd");
    pb::WorkerRequest run;
    *run.mutable_run()->mutable_launch() = VaddLaunch(1000);
    run.mutable_run()->set_return_outputs(true);
    absl::StatusOr<pb::WorkerResponse> r = pool_->Call("cuda:0", run);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->run().outputs_size(), 1);
    tools::NpyArray c{ir::DType::kFloat32, {1000}, r->run().outputs(0)};
    for (int i = 0; i < 1000; i += 111) EXPECT_EQ(measure::GetElement(c, i), i + 1.0);
    EXPECT_GT(r->run().elapsed_us(), 0);
  }

  std::unique_ptr<DevicePool> pool_;
  pb::Device device_;
  std::string cubin_;
};

TEST_F(DevicePoolGpuTest, DescribesTheGpu) {
  EXPECT_FALSE(device_.model().empty());
  EXPECT_GT(device_.sm_count(), 0);
  EXPECT_GT(device_.memory_bytes(), int64_t{1} << 30);
  EXPECT_GT(device_.l2_bytes(), 0);
  EXPECT_GT(device_.clock_mhz(), 0);
  EXPECT_EQ(device_.shared_memory_per_block(), 48 * 1024);
  EXPECT_GE(device_.shared_memory_per_block_optin(), device_.shared_memory_per_block());
  absl::StatusOr<pb::WorkerResponse> r = pool_->Call("cuda:0", testing::DescribeRequest());
  ASSERT_TRUE(r.ok()) << r.status();
  const pb::DescribeDeviceResponse& d = r->describe();
  EXPECT_GE(d.compute_capability_major(), 7);
  EXPECT_EQ(d.warp_size(), 32);
  EXPECT_GT(d.regs_per_sm(), 0);
  EXPECT_GT(d.shared_memory_per_sm(), 0);
  EXPECT_GT(d.memory_bus_width(), 0);
  EXPECT_FALSE(d.driver_version().empty());
}

TEST_F(DevicePoolGpuTest, RunsValidatesAndMeasures) {
  ExpectVaddWorks();
  pb::WorkerRequest validate;
  *validate.mutable_validate()->mutable_launch() = VaddLaunch(1000);
  tools::NpyArray want{ir::DType::kFloat32, {1000}, std::string(4000, '\0')};
  for (int i = 0; i < 1000; ++i) measure::SetElement(want, i, i + 1.0);
  validate.mutable_validate()->add_reference_outputs(want.data);
  absl::StatusOr<pb::WorkerResponse> v = pool_->Call("cuda:0", validate);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->validate().ok()) << v->validate().first_mismatch();

  for (const auto& [flush, graph] : {std::pair{false, false}, {true, false}, {false, true}}) {
    SCOPED_TRACE(absl::StrCat("flush_l2 ", flush, ", graph ", graph));
    pb::WorkerRequest measure;
    *measure.mutable_measure()->mutable_launch() = VaddLaunch(1 << 20);
    measure.mutable_measure()->set_warmup(3);
    measure.mutable_measure()->set_repeats(20);
    measure.mutable_measure()->set_flush_l2(flush);
    measure.mutable_measure()->set_use_cuda_graph(graph);
    absl::StatusOr<pb::WorkerResponse> m = pool_->Call("cuda:0", measure);
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_EQ(m->measure().samples_us_size(), 20);
    for (double us : m->measure().samples_us()) {
      EXPECT_GT(us, 0);
      EXPECT_LT(us, 1e5);
    }
  }
}

TEST_F(DevicePoolGpuTest, IllegalAddressIsALaunchFailureAndTheWorkerRestarts) {
  Load("oob");
  absl::StatusOr<pb::WorkerResponse> r =
      pool_->Call("cuda:0", testing::RunOneOutput("oob"), absl::Seconds(60));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(WorkerErrorKindOf(r.status()), WorkerErrorKind::kLaunchFailed) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("CUDA_ERROR_ILLEGAL_ADDRESS"));
  ExpectVaddWorks();
  EXPECT_EQ(pool_->Stats("cuda:0")->restarts, 1);
}

TEST_F(DevicePoolGpuTest, HangIsKilledAtTheTimeoutAndTheWorkerRestarts) {
  Load("spin");
  absl::StatusOr<pb::WorkerResponse> r =
      pool_->Call("cuda:0", testing::RunOneOutput("spin"), absl::Seconds(2));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(WorkerErrorKindOf(r.status()), WorkerErrorKind::kTimeout) << r.status();
  ExpectVaddWorks();
  EXPECT_EQ(pool_->Stats("cuda:0")->timeouts, 1);
}

} // namespace
} // namespace kiln::server
