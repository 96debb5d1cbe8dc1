// End-to-end: a grid sweep on the CPU device with a candidate that crashes
// (SIGSEGV in kiln-worker) and one that hangs (the request timeout kills the
// worker) completes, records both, and leaves the daemon serving
// (tests/e2e/tune_faults.h).
#include "tests/e2e/tune_faults.h"

namespace kiln {
namespace {

TEST(TuneFaultsE2ETest, ASweepSurvivesACrashingAndAHangingCandidate) {
  testing::RunFaultySweep("cpu", "cpu", "tune_faults_cpu");
}

} // namespace
} // namespace kiln
