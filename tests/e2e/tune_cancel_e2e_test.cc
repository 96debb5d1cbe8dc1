// End-to-end: the compile-time evaluations a Tune runs itself (the Roller
// planner's analysis and verification, the inputs' launch, the reference
// compile) take the daemon's evaluation budget (compile.eval_max_*) and the
// tune job's cancellation (issue 27): CancelJob stops a tune whose
// program's specialization is slow within moments, and a program past the
// configured budget fails the tune with RESOURCE_EXHAUSTED naming it.
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"
#include "tests/support/example_loader.h"

namespace kiln {
namespace {

namespace pb = kiln::v1;

pb::BindingValue Int(int64_t v) {
  pb::BindingValue b;
  b.set_int_value(v);
  return b;
}

// examples/elementwise/add.py whose factory first counts to `iterations`
// (a multiple of 1000) at compile time, two evaluation steps each: every
// specialization of it costs that loop.
std::string SlowAdd(int64_t iterations) {
  testing::ExampleFile ex =
      testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/elementwise/add.py");
  const std::string def = "def add(M, N, block_M, block_N, threads=256, dtype=T.float16):\n";
  std::string source = ex.source;
  const size_t at = source.find(def);
  EXPECT_NE(at, std::string::npos);
  // Two loops: one range may not pass 2^20 items.
  source.insert(at + def.size(),
                "    slow = 0\n    for i in range(" + std::to_string(iterations / 1000) +
                    "):\n        for j in range(1000):\n            slow = slow + 1\n");
  return source;
}

// An exhaustive CPU tune of SlowAdd over 3 x 3 tiles: the planner analyses
// the program and verifies every config, each a specialization.
pb::TuneRequest SlowTune(int64_t iterations) {
  pb::TuneRequest req;
  req.mutable_program()->set_tilelang_source(SlowAdd(iterations));
  req.mutable_program()->set_file_name("slow_add.py");
  (*req.mutable_program()->mutable_bindings())["M"] = Int(64);
  (*req.mutable_program()->mutable_bindings())["N"] = Int(64);
  req.set_target("cpu");
  req.set_strategy(pb::TUNE_STRATEGY_EXHAUSTIVE);
  auto& space = *req.mutable_space()->mutable_candidates();
  for (int v : {16, 32, 64}) *space["block_M"].add_values() = Int(v);
  for (int v : {16, 32, 64}) *space["block_N"].add_values() = Int(v);
  *space["threads"].add_values() = Int(128);
  req.mutable_budget()->set_repeats(1);
  return req;
}

std::chrono::system_clock::time_point In(int seconds) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

TEST(TuneCancelE2ETest, CancelJobStopsATuneWhoseSpecializationIsSlow) {
  const std::string dir = ::testing::TempDir() + "tune_cancel_e2e_slow";
  std::filesystem::remove_all(dir);
  testing::DaemonProcess daemon;
  // A budget that lets each specialization run its ~10^7 steps (about a
  // second here; the planner makes a dozen or more of them).
  ASSERT_TRUE(daemon.Start(testing::KilndUnderTest(),
                           {"--listen=127.0.0.1:0", "--cache-dir=" + dir, "--grace-period=2s",
                            "--compile-eval-max-steps=1000000000000",
                            "--compile-eval-max-memory=1TiB", "--compile-eval-max-time=300s"}))
      << daemon.output();
  auto stub =
      pb::Kiln::NewStub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));

  grpc::ClientContext ctx;
  ctx.set_deadline(In(120));
  auto reader = stub->Tune(&ctx, SlowTune(5'000'000));
  pb::TuneEvent event;
  ASSERT_TRUE(reader->Read(&event)) << reader->Finish().error_message();
  const std::string job_id = event.job_id();
  ASSERT_FALSE(job_id.empty());
  // Into the planning (its first specializations run).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  {
    grpc::ClientContext c;
    c.set_deadline(In(10));
    pb::CancelJobRequest cancel;
    cancel.set_job_id(job_id);
    pb::CancelJobResponse response;
    const grpc::Status s = stub->CancelJob(&c, cancel, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  const auto cancelled_at = std::chrono::steady_clock::now();
  while (reader->Read(&event)) {
  }
  const grpc::Status end = reader->Finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - cancelled_at).count();
  EXPECT_EQ(end.error_code(), grpc::StatusCode::CANCELLED) << end.error_message();
  // The evaluation in flight sees the flag within a few thousand steps;
  // without it the planner ran its remaining specializations (tens of
  // seconds) before the sweep looked at the job.
  EXPECT_LT(seconds, 5.0) << end.error_message();

  grpc::ClientContext c;
  c.set_deadline(In(10));
  pb::GetJobRequest get;
  get.set_job_id(job_id);
  pb::Job job;
  const grpc::Status s = stub->GetJob(&c, get, &job);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(job.state(), pb::JOB_STATE_CANCELLED) << job.DebugString();
}

TEST(TuneCancelE2ETest, TheTunesEvaluationsHaveTheConfiguredBudget) {
  const std::string dir = ::testing::TempDir() + "tune_cancel_e2e_budget";
  std::filesystem::remove_all(dir);
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(testing::KilndUnderTest(),
                           {"--listen=127.0.0.1:0", "--cache-dir=" + dir, "--grace-period=2s",
                            "--compile-eval-max-steps=100000"}))
      << daemon.output();
  auto stub =
      pb::Kiln::NewStub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(In(120));
  // 400,000 steps: within the built-in default (2,000,000), past the
  // daemon's setting.
  auto reader = stub->Tune(&ctx, SlowTune(200'000));
  pb::TuneEvent event;
  bool has_result = false;
  while (reader->Read(&event)) has_result = has_result || event.has_result();
  const grpc::Status end = reader->Finish();
  EXPECT_FALSE(has_result);
  EXPECT_EQ(end.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << end.error_message();
  EXPECT_NE(end.error_message().find("budget of 100000 steps"), std::string::npos)
      << end.error_message();
  EXPECT_NE(end.error_message().find("slow_add.py:"), std::string::npos) << end.error_message();
}

} // namespace
} // namespace kiln
