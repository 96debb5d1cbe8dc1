// kilnd's NVRTC helper processes (server/nvrtc_helpers.h) with the real
// kiln-worker --compile and the toolkit's NVRTC: a build in a helper gives
// what the same build in process gives (cubin, resource usage, headers
// honoured); a compile error is located and leaves the helper serving;
// builds from several threads spread over at most max_helpers helpers; a
// helper killed while idle is replaced; a build that overruns its limit and
// a helper that crashes mid-build fail with their kind and pid while the
// pool goes on; without a worker binary builds run in process; installed as
// the toolchain's runner, NvrtcCompile goes through it.
#include <csignal>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>

#include "compiler/toolchain/nvrtc.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/nvrtc_helpers.h"
#include "tests/compiler/toolchain/cuda_test_util.h"
#include "util/temp_dir.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;
using namespace kiln::toolchain::testing;

constexpr char kWorker[] = KILN_BINARY_DIR "/kiln-worker";

class NvrtcHelpersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaToolkitPresent()) GTEST_SKIP() << kNoToolkit;
  }
  static std::shared_ptr<NvrtcHelpers> Make(int max_helpers,
                                            absl::Duration timeout = absl::Minutes(2)) {
    NvrtcHelperOptions o;
    o.worker_path = kWorker;
    o.max_helpers = max_helpers;
    o.build_timeout = timeout;
    absl::StatusOr<std::unique_ptr<NvrtcHelpers>> h = NvrtcHelpers::Create(o);
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() ? std::shared_ptr<NvrtcHelpers>(*std::move(h)) : nullptr;
  }
};

TEST_F(NvrtcHelpersTest, BuildsWhatTheInProcessBuildGives) {
  std::shared_ptr<NvrtcHelpers> helpers = Make(2);
  ASSERT_NE(helpers, nullptr);
  absl::StatusOr<toolchain::CompileOutput> remote = helpers->Compile(VectorAdd("sm_90"));
  ASSERT_TRUE(remote.ok()) << remote.status();
  absl::StatusOr<const toolchain::NvrtcLibrary*> lib = toolchain::DefaultNvrtc();
  ASSERT_TRUE(lib.ok()) << lib.status();
  absl::StatusOr<toolchain::CompileOutput> local = (*lib)->Compile(VectorAdd("sm_90"));
  ASSERT_TRUE(local.ok()) << local.status();

  EXPECT_TRUE(IsElf(remote->cubin));
  EXPECT_EQ(remote->cubin, local->cubin); // NVRTC is deterministic
  const toolchain::ResourceUsage* r = toolchain::FindKernel(remote->kernels, "vadd");
  const toolchain::ResourceUsage* l = toolchain::FindKernel(local->kernels, "vadd");
  ASSERT_NE(r, nullptr) << remote->log;
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(r->registers, l->registers);
  EXPECT_EQ(r->arch, "sm_90");
  EXPECT_GT(remote->elapsed.count(), 0);

  NvrtcHelperStats s = helpers->stats();
  EXPECT_EQ(s.started, 1);
  EXPECT_EQ(s.builds, 1);
  EXPECT_EQ(s.in_process, 0);
  EXPECT_EQ(s.idle, 1);
}

TEST_F(NvrtcHelpersTest, HeadersAndPtxTravel) {
  std::shared_ptr<NvrtcHelpers> helpers = Make(1);
  ASSERT_NE(helpers, nullptr);
  toolchain::CudaCompileInput in;
  in.source = kSharedReverse;
  in.program_name = "reverse.cu";
  in.arch = "sm_80";
  in.headers["tile.h"] = kTileHeader;
  in.want_ptx = true;
  absl::StatusOr<toolchain::CompileOutput> out = helpers->Compile(in);
  ASSERT_TRUE(out.ok()) << out.status();
  const toolchain::ResourceUsage* u = toolchain::FindKernel(out->kernels, "reverse");
  ASSERT_NE(u, nullptr) << out->log;
  EXPECT_EQ(u->shared_bytes, 256 * 4);
  EXPECT_THAT(out->ptx, HasSubstr(".entry reverse"));
}

TEST_F(NvrtcHelpersTest, CompileErrorIsLocatedAndTheHelperServesOn) {
  std::shared_ptr<NvrtcHelpers> helpers = Make(1);
  ASSERT_NE(helpers, nullptr);
  toolchain::CudaCompileInput in;
  in.source = kSyntaxError;
  in.program_name = "broken.cu";
  in.arch = "sm_80";
  absl::StatusOr<toolchain::CompileOutput> bad = helpers->Compile(in);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::ContainsRegex("broken\\.cu\\([34]\\)"));
  const std::vector<pid_t> before = helpers->IdlePids();
  ASSERT_EQ(before.size(), 1u);

  absl::StatusOr<toolchain::CompileOutput> good = helpers->Compile(VectorAdd("sm_80"));
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(helpers->IdlePids(), before);
  EXPECT_EQ(helpers->stats().lost, 0);
  EXPECT_EQ(helpers->stats().builds, 2);
}

TEST_F(NvrtcHelpersTest, ThreadsShareAtMostMaxHelpers) {
  std::shared_ptr<NvrtcHelpers> helpers = Make(2);
  ASSERT_NE(helpers, nullptr);
  constexpr int kBuilds = 6;
  std::vector<absl::Status> results(kBuilds);
  std::vector<std::thread> threads;
  for (int i = 0; i < kBuilds; ++i) {
    threads.emplace_back([&, i] {
      toolchain::CudaCompileInput in = VectorAdd("sm_80");
      in.source = "// build " + std::to_string(i) + "\n" + in.source;
      absl::StatusOr<toolchain::CompileOutput> out = helpers->Compile(in);
      results[static_cast<size_t>(i)] = out.ok() && IsElf(out->cubin)
                                            ? absl::OkStatus()
                                            : absl::InternalError(out.status().ToString());
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) EXPECT_TRUE(s.ok()) << s;
  NvrtcHelperStats s = helpers->stats();
  EXPECT_GE(s.started, 1);
  EXPECT_LE(s.started, 2);
  EXPECT_LE(s.live, 2);
  EXPECT_EQ(s.builds, kBuilds);
  EXPECT_EQ(s.lost, 0);
}

TEST_F(NvrtcHelpersTest, HelperKilledWhileIdleIsReplaced) {
  std::shared_ptr<NvrtcHelpers> helpers = Make(1);
  ASSERT_NE(helpers, nullptr);
  ASSERT_TRUE(helpers->Compile(VectorAdd("sm_80")).ok());
  const std::vector<pid_t> pids = helpers->IdlePids();
  ASSERT_EQ(pids.size(), 1u);
  ASSERT_EQ(kill(pids[0], SIGKILL), 0);
  // Until it is reaped the pid stays its own; give the kill time to land.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  absl::StatusOr<toolchain::CompileOutput> out = helpers->Compile(VectorAdd("sm_80"));
  ASSERT_TRUE(out.ok()) << out.status();
  NvrtcHelperStats s = helpers->stats();
  EXPECT_EQ(s.lost, 1);
  EXPECT_EQ(s.started, 2);
  ASSERT_EQ(helpers->IdlePids().size(), 1u);
  EXPECT_NE(helpers->IdlePids()[0], pids[0]);
}

TEST_F(NvrtcHelpersTest, OverrunBuildIsKilledAndTheNextOneWorks) {
  // Starting a process and loading NVRTC alone take far longer than 1 ms.
  std::shared_ptr<NvrtcHelpers> helpers = Make(1, absl::Milliseconds(1));
  ASSERT_NE(helpers, nullptr);
  absl::StatusOr<toolchain::CompileOutput> out = helpers->Compile(VectorAdd("sm_80"));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("'vadd.cu' for sm_80"));
  EXPECT_THAT(out.status().message(), HasSubstr("was killed"));
  EXPECT_EQ(helpers->stats().lost, 1);
  EXPECT_EQ(helpers->stats().live, 0);
}

TEST_F(NvrtcHelpersTest, HelperCrashingMidBuildFailsThatBuild) {
  absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln_nvrtc_helpers");
  ASSERT_TRUE(dir.ok()) << dir.status();
  // Takes the first byte of the request, then dies as NVRTC would on a
  // segfault.
  const std::string script = dir->path() + "/crashing-worker";
  std::ofstream(script) << "#!/bin/sh\nhead -c 1 <&3 >/dev/null\nkill -SEGV $$\n";
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  NvrtcHelperOptions o;
  o.worker_path = script;
  o.max_helpers = 1;
  absl::StatusOr<std::unique_ptr<NvrtcHelpers>> helpers = NvrtcHelpers::Create(o);
  ASSERT_TRUE(helpers.ok()) << helpers.status();
  absl::StatusOr<toolchain::CompileOutput> out = (*helpers)->Compile(VectorAdd("sm_80"));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInternal) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("'vadd.cu' for sm_80"));
  EXPECT_THAT(out.status().message(), HasSubstr("signal 11"));
  EXPECT_THAT(out.status().message(), HasSubstr("pid "));
  EXPECT_EQ((*helpers)->stats().lost, 1);
  EXPECT_EQ((*helpers)->stats().in_process, 0);
}

TEST_F(NvrtcHelpersTest, WithoutAWorkerBinaryBuildsRunInProcess) {
  NvrtcHelperOptions o;
  o.worker_path = "/nonexistent/kiln-worker";
  absl::StatusOr<std::unique_ptr<NvrtcHelpers>> helpers = NvrtcHelpers::Create(o);
  ASSERT_TRUE(helpers.ok()) << helpers.status();
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<toolchain::CompileOutput> out = (*helpers)->Compile(VectorAdd("sm_80"));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(IsElf(out->cubin));
  }
  EXPECT_EQ((*helpers)->stats().in_process, 2);
  EXPECT_EQ((*helpers)->stats().started, 0);
}

TEST_F(NvrtcHelpersTest, InstalledRunnerServesNvrtcCompile) {
  std::shared_ptr<NvrtcHelpers> helpers = Make(1);
  ASSERT_NE(helpers, nullptr);
  const uint64_t handle = toolchain::InstallNvrtcRunner(
      [helpers](const toolchain::CudaCompileInput& in) { return helpers->Compile(in); });
  absl::StatusOr<toolchain::CompileOutput> out = toolchain::NvrtcCompile(VectorAdd("sm_80"));
  // A bad request is refused before any helper sees it.
  toolchain::CudaCompileInput bad = VectorAdd("sm_12");
  absl::StatusOr<toolchain::CompileOutput> refused = toolchain::NvrtcCompile(bad);
  toolchain::RemoveNvrtcRunner(handle);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(helpers->stats().builds, 1);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);

  // Removed: the next build runs in process.
  ASSERT_TRUE(toolchain::NvrtcCompile(VectorAdd("sm_80")).ok());
  EXPECT_EQ(helpers->stats().builds, 1);
}

TEST(NvrtcHelpersOptions, BadOptionsAreRefused) {
  NvrtcHelperOptions o;
  o.worker_path = kWorker;
  o.max_helpers = 0;
  EXPECT_EQ(NvrtcHelpers::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.max_helpers = 1;
  o.worker_path = "kiln-worker";
  EXPECT_THAT(NvrtcHelpers::Create(o).status().message(), HasSubstr("must be a path"));
}

} // namespace
} // namespace kiln::server
