// GPU test (label gpu): the sweep of tune_faults_test.cc on cuda:0, where
// the out-of-bounds candidate is an illegal-address fault that poisons the
// CUDA context and the hanging one a kernel that never returns; both kill
// the GPU's worker, which kilnd restarts. Skips without a GPU.
#include <unistd.h>

#include "tests/e2e/tune_faults.h"

namespace kiln {
namespace {

TEST(TuneFaultsGpuTest, ASweepSurvivesAFaultingAndAHangingKernel) {
  if (access("/dev/nvidiactl", F_OK) != 0) GTEST_SKIP() << "no GPU attached";
  testing::RunFaultySweep("cuda:sm_90", "cuda:0", "tune_faults_gpu");
}

} // namespace
} // namespace kiln
