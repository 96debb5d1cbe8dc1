#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/daemon_metrics.h"
#include "server/metrics.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Metrics = DaemonMetrics;

class DaemonMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<DaemonMetrics>> metrics =
        DaemonMetrics::Create(registry_, "1.2.3");
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    metrics_ = *std::move(metrics);
  }
  std::string Text() const { return registry_.Expose(); }

  MetricRegistry registry_;
  std::unique_ptr<DaemonMetrics> metrics_;
};

// Every family docs/metrics.md documents is there, with its type, from the
// first scrape.
TEST_F(DaemonMetricsTest, RegistersTheDocumentedFamilies) {
  const std::string text = Text();
  const std::vector<std::pair<std::string, std::string>> families = {
      {"kiln_build_info", "gauge"},
      {"process_start_time_seconds", "gauge"},
      {"kiln_rpc_requests_total", "counter"},
      {"kiln_rpc_duration_seconds", "histogram"},
      {"kiln_compile_duration_seconds", "histogram"},
      {"kiln_queue_depth", "gauge"},
      {"kiln_queue_rejections_total", "counter"},
      {"kiln_jobs", "gauge"},
      {"kiln_jobs_finished_total", "counter"},
      {"kiln_worker_restarts_total", "counter"},
      {"kiln_worker_up", "gauge"},
      {"kiln_gpu_busy_seconds_total", "counter"},
      {"kiln_cache_hits_total", "counter"},
      {"kiln_cache_misses_total", "counter"},
      {"kiln_cache_evictions_total", "counter"},
      {"kiln_cache_size_bytes", "gauge"},
      {"kiln_cache_entries", "gauge"},
      {"kiln_cache_limit_bytes", "gauge"},
      {"kiln_compile_helpers", "gauge"},
      {"kiln_compile_helper_starts_total", "counter"},
      {"kiln_compile_helper_lost_total", "counter"},
      {"kiln_compile_helper_builds_total", "counter"},
      {"kiln_compile_builds_in_process_total", "counter"},
  };
  for (const auto& [name, type] : families) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("\n# TYPE ", name, " ", type, "\n"))) << name;
  }
  EXPECT_THAT(text, HasSubstr("kiln_build_info{version=\"1.2.3\"} 1\n"));
  // Pre-created series: zero queue depths and job counts are exposed, so
  // dashboards and alerts see 0 rather than nothing.
  EXPECT_THAT(text, HasSubstr("kiln_queue_depth{priority=\"interactive\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("kiln_queue_depth{priority=\"ci\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("kiln_queue_depth{priority=\"tuning\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("kiln_jobs{kind=\"tune\",state=\"running\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("kiln_jobs_finished_total{kind=\"benchmark\",state=\"cancelled\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("kiln_jobs{kind=\"tune\",state=\"failed\"}")));
  // Without a cache source, the cache families have no samples.
  EXPECT_THAT(text, Not(HasSubstr("\nkiln_cache_hits_total ")));
  // The process start time is now-ish.
  const size_t at = text.find("\nprocess_start_time_seconds ");
  ASSERT_NE(at, std::string::npos);
  const double start = std::stod(text.substr(at + 28));
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(start, now, 60);
  // A second set of the same families in one registry is refused.
  EXPECT_EQ(DaemonMetrics::Create(registry_, "x").status().code(),
            absl::StatusCode::kAlreadyExists);
}

TEST_F(DaemonMetricsTest, RpcsByMethodAndCode) {
  DaemonMetrics::RpcMetrics& compile = metrics_->Rpc("Compile");
  EXPECT_EQ(&compile, &metrics_->Rpc("Compile"));
  compile.Record(absl::StatusCode::kOk, 0.0002);
  compile.Record(absl::StatusCode::kOk, 0.0004);
  compile.Record(absl::StatusCode::kResourceExhausted, 0.00001);
  metrics_->RecordRpc("GetJob", absl::StatusCode::kNotFound, 2);
  compile.Record(static_cast<absl::StatusCode>(99), 1); // out of range: UNKNOWN
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("kiln_rpc_requests_total{method=\"Compile\",code=\"OK\"} 2\n"));
  EXPECT_THAT(
      text,
      HasSubstr("kiln_rpc_requests_total{method=\"Compile\",code=\"RESOURCE_EXHAUSTED\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_rpc_requests_total{method=\"Compile\",code=\"UNKNOWN\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_rpc_requests_total{method=\"GetJob\",code=\"NOT_FOUND\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_rpc_duration_seconds_bucket{method=\"Compile\",code=\"OK\","
                              "le=\"0.0001\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("kiln_rpc_duration_seconds_bucket{method=\"Compile\",code=\"OK\","
                              "le=\"0.00025\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_rpc_duration_seconds_bucket{method=\"Compile\",code=\"OK\","
                              "le=\"0.0005\"} 2\n"));
  EXPECT_THAT(
      text, HasSubstr("kiln_rpc_duration_seconds_count{method=\"GetJob\",code=\"NOT_FOUND\"} 1\n"));
}

TEST_F(DaemonMetricsTest, CodeNamesAreGrpcs) {
  const std::vector<std::string> names = {"OK",
                                          "CANCELLED",
                                          "UNKNOWN",
                                          "INVALID_ARGUMENT",
                                          "DEADLINE_EXCEEDED",
                                          "NOT_FOUND",
                                          "ALREADY_EXISTS",
                                          "PERMISSION_DENIED",
                                          "RESOURCE_EXHAUSTED",
                                          "FAILED_PRECONDITION",
                                          "ABORTED",
                                          "OUT_OF_RANGE",
                                          "UNIMPLEMENTED",
                                          "INTERNAL",
                                          "UNAVAILABLE",
                                          "DATA_LOSS",
                                          "UNAUTHENTICATED"};
  DaemonMetrics::RpcMetrics& rpc = metrics_->Rpc("M");
  for (int code = 0; code < 17; ++code) rpc.Record(static_cast<absl::StatusCode>(code), 0);
  const std::string text = Text();
  for (size_t code = 0; code < names.size(); ++code) {
    EXPECT_THAT(text, HasSubstr("{method=\"M\",code=\"" + names[code] + "\"} 1\n")) << code;
    // absl agrees on the numbering.
    EXPECT_EQ(absl::StatusCodeToString(static_cast<absl::StatusCode>(code)), names[code]);
  }
}

// Many threads recording at once, including the first use of each code.
TEST_F(DaemonMetricsTest, ConcurrentRpcRecording) {
  DaemonMetrics::RpcMetrics& rpc = metrics_->Rpc("Compile");
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&rpc] {
      for (int i = 0; i < 10000; ++i) rpc.Record(static_cast<absl::StatusCode>(i % 3), 0.001);
    });
  }
  for (std::thread& t : threads) t.join();
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("{method=\"Compile\",code=\"OK\"} 26672\n"));
  EXPECT_THAT(text, HasSubstr("{method=\"Compile\",code=\"CANCELLED\"} 26664\n"));
  EXPECT_THAT(text, HasSubstr("{method=\"Compile\",code=\"UNKNOWN\"} 26664\n"));
  EXPECT_THAT(text,
              HasSubstr("kiln_rpc_duration_seconds_count{method=\"Compile\",code=\"OK\"} 26672\n"));
}

TEST_F(DaemonMetricsTest, JobStatesStayInStep) {
  using K = Metrics::JobKind;
  using S = Metrics::JobState;
  metrics_->OnJobStateChange(K::kCompile, std::nullopt, S::kQueued);
  metrics_->OnJobStateChange(K::kCompile, std::nullopt, S::kQueued);
  metrics_->OnJobStateChange(K::kCompile, S::kQueued, S::kRunning);
  metrics_->OnJobStateChange(K::kCompile, S::kRunning, S::kSucceeded);
  metrics_->OnJobStateChange(K::kCompile, S::kQueued, S::kCancelled);
  metrics_->OnJobStateChange(K::kTune, std::nullopt, S::kRunning); // reloaded after a restart
  metrics_->OnJobStateChange(K::kTune, S::kRunning, S::kFailed);
  metrics_->OnJobStateChange(K::kBenchmark, std::nullopt, S::kQueued);
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("kiln_jobs{kind=\"compile\",state=\"queued\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("kiln_jobs{kind=\"compile\",state=\"running\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("kiln_jobs_finished_total{kind=\"compile\",state=\"succeeded\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("kiln_jobs_finished_total{kind=\"compile\",state=\"cancelled\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_jobs{kind=\"tune\",state=\"running\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("kiln_jobs_finished_total{kind=\"tune\",state=\"failed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_jobs{kind=\"benchmark\",state=\"queued\"} 1\n"));
}

TEST_F(DaemonMetricsTest, QueuesCompilesWorkersAndGpus) {
  metrics_->QueueDepth(Metrics::Priority::kCi).Set(4);
  metrics_->QueueRejections(Metrics::Priority::kTuning).Increment();
  metrics_->ObserveCompile("cuda:sm_90", true, 0.2);
  metrics_->ObserveCompile("cuda:sm_90", false, 0.02);
  metrics_->ObserveCompile("cpu", true, 700); // past the last bucket
  Counter& restarts = metrics_->WorkerRestarts("cuda:0", "hang");
  restarts.Increment();
  EXPECT_EQ(&restarts, &metrics_->WorkerRestarts("cuda:0", "hang"));
  metrics_->WorkerUp("cuda:0").Set(1);
  metrics_->GpuBusySeconds("cuda:0").Increment(1.25);
  metrics_->GpuBusySeconds("cuda:0").Increment(0.25);
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("kiln_queue_depth{priority=\"ci\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("kiln_queue_rejections_total{priority=\"tuning\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_compile_duration_seconds_bucket{target=\"cuda:sm_90\","
                              "outcome=\"ok\",le=\"0.25\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_compile_duration_seconds_bucket{target=\"cuda:sm_90\","
                              "outcome=\"error\",le=\"0.025\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_compile_duration_seconds_bucket{target=\"cpu\",outcome=\"ok\","
                              "le=\"600\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("kiln_compile_duration_seconds_bucket{target=\"cpu\",outcome=\"ok\","
                              "le=\"+Inf\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_worker_restarts_total{device=\"cuda:0\",reason=\"hang\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_worker_up{device=\"cuda:0\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kiln_gpu_busy_seconds_total{device=\"cuda:0\"} 1.5\n"));
}

TEST_F(DaemonMetricsTest, CacheFamiliesReadTheSourceAtScrapeTime) {
  std::atomic<uint64_t> hits{5};
  metrics_->SetCacheStatsSource([&hits] {
    DaemonMetrics::CacheStats s;
    s.hits = hits.load();
    s.misses = 2;
    s.evictions = 1;
    s.bytes = uint64_t{3} << 30;
    s.entries = 40;
    s.limit_bytes = uint64_t{20} << 30;
    return s;
  });
  EXPECT_THAT(Text(), HasSubstr("\nkiln_cache_hits_total 5\n"));
  hits = 6;
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("\nkiln_cache_hits_total 6\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_cache_misses_total 2\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_cache_evictions_total 1\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_cache_size_bytes 3.221225472e+09\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_cache_entries 40\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_cache_limit_bytes 2.147483648e+10\n"));
  metrics_->SetCacheStatsSource(nullptr);
  EXPECT_THAT(Text(), Not(HasSubstr("\nkiln_cache_hits_total ")));
}

TEST_F(DaemonMetricsTest, CompileHelperFamiliesReadTheSourceAtScrapeTime) {
  EXPECT_THAT(Text(), Not(HasSubstr("\nkiln_compile_helpers{")));
  std::atomic<uint64_t> builds{7};
  metrics_->SetCompileHelperStatsSource([&builds] {
    DaemonMetrics::CompileHelperStats s;
    s.started = 4;
    s.lost = 1;
    s.builds = builds.load();
    s.in_process = 2;
    s.idle = 2;
    s.busy = 1;
    return s;
  });
  EXPECT_THAT(Text(), HasSubstr("\nkiln_compile_helper_builds_total 7\n"));
  builds = 8;
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("\nkiln_compile_helper_builds_total 8\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_compile_helpers{state=\"idle\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_compile_helpers{state=\"busy\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_compile_helper_starts_total 4\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_compile_helper_lost_total 1\n"));
  EXPECT_THAT(text, HasSubstr("\nkiln_compile_builds_in_process_total 2\n"));
  metrics_->SetCompileHelperStatsSource(nullptr);
  EXPECT_THAT(Text(), Not(HasSubstr("\nkiln_compile_helper_builds_total ")));
}

// The registry may outlive the DaemonMetrics: its callbacks are detached.
TEST(DaemonMetricsLifetimeTest, RegistryOutlivesMetrics) {
  MetricRegistry registry;
  {
    std::unique_ptr<DaemonMetrics> metrics = *DaemonMetrics::Create(registry, "v");
    metrics->SetCacheStatsSource([] { return DaemonMetrics::CacheStats{1, 2, 3, 4, 5, 6}; });
    EXPECT_THAT(registry.Expose(), HasSubstr("\nkiln_cache_entries 5\n"));
  }
  EXPECT_THAT(registry.Expose(), Not(HasSubstr("\nkiln_cache_entries 5\n")));
}

} // namespace
} // namespace kiln::server
