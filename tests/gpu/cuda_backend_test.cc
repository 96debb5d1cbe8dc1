// GPU test (label gpu): kiln-worker's CUDA backend through WorkerSession,
// with its device-resident arguments (tuner/measure/cuda_backend.h). A kernel
// that accumulates into its output and overwrites its input runs several
// times (run, measure, validate, run): every launch must still start from
// the generated input and a zeroed output, so every run's output equals the
// input. And the timing modes: with the L2 flushed, CUDA-graph samples of a
// kernel whose input fits in L2 must read it from DRAM as plain launches do,
// whatever the graph's batch. Skips without a GPU.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

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

// Reads `n4` float4s (the whole input once) and writes one float per
// thread: its time is the input's bytes over the bandwidth they come from.
constexpr char kStreamKernel[] = R"(
extern "C" __global__ void stream_sum(const float4* in, float* out, int n4) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (int i = tid; i < n4; i += gridDim.x * blockDim.x) {
    const float4 v = in[i];
    acc += v.x + v.y + v.z + v.w;
  }
  out[tid] = acc;
}
)";

constexpr int kN = 1 << 20;
// 24 MiB of input: inside the L2 of an A100 / H100 / H200 (40-50 MiB), so
// that only a flush makes it come from DRAM.
constexpr int kStreamFloats = 6 << 20;
constexpr int kStreamBlocks = 1024;
constexpr int kStreamThreads = 256;

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

pb::LaunchSpec StreamLaunch() {
  pb::LaunchSpec launch;
  launch.set_module_id("stream");
  launch.add_grid(kStreamBlocks);
  launch.add_block(kStreamThreads);
  pb::TensorSpec* in = launch.add_args();
  in->set_name("in");
  in->set_dtype(pb::DTYPE_FLOAT32);
  in->add_shape(kStreamFloats);
  in->set_init(pb::TensorSpec::INIT_RANDOM_UNIFORM);
  in->set_seed(5);
  pb::TensorSpec* out = launch.add_args();
  out->set_name("out");
  out->set_dtype(pb::DTYPE_FLOAT32);
  out->add_shape(kStreamBlocks * kStreamThreads);
  out->set_init(pb::TensorSpec::INIT_ZEROS);
  out->set_is_output(true);
  pb::TensorSpec* n4 = launch.add_args();
  n4->set_name("n4");
  n4->set_dtype(pb::DTYPE_INT32);
  n4->mutable_scalar()->set_int_value(kStreamFloats / 4);
  return launch;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
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
    session_ = std::make_unique<WorkerSession>(*std::move(backend));
    for (const auto& [id, source, symbol] : {std::tuple{"acc", kKernel, "accumulate"},
                                             std::tuple{"stream", kStreamKernel, "stream_sum"}}) {
      toolchain::CudaCompileInput in;
      in.source = source;
      in.program_name = "backend_test.cu";
      in.arch = arch;
      absl::StatusOr<toolchain::CompileOutput> out = toolchain::NvrtcCompile(in);
      if (!out.ok() && absl::IsFailedPrecondition(out.status())) GTEST_SKIP() << out.status();
      ASSERT_TRUE(out.ok()) << out.status();
      pb::WorkerRequest load;
      load.mutable_load()->set_module_id(id);
      load.mutable_load()->set_kernel_symbol(symbol);
      load.mutable_load()->set_image(out->cubin);
      ASSERT_FALSE(Handle(load).has_error());
    }
  }

  // The median of a measure request's samples (-1 on an error).
  double MedianUs(bool flush_l2, bool graph, int warmup = 2, int repeats = 15) {
    pb::WorkerRequest measure;
    *measure.mutable_measure()->mutable_launch() = StreamLaunch();
    measure.mutable_measure()->set_warmup(warmup);
    measure.mutable_measure()->set_repeats(repeats);
    measure.mutable_measure()->set_flush_l2(flush_l2);
    measure.mutable_measure()->set_use_cuda_graph(graph);
    pb::WorkerResponse r = Handle(measure);
    EXPECT_FALSE(r.has_error()) << r.error().message();
    if (r.has_error()) return -1;
    EXPECT_EQ(r.measure().samples_us_size(), repeats);
    for (double us : r.measure().samples_us()) EXPECT_GT(us, 0.0);
    return Median({r.measure().samples_us().begin(), r.measure().samples_us().end()});
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

// prepare_inputs uploads the generated input before any module is loaded:
// the first run then starts from the device copy (its input is not even
// looked up in the host cache) and still sees exactly the spec's data.
TEST_F(CudaBackendTest, PreparedInputsAreOnTheDeviceBeforeTheFirstRun) {
  absl::StatusOr<std::vector<tools::HostParam>> host = MakeHostParams(Launch().args(), 1 << 30);
  ASSERT_TRUE(host.ok()) << host.status();
  pb::WorkerRequest prepare;
  *prepare.mutable_prepare_inputs()->mutable_launch() = Launch();
  pb::WorkerResponse prepared = Handle(prepare);
  ASSERT_FALSE(prepared.has_error()) << prepared.error().message();
  EXPECT_EQ(session_->input_cache().hits(), 0u);
  // The device keeps the input, so the host cache holds no copy of it.
  EXPECT_EQ(session_->input_cache().entries(), 0u);

  EXPECT_EQ(RunOnce(), (*host)[0].before.data);
  EXPECT_EQ(session_->input_cache().hits(), 0u); // resident: no host bytes needed
}

TEST_F(CudaBackendTest, FlushedGraphSamplesReadTheirInputFromDramWhateverTheBatch) {
  const double hot_graph = MedianUs(/*flush_l2=*/false, /*graph=*/true);
  const double cold_graph = MedianUs(true, true);
  const double cold_plain = MedianUs(true, false);
  std::printf("stream_sum over 24 MiB: graph %.2f us hot, %.2f us flushed; plain flushed %.2f us\n",
              hot_graph, cold_graph, cold_plain);
  ASSERT_GT(hot_graph, 0);
  // From DRAM, the flushed samples are clearly slower than from L2 (before
  // the per-launch flush in the graph, all but the first launch of a replay
  // read from L2 and the two agreed).
  EXPECT_GT(cold_graph, 1.25 * hot_graph);
  // And they agree with flushed plain launches, less the launch gap that
  // graphs remove.
  EXPECT_LT(cold_graph, 1.1 * cold_plain);
  EXPECT_GT(cold_graph, 0.5 * cold_plain);
  // The same measurement again, with and without warm-up (different first
  // launches size the batch): within 15 % of each other.
  for (int warmup : {0, 1, 5}) {
    const double again = MedianUs(true, true, warmup);
    EXPECT_NEAR(again, cold_graph, 0.15 * cold_graph) << "warmup " << warmup;
  }
}

// A launch sequence (docs/design/multi-kernel.md): two entry points of one
// module and a workspace the first writes and the second reads. Run once,
// measured with plain launches and with a CUDA graph: out = 2 a + 1 only
// when both kernels run, in order, on the same zeroed workspace.
constexpr char kSequenceKernels[] = R"(
extern "C" __global__ void seq_first(const float* a, float* out, int n, float* ws) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) ws[i] += 2.0f * a[i];
}
extern "C" __global__ void seq_second(const float* a, float* out, int n, float* ws) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = ws[i] + 1.0f;
}
)";

TEST_F(CudaBackendTest, RunsALaunchSequenceWithAWorkspace) {
  pb::WorkerRequest describe;
  describe.mutable_describe();
  pb::WorkerResponse described = Handle(describe);
  ASSERT_FALSE(described.has_error()) << described.error().message();
  toolchain::CudaCompileInput in;
  in.source = kSequenceKernels;
  in.program_name = "sequence_test.cu";
  in.arch = described.describe().device().arch();
  absl::StatusOr<toolchain::CompileOutput> cubin = toolchain::NvrtcCompile(in);
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  pb::WorkerRequest load;
  load.mutable_load()->set_module_id("seq");
  load.mutable_load()->set_kernel_symbol("seq_first");
  load.mutable_load()->add_next_kernel_symbols("seq_second");
  load.mutable_load()->add_next_dynamic_shared_bytes(0);
  load.mutable_load()->set_image(cubin->cubin);
  ASSERT_FALSE(Handle(load).has_error());

  pb::LaunchSpec launch = Launch();
  launch.set_module_id("seq");
  pb::KernelStep* second = launch.add_next_kernels();
  second->add_grid(kN / 256);
  second->add_block(256);
  launch.add_workspace_bytes(int64_t{kN} * 4);
  absl::StatusOr<std::vector<tools::HostParam>> host = MakeHostParams(launch.args(), 1 << 30);
  ASSERT_TRUE(host.ok()) << host.status();
  std::vector<float> a(kN), want(kN);
  std::memcpy(a.data(), (*host)[0].before.data.data(), a.size() * 4);
  for (int i = 0; i < kN; ++i) want[i] = 2.0f * a[i] + 1.0f;

  pb::WorkerRequest run;
  *run.mutable_run()->mutable_launch() = launch;
  run.mutable_run()->set_return_outputs(true);
  pb::WorkerResponse r = Handle(run);
  ASSERT_FALSE(r.has_error()) << r.error().message();
  ASSERT_EQ(r.run().outputs_size(), 1);
  ASSERT_EQ(r.run().outputs(0).size(), size_t{kN} * 4);
  EXPECT_EQ(std::memcmp(r.run().outputs(0).data(), want.data(), want.size() * 4), 0);

  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "CUDA graph" : "plain launches");
    pb::WorkerRequest measure;
    *measure.mutable_measure()->mutable_launch() = launch;
    measure.mutable_measure()->set_warmup(1);
    measure.mutable_measure()->set_repeats(3);
    measure.mutable_measure()->set_use_cuda_graph(graph);
    pb::WorkerResponse m = Handle(measure);
    ASSERT_FALSE(m.has_error()) << m.error().message();
    EXPECT_EQ(m.measure().samples_us_size(), 3);
  }
}

} // namespace
} // namespace kiln::measure
