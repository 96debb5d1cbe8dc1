// Barriers the lowering places around element atomics on shared memory
// outside T.Parallel (compiler/passes/lowering.cc, LowerAtomicElement): one
// between another thread's store and the atomics, none between atomics, one
// between the atomics and the reads. The CPU emulation runs each thread to its
// next barrier, so a missing one shows only on a GPU (gpu/programs/
// atomic_after_store); this test checks the emitted order where CI runs.
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "compiler/codegen/codegen.h"
#include "compiler/frontend/frontend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/example_loader.h"

namespace kiln::passes {
namespace {

// The kernel's statements that matter here, in order: "if", "sync",
// "atomic", "store" (a write of an output).
std::vector<std::string> Events(const std::string& cuda) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(cuda, '\n')) {
    if (line.find("if ((kiln::rt::tid_y() == 0))") != absl::string_view::npos) out.push_back("if");
    if (line.find("sync_threads()") != absl::string_view::npos) out.push_back("sync");
    if (line.find("kiln::rt::atomic_") != absl::string_view::npos) out.push_back("atomic");
    if (line.find("S[") == 2 || line.find("E[") == 2 || line.find("P[") == 2) {
      out.push_back("store");
    }
  }
  return out;
}

TEST(SharedHazards, AtomicsAfterAnotherThreadsStoreAndBeforeTheReads) {
  testing::ExampleFile ex =
      testing::LoadExampleFile(KILN_SOURCE_DIR, "tests/programs/atomic_after_store.py");
  absl::StatusOr<ir::Program> p = frontend::CompileSource(ex.source, ex.Options(true));
  ASSERT_TRUE(p.ok()) << p.status();
  for (const char* target : {"cuda:sm_90", "cpu"}) {
    SCOPED_TRACE(target);
    absl::StatusOr<codegen::EmittedKernel> k = codegen::LowerAndEmit(*p, target, {});
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_THAT(Events(k->source),
                ::testing::ElementsAre("if", "sync", "atomic", "atomic", "atomic", "atomic", "sync",
                                       "store", "store", "store"))
        << k->source;
  }
}

} // namespace
} // namespace kiln::passes
