// GPU test (label gpu): kiln-worker's CUDA backend through WorkerSession,
// with its device-resident arguments (tuner/measure/cuda_backend.h). A kernel
// that accumulates into its output and overwrites its input runs several
// times (run, measure, validate, run): every launch must still start from
// the generated input and a zeroed output, so every run's output equals the
// input. Skips without a GPU.
#include <algorithm>
#include <memory>
#include <string>

#include <unistd.h>

#include "compiler/toolchain/nvrtc.h"
#include "gtest/gtest.h"
#include "tuner/measure/cuda_backend.h"
#include "tuner/measure/tensor_data.h"
#include "tuner/measure/worker_session.h"

namespace kiln::measure {
namespace {

namespace pb = kiln::v1;

bool GpuAttached() { return access("/dev/nvidiactl", F_OK) == 0; }

// out += a, then a is overwritten: a second launch on the same buffers
// would give a wrong output.
constexpr char kKernel[] = R"(
extern "C" __global__ void accumulate(float* a, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] += a[i];
    a[i] = -7.0f;
  }
}
)";

constexpr int kN = 1 << 20;

pb::LaunchSpec Launch() {
  pb::LaunchSpec launch;
  launch.set_module_id("acc");
  launch.add_grid(kN / 256);
  launch.add_block(256);
  pb::TensorSpec* a = launch.add_args();
  a->set_name("a");
  a->set_dtype(pb::DTYPE_FLOAT32);
  a->add_shape(kN);
  a->set_init(pb::TensorSpec::INIT_RANDOM_UNIFORM);
  a->set_seed(3);
  pb::TensorSpec* out = launch.add_args();
  out->set_name("out");
  out->set_dtype(pb::DTYPE_FLOAT32);
  out->add_shape(kN);
  out->set_init(pb::TensorSpec::INIT_ZEROS);
  out->set_is_output(true);
  pb::TensorSpec* n = launch.add_args();
  n->set_name("n");
  n->set_dtype(pb::DTYPE_INT32);
  n->mutable_scalar()->set_int_value(kN);
  return launch;
}

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!GpuAttached()) GTEST_SKIP() << "no GPU attached (/dev/nvidiactl missing)";
    absl::StatusOr<std::unique_ptr<CudaBackend>> backend = CudaBackend::Open(0, "libcuda.so.1");
    ASSERT_TRUE(backend.ok()) << backend.status();
    absl::StatusOr<pb::DescribeDeviceResponse> d = (*backend)->Describe();
    ASSERT_TRUE(d.ok()) << d.status();
    const std::string arch = d->device().arch();
    const auto& archs = toolchain::SupportedCudaArchs();
    if (std::find(archs.begin(), archs.end(), arch) == archs.end()) {
      GTEST_SKIP() << "device architecture " << arch << " is not one Kiln compiles for";
    }
    toolchain::CudaCompileInput in;
    in.source = kKernel;
    in.program_name = "backend_test.cu";
    in.arch = arch;
    absl::StatusOr<toolchain::CompileOutput> out = toolchain::NvrtcCompile(in);
    if (!out.ok() && absl::IsFailedPrecondition(out.status())) GTEST_SKIP() << out.status();
    ASSERT_TRUE(out.ok()) << out.status();
    session_ = std::make_unique<WorkerSession>(*std::move(backend));
    pb::WorkerRequest load;
    load.mutable_load()->set_module_id("acc");
    load.mutable_load()->set_kernel_symbol("accumulate");
    load.mutable_load()->set_image(out->cubin);
    ASSERT_FALSE(Handle(load).has_error());
  }

  pb::WorkerResponse Handle(const pb::WorkerRequest& r) {
    bool exit_after = false;
    pb::WorkerResponse response = session_->Handle(r, &exit_after);
    EXPECT_FALSE(exit_after);
    return response;
  }

  std::string RunOnce() {
    pb::WorkerRequest run;
    *run.mutable_run()->mutable_launch() = Launch();
    run.mutable_run()->set_return_outputs(true);
    pb::WorkerResponse r = Handle(run);
    EXPECT_FALSE(r.has_error()) << r.error().message();
    return r.run().outputs_size() == 1 ? r.run().outputs(0) : "";
  }

  std::unique_ptr<WorkerSession> session_;
};

TEST_F(CudaBackendTest, EveryLaunchStartsFromTheSpecsData) {
  absl::StatusOr<std::vector<tools::HostParam>> host = MakeHostParams(Launch().args(), 1 << 30);
  ASSERT_TRUE(host.ok()) << host.status();
  const std::string& input = (*host)[0].before.data;
  ASSERT_EQ(input.size(), size_t{kN} * 4);

  const std::string first = RunOnce(); // uploads the input, keeps it resident
  EXPECT_EQ(first, input);

  pb::WorkerRequest measure;
  *measure.mutable_measure()->mutable_launch() = Launch();
  measure.mutable_measure()->set_warmup(2);
  measure.mutable_measure()->set_repeats(5);
  pb::WorkerResponse measured = Handle(measure);
  ASSERT_FALSE(measured.has_error()) << measured.error().message();
  EXPECT_EQ(measured.measure().samples_us_size(), 5);

  pb::WorkerRequest validate;
  *validate.mutable_validate()->mutable_launch() = Launch();
  validate.mutable_validate()->add_reference_outputs(input);
  pb::WorkerResponse checked = Handle(validate);
  ASSERT_FALSE(checked.has_error()) << checked.error().message();
  EXPECT_TRUE(checked.validate().ok()) << checked.validate().first_mismatch();
  EXPECT_EQ(checked.validate().mismatches(), 0);

  EXPECT_EQ(RunOnce(), input); // from the resident copy, into a reused buffer
}

} // namespace
} // namespace kiln::measure
