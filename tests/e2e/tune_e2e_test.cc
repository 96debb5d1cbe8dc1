// End-to-end: Tune through the real kilnd (CPU device, its kiln-worker):
// the stream carries progress and then the result; the best config is then
// what LookupBest answers and what Compile's use_best_for_device builds;
// the job is watchable and re-attachable by id.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"
#include "tests/support/example_loader.h"

namespace kiln {
namespace {

namespace pb = kiln::v1;
const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";

pb::BindingValue Int(int64_t v) {
  pb::BindingValue b;
  b.set_int_value(v);
  return b;
}

TEST(TuneE2ETest, StreamsProgressThenTheResultAndStoresTheBest) {
  const std::string dir = ::testing::TempDir() + "tune_e2e";
  std::filesystem::remove_all(dir);
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir}))
      << daemon.output();
  auto stub =
      pb::Kiln::NewStub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));

  testing::ExampleFile ex =
      testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/elementwise/add.py");
  pb::TuneRequest req;
  req.mutable_program()->set_tilelang_source(ex.source);
  req.mutable_program()->set_file_name(ex.rel_path);
  (*req.mutable_program()->mutable_bindings())["M"] = Int(77);
  (*req.mutable_program()->mutable_bindings())["N"] = Int(130);
  req.set_target("cpu");
  req.set_strategy(pb::TUNE_STRATEGY_EXHAUSTIVE);
  for (const char* name : {"block_M", "block_N"}) {
    pb::ValueList& list = (*req.mutable_space()->mutable_candidates())[name];
    *list.add_values() = Int(16);
    *list.add_values() = Int(32);
  }
  // Tunables not declared take their derived domains: pin threads too.
  *(*req.mutable_space()->mutable_candidates())["threads"].add_values() = Int(256);
  req.mutable_budget()->set_repeats(3);

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(3));
  auto reader = stub->Tune(&ctx, req);
  pb::TuneEvent event;
  int progress_events = 0, last_total = 0, measured = 0;
  std::string job_id;
  std::optional<pb::TuneResult> result;
  while (reader->Read(&event)) {
    job_id = event.job_id();
    if (event.has_progress()) {
      ++progress_events;
      last_total = event.progress().candidates_total(); // 0 while planning
      measured = std::max(measured, event.progress().candidates_measured());
    }
    if (event.has_result()) result = event.result();
  }
  grpc::Status s = reader->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message() << daemon.output();
  ASSERT_TRUE(result.has_value());
  EXPECT_GE(progress_events, 2);
  EXPECT_EQ(last_total, 4);
  EXPECT_GE(measured, 1);
  EXPECT_EQ(result->measurements_size(), 4);
  ASSERT_TRUE(result->has_best());
  EXPECT_EQ(result->best().status(), pb::Measurement::STATUS_OK);

  // LookupBest answers the tune's best.
  pb::LookupBestRequest lookup;
  *lookup.mutable_program() = req.program();
  lookup.set_target("cpu");
  pb::LookupBestResponse best;
  {
    grpc::ClientContext c;
    ASSERT_TRUE(stub->LookupBest(&c, lookup, &best).ok());
  }
  ASSERT_TRUE(best.found());
  EXPECT_EQ(best.config().at("block_M").int_value(),
            result->best().config().at("block_M").int_value());
  EXPECT_EQ(best.config().at("block_N").int_value(),
            result->best().config().at("block_N").int_value());
  EXPECT_EQ(best.measurement().key(), result->best().key());

  // Compile with the best builds the best's artifact (a cache hit).
  pb::CompileRequest compile;
  *compile.mutable_program() = req.program();
  compile.set_target("cpu");
  compile.set_use_best_for_device(best.measurement().device_model());
  pb::CompileResponse compiled;
  {
    grpc::ClientContext c;
    grpc::Status cs = stub->Compile(&c, compile, &compiled);
    ASSERT_TRUE(cs.ok()) << cs.error_message();
  }
  EXPECT_EQ(compiled.artifact().key(), result->best().key());
  EXPECT_EQ(compiled.outcome(), pb::CACHE_OUTCOME_HIT);

  // The job: watchable, and re-attachable by id for its result.
  {
    grpc::ClientContext c;
    pb::GetJobRequest get;
    get.set_job_id(job_id);
    pb::Job job;
    ASSERT_TRUE(stub->GetJob(&c, get, &job).ok());
    EXPECT_EQ(job.kind(), pb::JOB_KIND_TUNE);
    EXPECT_EQ(job.state(), pb::JOB_STATE_SUCCEEDED);
  }
  pb::TuneRequest attach;
  attach.set_attach_job_id(job_id);
  grpc::ClientContext ac;
  auto again = stub->Tune(&ac, attach);
  std::optional<pb::TuneResult> reattached;
  while (again->Read(&event)) {
    if (event.has_result()) reattached = event.result();
  }
  ASSERT_TRUE(again->Finish().ok());
  ASSERT_TRUE(reattached.has_value());
  EXPECT_EQ(reattached->best().key(), result->best().key());
}

} // namespace
} // namespace kiln
