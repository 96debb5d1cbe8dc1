// End-to-end: Tune through the real kilnd (CPU device, its kiln-worker):
// the stream carries progress and then the result; the best config is then
// what LookupBest answers and what Compile's use_best_for_device builds;
// the job is watchable and re-attachable by id.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include "compiler/passes/split_k.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"
#include "tests/e2e/tune_stream.h"
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

// An exhaustive CPU tune of examples/elementwise/add.py at M x N over
// block_M x block_N (threads pinned too: tunables not declared would take
// their derived domains).
pb::TuneRequest AddTune(int64_t m, int64_t n, const std::vector<int>& block_m,
                        const std::vector<int>& block_n, int threads, int repeats) {
  testing::ExampleFile ex =
      testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/elementwise/add.py");
  pb::TuneRequest req;
  req.mutable_program()->set_tilelang_source(ex.source);
  req.mutable_program()->set_file_name(ex.rel_path);
  (*req.mutable_program()->mutable_bindings())["M"] = Int(m);
  (*req.mutable_program()->mutable_bindings())["N"] = Int(n);
  req.set_target("cpu");
  req.set_strategy(pb::TUNE_STRATEGY_EXHAUSTIVE);
  auto& space = *req.mutable_space()->mutable_candidates();
  for (int v : block_m) *space["block_M"].add_values() = Int(v);
  for (int v : block_n) *space["block_N"].add_values() = Int(v);
  *space["threads"].add_values() = Int(threads);
  req.mutable_budget()->set_repeats(repeats);
  return req;
}

TEST(TuneE2ETest, StreamsProgressThenTheResultAndStoresTheBest) {
  const std::string dir = ::testing::TempDir() + "tune_e2e";
  std::filesystem::remove_all(dir);
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir}))
      << daemon.output();
  auto stub =
      pb::Kiln::NewStub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));

  const pb::TuneRequest req = AddTune(77, 130, {16, 32}, {16, 32}, 256, 3);

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

// The split-K knob (kiln:split_k, compiler/passes/split_k.h) through kilnd:
// a declared sweep over it measures split and unsplit builds of one tile on
// the CPU worker (both validated against the reference), stores the best
// with the knob in its config, and Compile builds what the config says
// (the split build has a second kernel and a workspace) from
// use_best_for_device and from an explicit config entry alike.
TEST(TuneE2ETest, TheSplitKKnobIsSweptStoredAndBuilt) {
  const std::string dir = testing::FreshTestDir("tune_e2e_split_k_");
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir}))
      << daemon.output();
  auto stub =
      pb::Kiln::NewStub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
  testing::ExampleFile ex = testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/gemm/gemm.py");
  pb::TuneRequest req;
  req.mutable_program()->set_tilelang_source(ex.source);
  req.mutable_program()->set_file_name(ex.rel_path);
  for (const auto& [k, v] : {std::pair<const char*, int>{"M", 16}, {"N", 96}, {"K", 256}}) {
    (*req.mutable_program()->mutable_bindings())[k] = Int(v);
  }
  req.set_target("cpu");
  req.set_strategy(pb::TUNE_STRATEGY_EXHAUSTIVE);
  auto& space = *req.mutable_space()->mutable_candidates();
  for (const auto& [k, v] : {std::pair<const char*, int>{"block_M", 16},
                             {"block_N", 32},
                             {"block_K", 32},
                             {"num_stages", 2},
                             {"threads", 128}}) {
    *space[k].add_values() = Int(v);
  }
  for (int s : {1, 2, 4}) *space["kiln:split_k"].add_values() = Int(s);
  req.mutable_budget()->set_repeats(2);
  const testing::TuneOutcome tune = testing::RunTune(*stub, req, std::chrono::minutes(3));
  ASSERT_TRUE(tune.status.ok()) << tune.status.error_message() << daemon.output();
  ASSERT_TRUE(tune.result.has_value());
  const std::optional<pb::TuneResult>& result = tune.result;
  ASSERT_EQ(result->measurements_size(), 3);
  std::vector<int64_t> measured;
  for (const pb::Measurement& m : result->measurements()) {
    EXPECT_EQ(m.status(), pb::Measurement::STATUS_OK) << m.error();
    measured.push_back(m.config().at("kiln:split_k").int_value());
  }
  std::sort(measured.begin(), measured.end());
  EXPECT_EQ(measured, (std::vector<int64_t>{1, 2, 4}));
  ASSERT_TRUE(result->has_best());
  const int64_t best_split = result->best().config().at("kiln:split_k").int_value();

  // Compile with the stored best builds the best's artifact.
  pb::CompileRequest compile;
  *compile.mutable_program() = req.program();
  compile.set_target("cpu");
  compile.set_use_best_for_device(result->best().device_model());
  pb::CompileResponse from_best;
  {
    grpc::ClientContext c;
    const grpc::Status cs = stub->Compile(&c, compile, &from_best);
    ASSERT_TRUE(cs.ok()) << cs.error_message();
  }
  EXPECT_EQ(from_best.artifact().key(), result->best().key());
  // The default reduction: fused (one kernel; partials and tickets) or a
  // reduce kernel (two kernels; partials).
  const bool fused = passes::kDefaultSplitKReduce == passes::SplitKReduce::kFused;
  EXPECT_EQ(from_best.artifact().launch().workspaces_size(), best_split > 1 ? (fused ? 2 : 1) : 0);
  // An explicit config entry: the split build.
  compile.clear_use_best_for_device();
  for (const auto& [k, v] : result->best().config()) (*compile.mutable_config())[k] = v;
  (*compile.mutable_config())["kiln:split_k"] = Int(4);
  pb::CompileResponse split;
  {
    grpc::ClientContext c;
    const grpc::Status cs = stub->Compile(&c, compile, &split);
    ASSERT_TRUE(cs.ok()) << cs.error_message();
  }
  EXPECT_EQ(split.artifact().launch().next_kernels_size(), fused ? 0 : 1);
  EXPECT_EQ(split.artifact().launch().grid(2), "4");
  ASSERT_EQ(split.artifact().launch().workspaces_size(), fused ? 2 : 1);
  EXPECT_EQ(split.artifact().launch().workspaces(0).name(), "kiln_splitk_partials");
  if (fused) {
    EXPECT_EQ(split.artifact().launch().workspaces(1).name(), "kiln_splitk_tickets");
  }
  // A knob Kiln does not have, or a value out of range: INVALID_ARGUMENT.
  for (const auto& [name, value] :
       {std::pair<const char*, int>{"kiln:split_k", 0}, {"kiln:unroll", 2}}) {
    pb::CompileRequest bad = compile;
    (*bad.mutable_config())[name] = Int(value);
    pb::CompileResponse r;
    grpc::ClientContext c;
    const grpc::Status cs = stub->Compile(&c, bad, &r);
    EXPECT_EQ(cs.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << name;
    EXPECT_NE(cs.error_message().find(name), std::string::npos) << cs.error_message();
  }
}

// The sweep has the worker make the generated inputs while the candidates
// compile (a prepare_inputs request before the reference run), and the
// reference run leaves its outputs on the worker: every other candidate
// validates by the reference id, none is sent the outputs (a validation that carries
// them shows a keep_reference phase in the worker's trace).
TEST(TuneE2ETest, InputsAreMadeWhileCandidatesCompileAndTheReferenceStaysOnTheWorker) {
  const std::string dir = ::testing::TempDir() + "tune_e2e_inputs";
  std::filesystem::remove_all(dir);
  testing::DaemonProcess daemon;
  setenv("KILN_WORKER_TRACE", "1", 1);
  const bool started = daemon.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir});
  unsetenv("KILN_WORKER_TRACE");
  ASSERT_TRUE(started) << daemon.output();
  auto stub =
      pb::Kiln::NewStub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
  const pb::TuneRequest req = AddTune(64, 96, {16, 32}, {16, 32}, 128, 2);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(3));
  auto reader = stub->Tune(&ctx, req);
  pb::TuneEvent event;
  std::optional<pb::TuneResult> result;
  while (reader->Read(&event)) {
    if (event.has_result()) result = event.result();
  }
  ASSERT_TRUE(reader->Finish().ok()) << daemon.output();
  ASSERT_TRUE(result.has_value());
  ASSERT_EQ(result->measurements_size(), 4);
  for (const pb::Measurement& m : result->measurements()) {
    EXPECT_EQ(m.status(), pb::Measurement::STATUS_OK) << m.error();
  }
  daemon.Stop();
  const std::string& log = daemon.output();
  const size_t prepared = log.find("kiln-worker trace: prepare_inputs");
  const size_t first_run = log.find("kiln-worker trace: run ");
  ASSERT_NE(prepared, std::string::npos) << log;
  ASSERT_NE(first_run, std::string::npos) << log;
  EXPECT_LT(prepared, first_run) << log;
  // Three validations, each against the kept reference: the reference
  // candidate itself is confirmed by the first that matches it.
  size_t validations = 0;
  for (size_t at = log.find("kiln-worker trace: validate "); at != std::string::npos;
       at = log.find("kiln-worker trace: validate ", at + 1)) {
    ++validations;
  }
  EXPECT_EQ(validations, 3u) << log;
  EXPECT_EQ(log.find("keep_reference="), std::string::npos) << log;
}

// The pids of `parent`'s children whose command name is `name` (/proc).
std::vector<pid_t> ChildrenNamed(pid_t parent, const std::string& name) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "pid (comm) state ppid ...": comm may hold spaces, so split at the last ')'.
    const size_t open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && line.substr(open + 1, close - open - 1) == name) {
      out.push_back(static_cast<pid_t>(std::atoi(pid.c_str())));
    }
  }
  return out;
}

// One device, so the reference's outputs stay on the worker that made them.
// When that worker is lost mid-sweep (killed here, as a crash would), the
// restarted one runs the reference candidate again: the candidates measured
// after the loss validate against it, none reads as a wrong result.
TEST(TuneE2ETest, AWorkerLostMidSweepMakesTheReferenceAgain) {
  const std::string dir = ::testing::TempDir() + "tune_e2e_lost_worker";
  std::filesystem::remove_all(dir);
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir}))
      << daemon.output();
  auto stub =
      pb::Kiln::NewStub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
  const pb::TuneRequest req = AddTune(256, 256, {8, 16, 32, 64}, {32, 64}, 128, 2);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(3));
  auto reader = stub->Tune(&ctx, req);
  pb::TuneEvent event;
  std::optional<pb::TuneResult> result;
  int64_t killed_at_ms = 0;
  while (reader->Read(&event)) {
    if (event.has_result()) result = event.result();
    if (killed_at_ms == 0 && event.has_progress() && event.progress().candidates_measured() >= 1 &&
        event.progress().candidates_measured() + event.progress().candidates_failed() < 6) {
      for (pid_t worker : ChildrenNamed(daemon.pid(), "kiln-worker")) kill(worker, SIGKILL);
      killed_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    }
  }
  ASSERT_TRUE(reader->Finish().ok()) << daemon.output();
  ASSERT_TRUE(result.has_value());
  ASSERT_NE(killed_at_ms, 0) << "the sweep ended before a worker could be lost";
  ASSERT_EQ(result->measurements_size(), 8);
  int ok_after = 0;
  for (const pb::Measurement& m : result->measurements()) {
    EXPECT_NE(m.status(), pb::Measurement::STATUS_WRONG_RESULT) << m.DebugString();
    if (m.status() == pb::Measurement::STATUS_OK && m.unix_ms() > killed_at_ms) ++ok_after;
  }
  EXPECT_GE(ok_after, 1) << result->DebugString();
  daemon.Stop();
  EXPECT_NE(daemon.output().find("tune reference made again"), std::string::npos)
      << daemon.output();
}

// Clients that cancel Tune and WatchJob streams while a write is in flight
// (issue 27, found by tests/fuzz/rpc_fuzz.py): the cancel and the failed
// write both finished the call, and the second Finish (or a write started
// after it) aborted or crashed the daemon within a few dozen such calls.
TEST(TuneE2ETest, ClientsCancellingStreamsMidWriteLeaveTheDaemonUp) {
  const std::string dir = ::testing::TempDir() + "tune_e2e_cancel";
  std::filesystem::remove_all(dir);
  testing::DaemonProcess daemon;
  ASSERT_TRUE(
      daemon.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir, "--grace-period=2s"}))
      << daemon.output();
  auto stub =
      pb::Kiln::NewStub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
  pb::TuneRequest req = AddTune(64, 64, {16, 32}, {16, 32}, 128, 1);
  req.set_remeasure(true);
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        auto reader = stub->Tune(&ctx, req);
        pb::TuneEvent event;
        for (int read = 0; read < (i + t) % 3 && reader->Read(&event); ++read) {
        }
        if (!event.job_id().empty() && i % 2 == 0) {
          grpc::ClientContext wctx;
          wctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
          pb::WatchJobRequest watch;
          watch.set_job_id(event.job_id());
          auto watcher = stub->WatchJob(&wctx, watch);
          pb::Job job;
          watcher->Read(&job);
          wctx.TryCancel();
          watcher->Finish();
        }
        ctx.TryCancel();
        reader->Finish();
      }
    });
  }
  for (auto& c : clients) c.join();
  int status = 0;
  ASSERT_EQ(waitpid(daemon.pid(), &status, WNOHANG), 0)
      << "kilnd died (signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")\n"
      << daemon.output();
  grpc::ClientContext c;
  c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  pb::GetVersionResponse version;
  grpc::Status vs = stub->GetVersion(&c, pb::GetVersionRequest(), &version);
  EXPECT_TRUE(vs.ok()) << vs.error_message();
}

// Tune's per-candidate counts have Benchmark's caps (issue 27): a fuzzed
// budget.warmup of 2^31-1 used to be accepted and held the CPU worker until
// the worker request timeout; now each field out of range is INVALID_ARGUMENT
// at once, naming the field and its limit, and the worker stays free for the
// next sweep.
TEST(TuneE2ETest, BudgetCountsAboveBenchmarksCapsAreInvalidArgumentAtOnce) {
  const std::string dir = ::testing::TempDir() + "tune_e2e_budget_caps";
  std::filesystem::remove_all(dir);
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(
      kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir, "--worker-request-timeout=20s"}))
      << daemon.output();
  auto stub =
      pb::Kiln::NewStub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
  struct Case {
    int32_t warmup, repeats;
    double max_seconds;
    std::string field, bound;
  };
  const std::vector<Case> cases = {
      {2147483647, 2, 0, "budget.warmup: 2147483647", "0..10000"},
      {10001, 2, 0, "budget.warmup: 10001", "0..10000"},
      {-1, 2, 0, "budget.warmup: -1", "0..10000"},
      {1, 100001, 0, "budget.repeats: 100001", "0..100000"},
      {1, 2147483647, 0, "budget.repeats: 2147483647", "0..100000"},
      {1, 2, -1, "budget.max_seconds: -1", ">= 0"},
  };
  for (const Case& c : cases) {
    pb::TuneRequest req = AddTune(64, 64, {16, 32}, {16}, 128, c.repeats);
    req.mutable_budget()->set_warmup(c.warmup);
    req.mutable_budget()->set_max_seconds(c.max_seconds);
    grpc::ClientContext ctx;
    // Far below the worker request timeout: an accepted request cannot end
    // in time.
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto reader = stub->Tune(&ctx, req);
    pb::TuneEvent event;
    int events = 0;
    while (reader->Read(&event)) ++events;
    grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << c.field << ": " << s.error_code() << " " << s.error_message();
    EXPECT_NE(s.error_message().find(c.field), std::string::npos) << s.error_message();
    EXPECT_NE(s.error_message().find(c.bound), std::string::npos) << s.error_message();
    EXPECT_EQ(events, 0) << c.field;
  }
  // The largest accepted warm-up count still runs (and the worker is free).
  pb::TuneRequest ok = AddTune(64, 64, {16}, {16}, 128, 2);
  ok.mutable_budget()->set_warmup(10000);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
  auto reader = stub->Tune(&ctx, ok);
  pb::TuneEvent event;
  std::optional<pb::TuneResult> result;
  while (reader->Read(&event)) {
    if (event.has_result()) result = event.result();
  }
  grpc::Status s = reader->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message() << daemon.output();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->measurements_size(), 1);
}

} // namespace
} // namespace kiln
