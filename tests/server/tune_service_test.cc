// The tune sweep (server/tune_service.h) in process with the real pieces: a
// cache directory, the compile service and the device pool's CPU worker.
// Grid and random sweeps over a declared space measure every candidate,
// store the fastest as the best config and every run in the history; a
// repeated tune reuses the history instead of compiling again; compile
// errors and wrong results are recorded per config and never become best;
// identical requests join one job and attach_job_id re-attaches; a request
// the planner cannot serve fails clearly; with two CPU workers a sweep
// measures on both.
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/cache_artifact_store.h"
#include "server/roller_planner.h"
#include "server/tune_service.h"
#include "tests/support/example_loader.h"
#include "util/temp_dir.h"

namespace kiln::server {
namespace {

namespace pb = kiln::v1;
using ::testing::HasSubstr;

constexpr char kWorker[] = KILN_BINARY_DIR "/kiln-worker";

pb::BindingValue Int(int64_t v) {
  pb::BindingValue b;
  b.set_int_value(v);
  return b;
}

void AddAxis(pb::TuneRequest* r, const std::string& name, const std::vector<int64_t>& values) {
  pb::ValueList& list = (*r->mutable_space()->mutable_candidates())[name];
  for (int64_t v : values) *list.add_values() = Int(v);
}

class TuneServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-tune-test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<util::TempDir>(*std::move(dir));
    absl::StatusOr<std::unique_ptr<cache::Cache>> c = cache::Cache::Open(dir_->path());
    ASSERT_TRUE(c.ok()) << c.status();
    cache_ = *std::move(c);
    store_ = std::make_unique<CacheArtifactStore>(cache_.get());
    CompilePoolOptions po;
    po.threads = 2;
    pool_ = std::make_unique<CompilePool>(po);
    measure_pool_ = std::make_unique<CompilePool>(po);
    compile_ = std::make_unique<CompileService>(store_.get(), &jobs_, pool_.get());
    DevicePoolOptions dp;
    dp.worker_path = kWorker;
    dp.discover_gpus = false;
    absl::StatusOr<std::unique_ptr<DevicePool>> devices = DevicePool::Start(std::move(dp));
    ASSERT_TRUE(devices.ok()) << devices.status();
    devices_ = *std::move(devices);
    service_ =
        std::make_unique<TuneService>(compile_.get(), store_.get(), devices_.get(), &jobs_,
                                      measure_pool_.get(), cache_.get(), DeclaredSpacePlanner);
  }
  void TearDown() override {
    jobs_.CancelAll();
    if (measure_pool_) measure_pool_->Shutdown();
    if (pool_) pool_->Shutdown();
    service_.reset();
    if (devices_) devices_->Shutdown();
  }

  static pb::ProgramSource Example(const std::string& path,
                                   const std::vector<std::pair<std::string, int64_t>>& shape) {
    testing::ExampleFile ex = testing::LoadExampleFile(KILN_SOURCE_DIR, path);
    pb::ProgramSource p;
    p.set_tilelang_source(ex.source);
    p.set_file_name(ex.rel_path);
    for (const auto& [k, v] : shape) (*p.mutable_bindings())[k] = Int(v);
    return p;
  }

  TuneCall AddGrid() {
    TuneCall call;
    pb::TuneRequest& r = call.request;
    *r.mutable_program() = Example("examples/elementwise/add.py", {{"M", 77}, {"N", 130}});
    r.set_target("cpu");
    r.set_strategy(pb::TUNE_STRATEGY_EXHAUSTIVE);
    AddAxis(&r, "block_M", {8, 16});
    AddAxis(&r, "block_N", {32, 64});
    r.mutable_budget()->set_repeats(3);
    r.mutable_budget()->set_warmup(1);
    return call;
  }

  std::unique_ptr<util::TempDir> dir_;
  std::unique_ptr<cache::Cache> cache_;
  std::unique_ptr<CacheArtifactStore> store_;
  MemoryJobStore job_store_;
  JobManager jobs_{&job_store_};
  std::unique_ptr<CompilePool> pool_, measure_pool_;
  std::unique_ptr<CompileService> compile_;
  std::unique_ptr<DevicePool> devices_;
  std::unique_ptr<TuneService> service_;
};

TEST_F(TuneServiceTest, GridMeasuresEveryCandidateAndStoresTheFastest) {
  TuneCall call = AddGrid();
  absl::StatusOr<std::shared_ptr<Job>> job = service_->Start(call);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE((*job)->WaitDone(absl::Now() + absl::Minutes(2)));
  const TuneJobResult* r = (*job)->result<TuneJobResult>();
  ASSERT_NE(r, nullptr) << (*job)->status();
  const pb::TuneResult& result = r->result;
  ASSERT_EQ(result.measurements_size(), 4);
  std::set<std::string> configs;
  double fastest = 1e300;
  for (const pb::Measurement& m : result.measurements()) {
    EXPECT_EQ(m.status(), pb::Measurement::STATUS_OK) << m.error();
    EXPECT_EQ(m.samples(), 3);
    EXPECT_GT(m.median_us(), 0);
    EXPECT_EQ(m.device_id(), "cpu");
    EXPECT_EQ(m.key().size(), 64u);
    configs.insert(absl::StrCat(m.config().at("block_M").int_value(), "x",
                                m.config().at("block_N").int_value()));
    fastest = std::min(fastest, m.median_us());
  }
  EXPECT_EQ(configs, (std::set<std::string>{"8x32", "8x64", "16x32", "16x64"}));
  ASSERT_TRUE(result.has_best());
  EXPECT_DOUBLE_EQ(result.best().median_us(), fastest);
  EXPECT_EQ(result.best_artifact().key(), result.best().key());

  const pb::Job snapshot = (*job)->Snapshot();
  EXPECT_EQ(snapshot.tune_progress().candidates_total(), 4);
  EXPECT_EQ(snapshot.tune_progress().candidates_measured(), 4);
  EXPECT_EQ(snapshot.tune_progress().candidates_failed(), 0);

  const std::string model = devices_->Devices()[0].model();
  absl::StatusOr<cache::BestConfig> best =
      cache_->GetBest(BestKeyFor(call.request.program(), "cpu", model));
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->artifact_key, result.best().key());
  EXPECT_EQ(best->tuning_record_id, (*job)->id());
  absl::StatusOr<ConfigMap> stored = ConfigFromJson(best->config_json);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->at("block_M").int_value(), result.best().config().at("block_M").int_value());

  // Again: every config is in the history, nothing is compiled or measured.
  const int64_t builds = compile_->counters().builds.load();
  const int64_t measured = service_->counters().measured.load();
  absl::StatusOr<pb::TuneResult> again = service_->TuneSync(call);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->measurements_size(), 4);
  EXPECT_EQ(service_->counters().reused.load(), 4);
  EXPECT_EQ(compile_->counters().builds.load(), builds);
  EXPECT_EQ(service_->counters().measured.load(), measured);
  EXPECT_EQ(again->best().key(), result.best().key());

  // remeasure: every config is measured again (the builds are cache hits),
  // and the new runs join the history.
  call.request.set_remeasure(true);
  absl::StatusOr<pb::TuneResult> remeasured = service_->TuneSync(call);
  ASSERT_TRUE(remeasured.ok()) << remeasured.status();
  EXPECT_EQ(remeasured->measurements_size(), 4);
  EXPECT_EQ(service_->counters().measured.load(), measured + 4);
  EXPECT_EQ(service_->counters().reused.load(), 4);
  EXPECT_EQ(compile_->counters().builds.load(), builds);
  for (const pb::Measurement& m : remeasured->measurements()) {
    EXPECT_EQ(m.status(), pb::Measurement::STATUS_OK) << m.error();
    EXPECT_GT(m.unix_ms(), 0);
  }
  cache::MeasurementQuery q;
  q.label = TuneSeriesKey(BestKeyFor(call.request.program(), "cpu", model));
  q.limit = 0;
  absl::StatusOr<std::vector<cache::Measurement>> history = cache_->QueryMeasurements(q);
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_EQ(history->size(), 8u);
}

TEST_F(TuneServiceTest, EveryCpuWorkerMeasuresPartOfASweep) {
  // The candidates are built first (by a sweep on the fixture's one worker),
  // so that in the sweep under test they are ready at once and measuring is
  // the work the two workers share.
  TuneCall call = AddGrid();
  pb::TuneRequest& req = call.request;
  *req.mutable_program() = Example("examples/elementwise/add.py", {{"M", 512}, {"N", 1024}});
  req.mutable_space()->clear_candidates();
  AddAxis(&req, "block_M", {8, 16, 32});
  AddAxis(&req, "block_N", {32, 64, 128});
  absl::StatusOr<pb::TuneResult> built = service_->TuneSync(call);
  ASSERT_TRUE(built.ok()) << built.status();
  ASSERT_EQ(built->measurements_size(), 9);

  DevicePoolOptions dp;
  dp.worker_path = kWorker;
  dp.discover_gpus = false;
  dp.cpu_workers = 2;
  absl::StatusOr<std::unique_ptr<DevicePool>> two = DevicePool::Start(std::move(dp));
  ASSERT_TRUE(two.ok()) << two.status();
  TuneService service(compile_.get(), store_.get(), two->get(), &jobs_, measure_pool_.get(),
                      cache_.get(), DeclaredSpacePlanner);
  const int64_t builds = compile_->counters().builds.load();
  req.set_remeasure(true); // the history holds all nine
  absl::StatusOr<pb::TuneResult> result = service.TuneSync(call);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(compile_->counters().builds.load(), builds); // all cache hits
  ASSERT_EQ(result->measurements_size(), 9);
  std::map<std::string, int> per_device;
  double fastest = 1e300;
  for (const pb::Measurement& m : result->measurements()) {
    EXPECT_EQ(m.status(), pb::Measurement::STATUS_OK) << m.error();
    EXPECT_EQ(m.samples(), 3);
    ++per_device[m.device_id()];
    fastest = std::min(fastest, m.median_us());
  }
  EXPECT_EQ(per_device.size(), 2u) << "measured on: " << per_device.begin()->first;
  EXPECT_GT(per_device["cpu"], 0);
  EXPECT_GT(per_device["cpu:1"], 0);
  // Both workers validated what they measured against the one reference.
  EXPECT_EQ(service.counters().validated.load(), 8);
  ASSERT_TRUE(result->has_best());
  EXPECT_DOUBLE_EQ(result->best().median_us(), fastest);
  EXPECT_GT((*two)->Stats("cpu:1")->requests, 0);
  (*two)->Shutdown();
}

TEST_F(TuneServiceTest, OptionsThatChangeTheKernelKeepTheirOwnHistoryAndBest) {
  // The same grid built at another optimization level is another kernel per
  // config: nothing of the default tune's history is reused for it, and each
  // keeps its own best (the key's target carries the variant).
  TuneCall plain = AddGrid();
  absl::StatusOr<pb::TuneResult> first = service_->TuneSync(plain);
  ASSERT_TRUE(first.ok()) << first.status();
  TuneCall o2 = AddGrid();
  o2.request.mutable_options()->set_opt_level(2);
  const int64_t builds = compile_->counters().builds.load();
  absl::StatusOr<pb::TuneResult> second = service_->TuneSync(o2);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(service_->counters().reused.load(), 0);
  EXPECT_EQ(compile_->counters().builds.load(), builds + 4);
  for (const pb::Measurement& m : second->measurements()) {
    EXPECT_EQ(m.status(), pb::Measurement::STATUS_OK) << m.error();
    EXPECT_THAT(m.error(), ::testing::Not(HasSubstr("measured earlier")));
  }

  const std::string model = devices_->Devices()[0].model();
  const cache::BestConfigKey plain_key = BestKeyFor(plain.request.program(), "cpu", model);
  const cache::BestConfigKey o2_key =
      BestKeyFor(o2.request.program(), "cpu", model, o2.request.options());
  EXPECT_EQ(plain_key.target, "cpu");
  EXPECT_EQ(o2_key.target, "cpu;opt=2");
  absl::StatusOr<cache::BestConfig> plain_best = cache_->GetBest(plain_key);
  absl::StatusOr<cache::BestConfig> o2_best = cache_->GetBest(o2_key);
  ASSERT_TRUE(plain_best.ok()) << plain_best.status();
  ASSERT_TRUE(o2_best.ok()) << o2_best.status();
  EXPECT_EQ(plain_best->artifact_key, first->best().key());
  EXPECT_EQ(o2_best->artifact_key, second->best().key());
  EXPECT_NE(plain_best->artifact_key, o2_best->artifact_key);

  // A third run at -O2 reuses the -O2 history only.
  absl::StatusOr<pb::TuneResult> third = service_->TuneSync(o2);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(service_->counters().reused.load(), 4);
  EXPECT_EQ(third->best().key(), second->best().key());
}

TEST_F(TuneServiceTest, CompileErrorsAndWrongResultsAreRecordedAndNeverBest) {
  TuneCall call;
  pb::TuneRequest& r = call.request;
  *r.mutable_program() = Example("examples/gemm/gemm.py", {{"M", 100}, {"N", 72}, {"K", 40}});
  r.set_target("cpu");
  r.set_strategy(pb::TUNE_STRATEGY_EXHAUSTIVE);
  AddAxis(&r, "block_M", {32});
  AddAxis(&r, "block_N", {32});
  AddAxis(&r, "block_K", {8, 16}); // 8 is not a multiple of the fp16 MMA's k
  r.mutable_budget()->set_repeats(2);
  absl::StatusOr<pb::TuneResult> result = service_->TuneSync(call);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->measurements_size(), 2);
  int ok = 0, compile_errors = 0;
  for (const pb::Measurement& m : result->measurements()) {
    if (m.status() == pb::Measurement::STATUS_OK) ++ok;
    if (m.status() == pb::Measurement::STATUS_COMPILE_ERROR) {
      ++compile_errors;
      EXPECT_EQ(m.config().at("block_K").int_value(), 8);
      EXPECT_THAT(m.error(), HasSubstr("multiple of 16"));
    }
  }
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(compile_errors, 1);
  EXPECT_EQ(result->best().config().at("block_K").int_value(), 16);
  cache::MeasurementQuery q;
  q.failures_only = true;
  absl::StatusOr<std::vector<cache::Measurement>> failures = cache_->QueryMeasurements(q);
  ASSERT_TRUE(failures.ok());
  ASSERT_EQ(failures->size(), 1u);
  EXPECT_EQ((*failures)[0].failure, "compile_error");

  // A reference that computes something else: every candidate is wrong.
  TuneCall wrong = AddGrid();
  pb::ProgramSource reference = Example("examples/elementwise/add.py",
                                        {{"M", 77}, {"N", 130}, {"block_M", 16}, {"block_N", 64}});
  reference.set_tilelang_source(absl::StrReplaceAll(
      reference.tilelang_source(), {{"A[row, col] + B[row, col]", "A[row, col] - B[row, col]"}}));
  *wrong.request.mutable_validation()->mutable_reference_program() = reference;
  absl::StatusOr<pb::TuneResult> none = service_->TuneSync(wrong);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_best());
  ASSERT_EQ(none->measurements_size(), 4);
  for (const pb::Measurement& m : none->measurements()) {
    EXPECT_EQ(m.status(), pb::Measurement::STATUS_WRONG_RESULT);
    EXPECT_THAT(m.error(), HasSubstr("mismatches against the reference"));
    EXPECT_GT(m.max_abs_error(), 0);
  }
}

// A reference program that fails ends the sweep while its candidates'
// compiles still call back (here from the prepare pool, where the bad
// toolchain fails each one at once): no callback may run after the call
// returns, since they refer to the sweep's frame (kilnd died of
// bad_function_call; found by tests/fuzz/rpc_fuzz.py).
TEST_F(TuneServiceTest, AFailingReferenceEndsTheSweepOnlyOnceItsCompilesAreSettled) {
  PreparePoolOptions prepare_options;
  prepare_options.threads = 2;
  PreparePool prepare(prepare_options);
  {
    CompileService compile(store_.get(), &jobs_, pool_.get(), &prepare);
    TuneService tune(&compile, store_.get(), devices_.get(), &jobs_, measure_pool_.get(),
                     cache_.get(), DeclaredSpacePlanner);
    TuneCall call;
    pb::TuneRequest& r = call.request;
    *r.mutable_program() = Example("examples/elementwise/add.py", {{"M", 77}, {"N", 130}});
    r.set_target("cpu");
    r.set_strategy(pb::TUNE_STRATEGY_EXHAUSTIVE);
    // More candidates than a sweep compiles at once: callbacks submit more.
    AddAxis(&r, "block_M", {1, 2, 4, 8, 16, 32, 64, 128});
    AddAxis(&r, "block_N", {1, 2, 4, 8, 16, 32, 64, 128});
    r.mutable_options()->set_toolchain("a=b=c");
    *r.mutable_validation()->mutable_reference_program() = r.program();
    for (int round = 0; round < 40; ++round) {
      r.mutable_budget()->set_repeats(round + 2); // a new request each round
      absl::StatusOr<pb::TuneResult> result = tune.TuneSync(call);
      ASSERT_FALSE(result.ok());
      EXPECT_THAT(result.status().message(), HasSubstr("validation.reference_program"));
    }
    prepare.Shutdown(); // its tasks call into the services
  }
}

// The first candidate to compile makes the reference. It is not validated
// against its own run: the next candidate that matches it confirms it, so a
// sweep of four runs three validations and no self-check.
TEST_F(TuneServiceTest, TheReferenceCandidateIsConfirmedByTheNextMatchNotByItself) {
  absl::StatusOr<pb::TuneResult> result = service_->TuneSync(AddGrid());
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->measurements_size(), 4);
  for (const pb::Measurement& m : result->measurements()) {
    EXPECT_EQ(m.status(), pb::Measurement::STATUS_OK) << m.error();
    EXPECT_EQ(m.samples(), 3);
  }
  EXPECT_EQ(service_->counters().validated.load(), 3);
  EXPECT_EQ(service_->counters().reference_self_checks.load(), 0);
  EXPECT_EQ(service_->counters().measured.load(), 4);
}

// Every config computes something different (the tunables scale B), so no
// candidate matches the reference candidate: the three others are wrong
// results, and the reference candidate is compared with a second run of
// itself before its measurement counts.
TEST_F(TuneServiceTest, AReferenceNoCandidateMatchesIsComparedWithItsOwnSecondRun) {
  TuneCall call = AddGrid();
  pb::ProgramSource& program = *call.request.mutable_program();
  program.set_tilelang_source(absl::StrReplaceAll(
      program.tilelang_source(),
      {{"A[row, col] + B[row, col]", "A[row, col] + B[row, col] * (block_M + block_N)"}}));
  absl::StatusOr<pb::TuneResult> result = service_->TuneSync(call);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->measurements_size(), 4);
  int ok = 0, wrong = 0;
  for (const pb::Measurement& m : result->measurements()) {
    if (m.status() == pb::Measurement::STATUS_OK) {
      ++ok;
      EXPECT_EQ(m.max_abs_error(), 0);
      EXPECT_EQ(m.samples(), 3);
      ASSERT_TRUE(result->has_best());
      EXPECT_EQ(result->best().key(), m.key());
    }
    if (m.status() == pb::Measurement::STATUS_WRONG_RESULT) {
      ++wrong;
      EXPECT_THAT(m.error(), HasSubstr("mismatches against the reference"));
    }
  }
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(wrong, 3);
  EXPECT_EQ(service_->counters().reference_self_checks.load(), 1);
  EXPECT_EQ(service_->counters().validated.load(), 4);
}

TEST_F(TuneServiceTest, RandomIsSeededAndBudgeted) {
  TuneCall call = AddGrid();
  call.request.set_strategy(pb::TUNE_STRATEGY_RANDOM);
  call.request.mutable_budget()->set_max_candidates(2);
  call.request.mutable_validation()->set_seed(5);
  absl::StatusOr<std::vector<TuneCandidate>> a =
      DeclaredSpacePlanner(call.request, devices_->Devices()[0]);
  absl::StatusOr<std::vector<TuneCandidate>> b =
      DeclaredSpacePlanner(call.request, devices_->Devices()[0]);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(ConfigToJson((*a)[i].config), ConfigToJson((*b)[i].config));
  }
  absl::StatusOr<pb::TuneResult> result = service_->TuneSync(call);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->measurements_size(), 2);
}

TEST_F(TuneServiceTest, IdenticalRequestsJoinAndAttachFindsTheJob) {
  TuneCall call = AddGrid();
  absl::StatusOr<std::shared_ptr<Job>> first = service_->Start(call);
  absl::StatusOr<std::shared_ptr<Job>> second = service_->Start(call);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ((*first)->id(), (*second)->id());
  TuneCall attach;
  attach.request.set_attach_job_id((*first)->id());
  absl::StatusOr<std::shared_ptr<Job>> attached = service_->Start(attach);
  ASSERT_TRUE(attached.ok()) << attached.status();
  EXPECT_EQ((*attached)->id(), (*first)->id());
  ASSERT_TRUE((*first)->WaitDone(absl::Now() + absl::Minutes(2)));
  EXPECT_EQ(service_->counters().jobs.load(), 1);

  attach.request.set_attach_job_id("j-0000000000000000");
  EXPECT_EQ(service_->Start(attach).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TuneServiceTest, TheRollerPlannerProposesVerifiedRankedCandidates) {
  TuneCall call = AddGrid();
  call.request.clear_space();
  call.request.set_strategy(pb::TUNE_STRATEGY_ROLLER);
  call.request.mutable_budget()->set_max_candidates(3);
  absl::StatusOr<std::vector<TuneCandidate>> planned =
      RollerPlanner(call.request, devices_->Devices()[0]);
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->size(), 3u);
  for (size_t i = 0; i < planned->size(); ++i) {
    const TuneCandidate& c = (*planned)[i];
    EXPECT_GT(c.predicted_us, 0);
    EXPECT_FALSE(c.rationale.empty());
    EXPECT_TRUE(c.config.count("block_M")) << ConfigToJson(c.config);
    if (i > 0) {
      EXPECT_GE(c.predicted_us, (*planned)[i - 1].predicted_us);
    }
  }
  // Through the sweep: three measured candidates with their predictions.
  TuneService roller(compile_.get(), store_.get(), devices_.get(), &jobs_, measure_pool_.get(),
                     cache_.get(), RollerPlanner);
  absl::StatusOr<pb::TuneResult> result = roller.TuneSync(call);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->measurements_size(), 3);
  for (const pb::Measurement& m : result->measurements()) {
    EXPECT_EQ(m.status(), pb::Measurement::STATUS_OK) << m.error();
    EXPECT_GT(m.predicted_us(), 0);
  }
  // A declared value that is not an integer is refused.
  TuneCall bad = call;
  (*bad.request.mutable_space()->mutable_candidates())["block_M"].add_values()->set_string_value(
      "big");
  EXPECT_THAT(RollerPlanner(bad.request, devices_->Devices()[0]).status().message(),
              HasSubstr("non-integer"));
}

TEST_F(TuneServiceTest, RequestsThePlannerCannotServeFailClearly) {
  TuneCall roller = AddGrid();
  roller.request.clear_space();
  roller.request.set_strategy(pb::TUNE_STRATEGY_ROLLER);
  absl::StatusOr<pb::TuneResult> r = service_->TuneSync(roller);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("space: empty"));
  TuneCall none;
  EXPECT_THAT(service_->Start(none).status().message(), HasSubstr("program: no source"));
  TuneCall gpu = AddGrid();
  gpu.request.set_target("cuda:sm_90");
  r = service_->TuneSync(gpu);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("no device here runs target cuda:sm_90"));
}

TEST_F(TuneServiceTest, ASweepLargerThanTheTuningQueueCompilesEveryCandidate) {
  // A tuning queue of one waiting task: the sweep's compiles are turned away
  // and submitted again as slots free, never recorded as a config's failure.
  service_.reset();
  compile_.reset();
  pool_->Shutdown();
  CompilePoolOptions po;
  po.threads = 2;
  po.max_queued[static_cast<int>(Priority::kTuning)] = 1;
  pool_ = std::make_unique<CompilePool>(po);
  compile_ = std::make_unique<CompileService>(store_.get(), &jobs_, pool_.get());
  service_ = std::make_unique<TuneService>(compile_.get(), store_.get(), devices_.get(), &jobs_,
                                           measure_pool_.get(), cache_.get(), DeclaredSpacePlanner);
  TuneCall call = AddGrid();
  call.request.mutable_space()->mutable_candidates()->clear();
  AddAxis(&call.request, "block_M", {4, 8});
  AddAxis(&call.request, "block_N", {16, 32, 64, 128});
  absl::StatusOr<pb::TuneResult> result = service_->TuneSync(call);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->measurements_size(), 8);
  for (const pb::Measurement& m : result->measurements()) {
    EXPECT_EQ(m.status(), pb::Measurement::STATUS_OK) << m.error();
  }
  EXPECT_EQ(compile_->counters().builds.load(), 8);
}

} // namespace
} // namespace kiln::server
