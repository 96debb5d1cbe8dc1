// Benchmark (server/benchmark_service.h) in process, with the real pieces:
// a cache directory, the compile service, and a device pool running the
// real kiln-worker on the CPU device. A program is compiled and measured
// (trials as asked, samples positive, recorded in the history); a second
// run by artifact key has a baseline and a verdict; a crashing kernel fails
// its job with the crash kind, is recorded as a failure, and the next
// benchmark succeeds on the restarted worker; bad requests are refused at
// once; a cancelled benchmark cancels its job.
#include <memory>
#include <string>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/benchmark_service.h"
#include "server/cache_artifact_store.h"
#include "server/worker_error.h"
#include "tests/support/example_loader.h"
#include "tests/support/worker_test_kernels.h"
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

class BenchmarkServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-bench-test");
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
    dp.restart_backoff = absl::Milliseconds(20);
    dp.default_timeout = absl::Seconds(20);
    absl::StatusOr<std::unique_ptr<DevicePool>> devices = DevicePool::Start(std::move(dp));
    ASSERT_TRUE(devices.ok()) << devices.status();
    devices_ = *std::move(devices);
    service_ = std::make_unique<BenchmarkService>(compile_.get(), store_.get(), devices_.get(),
                                                  &jobs_, measure_pool_.get(), cache_.get());
  }
  void TearDown() override {
    jobs_.CancelAll();
    if (measure_pool_) measure_pool_->Shutdown();
    if (pool_) pool_->Shutdown();
    service_.reset();
    if (devices_) devices_->Shutdown();
  }

  BenchmarkCall AddCall(int trials) {
    testing::ExampleFile ex =
        testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/elementwise/add.py");
    BenchmarkCall call;
    pb::BenchmarkRequest& r = call.request;
    r.mutable_program()->set_tilelang_source(ex.source);
    r.mutable_program()->set_file_name(ex.rel_path);
    (*r.mutable_program()->mutable_bindings())["M"] = Int(77);
    (*r.mutable_program()->mutable_bindings())["N"] = Int(130);
    (*r.mutable_program()->mutable_bindings())["block_M"] = Int(16);
    (*r.mutable_program()->mutable_bindings())["block_N"] = Int(64);
    r.set_target("cpu");
    r.set_trials(trials);
    r.set_warmup(1);
    return call;
  }

  // Puts a hand-made CPU artifact running `symbol` of the worker test
  // kernels (one float32[4] output) into the cache; returns its key.
  std::string PutTestKernel(const std::string& symbol) {
    std::string error;
    const std::string so = testing::CompileWorkerTestKernels(&error);
    EXPECT_FALSE(so.empty()) << error;
    const std::string key = std::string(64, symbol == "kiln_segv" ? 'a' : 'b');
    pb::ArtifactMetadata m;
    m.set_key(key);
    m.set_target("cpu");
    m.mutable_launch()->set_kernel_symbol(symbol);
    m.mutable_launch()->add_grid("1");
    pb::ParamInfo* y = m.mutable_launch()->add_params();
    y->set_name("y");
    y->set_dtype(pb::DTYPE_FLOAT32);
    y->set_is_output(true);
    y->add_shape("4");
    cache::Artifact a;
    a.target = "cpu";
    a.files.push_back({"so", so, "", 0});
    a.files.push_back({kMetadataKind, m.SerializeAsString(), "", 0});
    EXPECT_TRUE(store_->Put(key, a).ok());
    return key;
  }

  std::unique_ptr<util::TempDir> dir_;
  std::unique_ptr<cache::Cache> cache_;
  std::unique_ptr<CacheArtifactStore> store_;
  MemoryJobStore job_store_;
  JobManager jobs_{&job_store_};
  std::unique_ptr<CompilePool> pool_, measure_pool_;
  std::unique_ptr<CompileService> compile_;
  std::unique_ptr<DevicePool> devices_;
  std::unique_ptr<BenchmarkService> service_;
};

TEST_F(BenchmarkServiceTest, CompilesMeasuresAndRecordsTheHistory) {
  BenchmarkCall call = AddCall(7);
  call.request.set_history_name("add-77x130");
  absl::StatusOr<pb::BenchmarkResponse> r = service_->BenchmarkSync(call);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->device_id(), "cpu");
  EXPECT_EQ(r->artifact_key().size(), 64u);
  EXPECT_EQ(r->latency().samples_us_size(), 7);
  EXPECT_GT(r->latency().min_us(), 0);
  EXPECT_LE(r->latency().min_us(), r->latency().median_us());
  EXPECT_LE(r->latency().median_us(), r->latency().max_us());
  EXPECT_EQ(r->verdict(), pb::BenchmarkResponse::VERDICT_UNSPECIFIED); // no policy asked

  cache::MeasurementQuery q;
  q.key = "add-77x130";
  absl::StatusOr<std::vector<cache::Measurement>> h = cache_->QueryMeasurements(q);
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->size(), 1u);
  EXPECT_EQ((*h)[0].device_id, "cpu");
  EXPECT_EQ((*h)[0].latency.samples, 7);
  EXPECT_TRUE((*h)[0].failure.empty());
  EXPECT_THAT((*h)[0].config_json, HasSubstr(r->artifact_key()));
  // The program's bindings too: kiln regress checks a baseline's shape.
  EXPECT_THAT((*h)[0].config_json,
              HasSubstr(R"("bindings": {"M": 77, "N": 130, "block_M": 16, "block_N": 64})"));
  EXPECT_EQ(service_->counters().succeeded.load(), 1);

  // By key, against that history: a baseline exists now.
  BenchmarkCall by_key;
  by_key.request.set_artifact_key(r->artifact_key());
  by_key.request.set_history_name("add-77x130");
  by_key.request.set_trials(7);
  by_key.request.mutable_regression()->set_max_slowdown(10.0); // noise on a shared VM
  absl::StatusOr<pb::BenchmarkResponse> again = service_->BenchmarkSync(by_key);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->artifact_key(), r->artifact_key());
  EXPECT_EQ(again->verdict(), pb::BenchmarkResponse::VERDICT_PASS);
  EXPECT_NEAR(again->baseline_median_us(), r->latency().median_us(),
              1e-9 * r->latency().median_us());
}

TEST_F(BenchmarkServiceTest, FirstRunWithAPolicyHasNoBaseline) {
  BenchmarkCall call = AddCall(3);
  call.request.set_history_name("fresh-series");
  call.request.mutable_regression();
  absl::StatusOr<pb::BenchmarkResponse> r = service_->BenchmarkSync(call);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), pb::BenchmarkResponse::VERDICT_NO_BASELINE);
}

TEST_F(BenchmarkServiceTest, ACrashingKernelFailsItsJobAndTheNextBenchmarkRuns) {
  BenchmarkCall crash;
  crash.request.set_artifact_key(PutTestKernel("kiln_segv"));
  crash.request.set_trials(3);
  absl::StatusOr<pb::BenchmarkResponse> r = service_->BenchmarkSync(crash);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(WorkerErrorKindOf(r.status()), WorkerErrorKind::kCrash) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("running the kernel on cpu"));
  EXPECT_THAT(r.status().message(), HasSubstr("SIGSEGV"));
  EXPECT_EQ(service_->counters().failed.load(), 1);

  cache::MeasurementQuery q;
  q.key = crash.request.artifact_key();
  absl::StatusOr<std::vector<cache::Measurement>> h = cache_->QueryMeasurements(q);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->size(), 1u);
  EXPECT_EQ((*h)[0].failure, "crash");

  BenchmarkCall ok;
  ok.request.set_artifact_key(PutTestKernel("kiln_stamp_free"));
  // A kernel symbol the .so lacks: the worker answers, and lives on.
  absl::StatusOr<pb::BenchmarkResponse> missing = service_->BenchmarkSync(ok);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument) << missing.status();

  absl::StatusOr<pb::BenchmarkResponse> fine = service_->BenchmarkSync(AddCall(2));
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_EQ(fine->latency().samples_us_size(), 2);
  absl::StatusOr<DeviceStats> stats = devices_->Stats("cpu");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->crashes, 1);
  EXPECT_GE(stats->restarts, 1);
}

TEST_F(BenchmarkServiceTest, BadRequestsAreRefusedAtOnce) {
  BenchmarkCall none;
  EXPECT_THAT(service_->BenchmarkSync(none).status().message(), HasSubstr("give either program"));
  BenchmarkCall trials = AddCall(-1);
  EXPECT_THAT(service_->BenchmarkSync(trials).status().message(), HasSubstr("trials: -1"));
  BenchmarkCall missing;
  missing.request.set_artifact_key(std::string(64, 'c'));
  absl::StatusOr<pb::BenchmarkResponse> r = service_->BenchmarkSync(missing);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("compile it first"));
  BenchmarkCall gpu = AddCall(1);
  gpu.request.set_target("cuda:sm_90");
  gpu.request.mutable_options()->set_toolchain("nvrtc");
  gpu.request.clear_program();
  gpu.request.set_artifact_key(PutTestKernel("kiln_segv"));
  gpu.request.mutable_devices()->add_device_ids("cuda:7");
  r = service_->BenchmarkSync(gpu);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("no device 'cuda:7'"));
}

TEST_F(BenchmarkServiceTest, CancellingTheCallCancelsItsJob) {
  BenchmarkCall spin;
  spin.request.set_artifact_key(PutTestKernel("kiln_spin"));
  spin.request.set_trials(1);
  absl::Notification done;
  absl::Status status;
  std::shared_ptr<BenchmarkService::Pending> pending =
      service_->Start(spin, [&](absl::StatusOr<pb::BenchmarkResponse> r) {
        status = r.status();
        done.Notify();
      });
  std::shared_ptr<Job> job = jobs_.Find(pending->job_id());
  ASSERT_NE(job, nullptr);
  // Wait until the spinning kernel runs, then go away.
  for (int i = 0; i < 500 && job->Snapshot().message().find("measuring") == std::string::npos;
       ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  pending->Cancel();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(job->WaitDone(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(job->Snapshot().state(), pb::JOB_STATE_CANCELLED);
  absl::StatusOr<DeviceStats> stats = devices_->Stats("cpu");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->cancellations, 1);
}

TEST(ChooseDevice, MatchesTargetsToDevices) {
  std::vector<pb::Device> devices(3);
  devices[0].set_id("cpu");
  devices[0].set_worker_state("running");
  devices[1].set_id("cuda:0");
  devices[1].set_arch("sm_90");
  devices[1].set_model("NVIDIA H200");
  devices[1].set_busy(true);
  devices[1].set_worker_state("running");
  devices[2].set_id("cuda:1");
  devices[2].set_arch("sm_90");
  devices[2].set_model("NVIDIA H200");
  devices[2].set_worker_state("running");
  pb::DeviceSelector any;
  EXPECT_EQ(*ChooseDevice(devices, "cpu", any), "cpu");
  EXPECT_EQ(*ChooseDevice(devices, "cuda:sm_90", any), "cuda:1"); // idle first
  // A cubin runs only on its own major version.
  EXPECT_EQ(ChooseDevice(devices, "cuda:sm_80", any).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(ChooseDevice(devices, "cuda:sm_90a", any).ok(), true);
  absl::StatusOr<std::string> newer = ChooseDevice(devices, "cuda:sm_100", any);
  ASSERT_FALSE(newer.ok());
  EXPECT_THAT(newer.status().message(), HasSubstr("no device here runs target cuda:sm_100"));
  pb::DeviceSelector pinned;
  pinned.add_device_ids("cuda:0");
  EXPECT_EQ(*ChooseDevice(devices, "cuda:sm_90", pinned), "cuda:0");
  EXPECT_EQ(ChooseDevice(devices, "cpu", pinned).status().code(),
            absl::StatusCode::kFailedPrecondition);
  pb::DeviceSelector model;
  model.set_model("NVIDIA A100");
  EXPECT_FALSE(ChooseDevice(devices, "cuda:sm_80", model).ok());
}

TEST(SweepDevices, OneModelThatRunsTheTarget) {
  auto device = [](const std::string& id, const std::string& model) {
    pb::Device d;
    d.set_id(id);
    d.set_arch(id.rfind("cuda:", 0) == 0 ? "sm_90" : "x86_64");
    d.set_model(model);
    d.set_worker_state("running");
    return d;
  };
  const std::vector<pb::Device> devices = {
      device("cpu", "Xeon"), device("cpu:1", "Xeon"), device("cuda:0", "NVIDIA H100"),
      device("cuda:1", "NVIDIA H200"), device("cuda:2", "NVIDIA H100")};
  auto ids = [](const absl::StatusOr<std::vector<pb::Device>>& got) {
    std::vector<std::string> out;
    if (got.ok()) {
      for (const pb::Device& d : *got) out.push_back(d.id());
    }
    return out;
  };
  pb::DeviceSelector any;
  // Every CPU worker runs the CPU target.
  EXPECT_EQ(ids(SweepDevices(devices, "cpu", any)), (std::vector<std::string>{"cpu", "cpu:1"}));
  // Found GPUs keep the first one's model: no H100 time beside an H200's.
  EXPECT_EQ(ids(SweepDevices(devices, "cuda:sm_90", any)),
            (std::vector<std::string>{"cuda:0", "cuda:2"}));
  pb::DeviceSelector h200;
  h200.set_model("NVIDIA H200");
  EXPECT_EQ(ids(SweepDevices(devices, "cuda:sm_90", h200)), (std::vector<std::string>{"cuda:1"}));
  pb::DeviceSelector one;
  one.set_max_devices(1);
  EXPECT_EQ(ids(SweepDevices(devices, "cuda:sm_90", one)), (std::vector<std::string>{"cuda:0"}));
  // Named devices of two models are refused, naming both.
  pb::DeviceSelector mixed;
  mixed.add_device_ids("cuda:1");
  mixed.add_device_ids("cuda:2");
  absl::StatusOr<std::vector<pb::Device>> refused = SweepDevices(devices, "cuda:sm_90", mixed);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("cuda:1 (NVIDIA H200) and cuda:2 (NVIDIA H100) are different models"));
  // Nothing runs the target: ChooseDevice's reason.
  absl::StatusOr<std::vector<pb::Device>> none = SweepDevices(devices, "cuda:sm_80", any);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(none.status().message(), HasSubstr("no device here runs target cuda:sm_80"));
}

} // namespace
} // namespace kiln::server
