// GPU test (label gpu; skipped without /dev/nvidiactl): the CUDA probes of
// tuner/arch/microbench.h compile with NVRTC, run through a worker session
// on cuda:0 and give values a real GPU can have; the L2 sweep is faster
// than the DRAM copy. tests/gpu/microbench_h200.sh runs them through kilnd.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include <unistd.h>

#include "compiler/toolchain/cuda_compile.h"
#include "gtest/gtest.h"
#include "tuner/arch/microbench.h"
#include "tuner/measure/cuda_backend.h"
#include "tuner/measure/worker_session.h"

namespace kiln::arch {
namespace {

namespace pb = kiln::v1;

TEST(MicrobenchGpu, ProbesMeasureBandwidthAndMmaThroughput) {
  if (access("/dev/nvidiactl", F_OK) != 0) GTEST_SKIP() << "no GPU attached (/dev/nvidiactl)";
  absl::StatusOr<std::unique_ptr<measure::CudaBackend>> backend =
      measure::CudaBackend::Open(0, "libcuda.so.1");
  ASSERT_TRUE(backend.ok()) << backend.status();
  measure::WorkerSession session(*std::move(backend));
  bool unused = false;
  pb::WorkerRequest describe;
  describe.mutable_describe();
  const pb::Device device = session.Handle(describe, &unused).describe().device();
  const auto& archs = toolchain::SupportedCudaArchs();
  if (std::find(archs.begin(), archs.end(), device.arch()) == archs.end()) {
    GTEST_SKIP() << "device architecture " << device.arch() << " is not one Kiln compiles for";
  }
  WorkerCall call = [&](const pb::WorkerRequest& r) -> absl::StatusOr<pb::WorkerResponse> {
    bool exit_after = false;
    return session.Handle(r, &exit_after);
  };
  const MicrobenchResult r = RunMicrobenchmarks(device, call);
  ASSERT_EQ(r.State(), "measured") << r.Note();
  const double dram = r.values.at(kDramGbs);
  const double l2 = r.values.at(kL2Gbs);
  const double mma = r.values.at(kMmaF16Tflops);
  std::printf("%s: DRAM copy %.0f GB/s, L2 read %.0f GB/s, mma.sync f16 %.1f TFLOP/s (%.1f s)\n",
              device.model().c_str(), dram, l2, mma, r.seconds);
  EXPECT_GT(dram, 100);   // every sm_80+ part has well over 100 GB/s
  EXPECT_LT(dram, 20000); // and none has 20 TB/s
  EXPECT_GT(l2, dram);
  EXPECT_GT(mma, 10);
  EXPECT_LT(mma, 5000);
}

} // namespace
} // namespace kiln::arch
