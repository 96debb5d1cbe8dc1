// The micro-benchmarks (tuner/arch/microbench.h) through a real worker
// session in this process: on the CPU device the copy probe compiles with
// the host compiler, runs through load / measure / unload and gives a
// plausible bandwidth, and the probes that do not apply say so; a device
// whose probes cannot compile or whose worker fails gives notes, not values.
// The GPU case is tests/tuner/arch/microbench_gpu_test.cc.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/toolchain/cuda_compile.h"
#include "compiler/toolchain/nvrtc.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/compiler/toolchain/cuda_test_util.h"
#include "tuner/arch/microbench.h"
#include "tuner/measure/cpu_backend.h"
#include "tuner/measure/worker_session.h"

namespace kiln::arch {
namespace {

namespace pb = kiln::v1;
using ::testing::HasSubstr;

TEST(Microbench, CpuCopyProbeMeasuresAPlausibleBandwidth) {
  measure::WorkerSession session(std::make_unique<measure::CpuBackend>());
  int requests = 0;
  std::vector<std::string> kinds;
  WorkerCall call = [&](const pb::WorkerRequest& r) -> absl::StatusOr<pb::WorkerResponse> {
    ++requests;
    kinds.emplace_back(r.has_load()      ? "load"
                       : r.has_measure() ? "measure"
                       : r.has_unload()  ? "unload"
                                         : "other");
    bool exit_after = false;
    return session.Handle(r, &exit_after);
  };
  bool unused = false;
  pb::WorkerRequest describe;
  describe.mutable_describe();
  const pb::Device device = session.Handle(describe, &unused).describe().device();
  ASSERT_EQ(device.id(), "cpu");

  MicrobenchOptions options;
  options.copy_bytes = 16 << 20;
  options.repeats = 3;
  const MicrobenchResult r = RunMicrobenchmarks(device, call, options);
  EXPECT_EQ(r.State(), "measured") << r.Note();
  EXPECT_TRUE(r.notes.empty()) << r.Note();
  ASSERT_EQ(r.values.count(kDramGbs), 1u) << r.Note();
  // Any host copies at least 0.1 GB/s and no host reaches 10 TB/s.
  EXPECT_GT(r.values.at(kDramGbs), 0.1);
  EXPECT_LT(r.values.at(kDramGbs), 10000);
  EXPECT_EQ(r.values.count(kMmaF16Tflops), 0u);
  EXPECT_THAT(r.Note(), HasSubstr("mma_f16_tflops: not measured: the CPU device has no tensor"));
  EXPECT_EQ(kinds, (std::vector<std::string>{"load", "measure", "unload"}));
  EXPECT_GT(r.seconds, 0);

  const Measured m = MeasuredFromValues(r.values);
  ASSERT_TRUE(m.dram_gbs.has_value());
  EXPECT_EQ(*m.dram_gbs, r.values.at(kDramGbs));
  EXPECT_FALSE(m.mma_f16_tflops.has_value());
  const ArchModel model = WithMeasured(*FindPreset("cpu"), m);
  EXPECT_EQ(model.dram_gbs, r.values.at(kDramGbs));
  EXPECT_EQ(model.bandwidth_source, "measured");
}

TEST(Microbench, AWorkerThatFailsGivesNotesNotValues) {
  pb::Device cpu;
  cpu.set_id("cpu");
  int calls = 0;
  WorkerCall lost = [&](const pb::WorkerRequest&) -> absl::StatusOr<pb::WorkerResponse> {
    ++calls;
    return absl::UnavailableError("worker crashed");
  };
  const MicrobenchResult r = RunMicrobenchmarks(cpu, lost);
  EXPECT_EQ(r.State(), "failed");
  EXPECT_TRUE(r.values.empty());
  EXPECT_THAT(r.Note(), HasSubstr("dram_gbs: not measured: worker crashed"));
  EXPECT_EQ(calls, 1); // nothing more is sent to a lost worker

  // A worker that answers with an error (the module does not load).
  WorkerCall refuses = [](const pb::WorkerRequest&) -> absl::StatusOr<pb::WorkerResponse> {
    pb::WorkerResponse answer;
    answer.mutable_error()->set_code(pb::WorkerError::CODE_LOAD_FAILED);
    answer.mutable_error()->set_message("bad image");
    return answer;
  };
  const MicrobenchResult refused = RunMicrobenchmarks(cpu, refuses);
  EXPECT_EQ(refused.State(), "failed");
  EXPECT_THAT(refused.Note(), HasSubstr("CODE_LOAD_FAILED: bad image"));
}

TEST(Microbench, AGpuKilnCannotCompileForIsNotMeasured) {
  pb::Device old;
  old.set_id("cuda:0");
  old.set_arch("sm_70");
  old.set_sm_count(80);
  old.set_l2_bytes(6 << 20);
  int calls = 0;
  WorkerCall call = [&](const pb::WorkerRequest&) -> absl::StatusOr<pb::WorkerResponse> {
    ++calls;
    return absl::InternalError("must not be called");
  };
  const MicrobenchResult r = RunMicrobenchmarks(old, call);
  EXPECT_EQ(r.State(), "failed");
  EXPECT_EQ(calls, 0);
  EXPECT_THAT(r.Note(), HasSubstr("cannot compile the probes for sm_70"));
  EXPECT_THAT(r.Note(), HasSubstr("mma_f16_tflops: not measured"));
}

TEST(Microbench, TheCudaProbesCompileWithNvrtcForEveryArchKilnSupports) {
  if (!toolchain::testing::CudaToolkitPresent()) GTEST_SKIP() << toolchain::testing::kNoToolkit;
  for (const std::string& arch : toolchain::SupportedCudaArchs()) {
    SCOPED_TRACE(arch);
    toolchain::CudaCompileInput in;
    in.source = CudaProbeSource();
    in.arch = arch;
    absl::StatusOr<toolchain::CompileOutput> out = toolchain::NvrtcCompile(in);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_FALSE(out->cubin.empty());
    std::set<std::string> kernels;
    for (const toolchain::ResourceUsage& k : out->kernels) {
      kernels.insert(k.kernel);
      // Registers only: a spill would put memory traffic into the mma loop.
      EXPECT_EQ(k.spill_store_bytes, 0) << k.kernel;
      EXPECT_LE(k.registers, 255) << k.kernel;
    }
    EXPECT_EQ(kernels,
              (std::set<std::string>{"kiln_probe_copy", "kiln_probe_l2", "kiln_probe_mma"}));
  }
}

TEST(Microbench, TheProbeSourcesAreKilnsOwn) {
  // The CUDA probes: the streaming copy, the L2 sweep and the mma.sync loop.
  const std::string cuda{CudaProbeSource()};
  const std::string cpu{CpuProbeSource()};
  for (const char* symbol : {"kiln_probe_copy", "kiln_probe_l2", "kiln_probe_mma",
                             "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"}) {
    EXPECT_THAT(cuda, HasSubstr(symbol));
  }
  EXPECT_THAT(cpu, HasSubstr("kiln_probe_copy_cpu"));
}

} // namespace
} // namespace kiln::arch
