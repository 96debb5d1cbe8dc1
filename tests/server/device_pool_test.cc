// The device pool (server/device_pool.h) with real kiln-worker processes on
// the CPU device and hand-written CPU kernels: requests run and are counted;
// a segfaulting kernel, a kernel that never returns (killed at the timeout),
// a kernel that reports an error, a worker killed while idle and a
// cancellation in flight each come back as their error kind, the worker is
// restarted and the next request succeeds; a device serves one request at a
// time (timestamps taken inside the worker never overlap); waiting callers
// time out or are cancelled; a device whose worker cannot start is "failed"
// while the CPU goes on working; several CPU workers are numbered cpu, cpu:1,
// ... and each is pinned to its own core.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/device_pool.h"
#include "tests/support/worker_test_kernels.h"
#include "tuner/measure/tensor_data.h"

namespace kiln::server {
namespace {

namespace pb = kiln::v1;
using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr char kWorker[] = KILN_BINARY_DIR "/kiln-worker";

// Polls `done` for up to 10 s.
template <typename Pred>
bool WaitFor(Pred done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

DevicePoolOptions TestOptions() {
  DevicePoolOptions o;
  o.worker_path = kWorker;
  o.discover_gpus = false;
  o.restart_backoff = absl::Milliseconds(20);
  o.max_restart_backoff = absl::Milliseconds(200);
  o.health_interval = absl::Milliseconds(50);
  o.start_timeout = absl::Seconds(30);
  return o;
}

class DevicePoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    kernels_ = testing::CompileWorkerTestKernels(&error);
    ASSERT_FALSE(kernels_.empty()) << error;
  }

  std::unique_ptr<DevicePool> StartPool(DevicePoolOptions options = TestOptions()) {
    absl::StatusOr<std::unique_ptr<DevicePool>> pool = DevicePool::Start(std::move(options));
    EXPECT_TRUE(pool.ok()) << pool.status();
    return pool.ok() ? *std::move(pool) : nullptr;
  }

  // Loads kernel `symbol` as module `symbol` on the CPU worker.
  void Load(DevicePool& pool, const std::string& symbol) {
    absl::StatusOr<pb::WorkerResponse> r =
        pool.Call("cpu", testing::LoadRequest(symbol, kernels_, symbol));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(r->has_load()) << r->DebugString();
  }

  // The pool answers again, and kiln_add_one gives the right result.
  void ExpectWorking(DevicePool& pool) {
    Load(pool, "kiln_add_one");
    absl::StatusOr<pb::WorkerResponse> r = pool.Call("cpu", testing::RunAddOne("kiln_add_one", 4));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->run().outputs_size(), 1) << r->DebugString();
    tools::NpyArray y{ir::DType::kFloat32, {4}, r->run().outputs(0)};
    EXPECT_EQ(measure::GetElement(y, 3), 4.0);
  }

  std::string kernels_;
};

TEST_F(DevicePoolTest, OffersTheCpuWithoutGpus) {
  DevicePoolOptions options = TestOptions();
  options.discover_gpus = access("/dev/nvidiactl", F_OK) != 0; // the probe finds none here
  std::unique_ptr<DevicePool> pool = StartPool(options);
  ASSERT_NE(pool, nullptr);
  std::vector<pb::Device> devices = pool->Devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].id(), "cpu");
  EXPECT_EQ(devices[0].worker_state(), "running");
  EXPECT_FALSE(devices[0].model().empty());
  EXPECT_GE(devices[0].sm_count(), 1);
  EXPECT_FALSE(devices[0].busy());
  if (options.discover_gpus) {
    EXPECT_THAT(pool->discovery_note(), HasSubstr("cuda 0"));
  }
}

// The logical CPUs a process may run on, as /proc/PID/status lists them
// ("0-3,6"), expanded; empty when it cannot be read.
std::vector<int> AllowedCpus(int64_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::vector<int> cpus;
  for (std::string line; std::getline(in, line);) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "Cpus_allowed_list:")) continue;
    for (absl::string_view range : absl::StrSplit(absl::StripAsciiWhitespace(rest), ',')) {
      std::pair<std::string, std::string> ends = absl::StrSplit(range, '-');
      int lo = 0;
      int hi = 0;
      if (!absl::SimpleAtoi(ends.first, &lo)) return {};
      if (ends.second.empty()) {
        hi = lo;
      } else if (!absl::SimpleAtoi(ends.second, &hi)) {
        return {};
      }
      for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    }
  }
  return cpus;
}

TEST_F(DevicePoolTest, CpuWorkersAreNumberedAndEachPinnedToItsOwnCore) {
  std::vector<int> mine = AllowedCpus(getpid());
  ASSERT_FALSE(mine.empty());
  DevicePoolOptions options = TestOptions();
  options.cpu_workers = 3;
  std::unique_ptr<DevicePool> pool = StartPool(options);
  ASSERT_NE(pool, nullptr);
  std::vector<pb::Device> devices = pool->Devices();
  ASSERT_EQ(devices.size(), 3u);
  for (size_t k = 0; k < devices.size(); ++k) {
    const std::string id = k == 0 ? "cpu" : absl::StrCat("cpu:", k);
    SCOPED_TRACE(id);
    // The id the worker described itself with, and the same host model.
    EXPECT_EQ(devices[k].id(), id);
    EXPECT_EQ(devices[k].worker_state(), "running");
    EXPECT_EQ(devices[k].model(), devices[0].model());
    absl::StatusOr<DeviceStats> stats = pool->Stats(id);
    ASSERT_TRUE(stats.ok()) << stats.status();
    // Round robin over this process's cores: with 2 cores, cpu:2 shares
    // the first one.
    const int core = mine[k % mine.size()];
    EXPECT_EQ(stats->cpu_core, core);
    EXPECT_EQ(AllowedCpus(stats->worker_pid), std::vector<int>{core});
    // Each one runs kernels.
    ASSERT_TRUE(
        pool->Call(id, testing::LoadRequest("kiln_add_one", kernels_, "kiln_add_one")).ok());
    absl::StatusOr<pb::WorkerResponse> r = pool->Call(id, testing::RunAddOne("kiln_add_one", 4));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->run().outputs_size(), 1);
    tools::NpyArray y{ir::DType::kFloat32, {4}, r->run().outputs(0)};
    EXPECT_EQ(measure::GetElement(y, 2), 3.0);
  }
  // A restarted worker is pinned again.
  const int64_t pid = pool->Stats("cpu:1")->worker_pid;
  ASSERT_EQ(kill(static_cast<pid_t>(pid), SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<DeviceStats> s = pool->Stats("cpu:1");
    return s.ok() && s->worker_pid != 0 && s->worker_pid != pid && s->state == "running";
  }));
  EXPECT_EQ(AllowedCpus(pool->Stats("cpu:1")->worker_pid), std::vector<int>{mine[1 % mine.size()]});
}

TEST_F(DevicePoolTest, DiscoveredGpusAreNeverPinned) {
  // A kiln-worker stand-in that reports two GPUs and logs each start's
  // arguments before running the real worker (whose CUDA devices fail to
  // open here, and may open on a GPU machine: either way, never pinned).
  const std::string dir = ::testing::TempDir() + "kiln_pool_fake_gpus";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string log = dir + "/starts";
  const std::string fake = dir + "/kiln-worker";
  {
    std::ofstream out(fake);
    out << "#!/bin/sh\n"
        << "if [ \"$1\" = --list ]; then echo 'cuda 2'; exit 0; fi\n"
        << "echo \"$*\" >> '" << log << "'\n"
        << "exec '" << kWorker << "' \"$@\"\n";
  }
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  DevicePoolOptions options = TestOptions();
  options.worker_path = fake;
  options.discover_gpus = true;
  options.cpu_workers = 2;
  options.max_restart_backoff = absl::Seconds(60); // one start each here
  options.restart_backoff = absl::Seconds(60);
  std::unique_ptr<DevicePool> pool = StartPool(options);
  ASSERT_NE(pool, nullptr);
  std::vector<std::string> ids;
  for (const pb::Device& d : pool->Devices()) ids.push_back(d.id());
  EXPECT_EQ(ids, (std::vector<std::string>{"cpu", "cpu:1", "cuda:0", "cuda:1"}));
  EXPECT_EQ(pool->Stats("cuda:0")->cpu_core, -1);
  EXPECT_EQ(pool->Stats("cuda:1")->cpu_core, -1);
  EXPECT_GE(pool->Stats("cpu:1")->cpu_core, 0);
  std::ifstream in(log);
  int starts = 0;
  for (std::string line; std::getline(in, line);) {
    ++starts;
    SCOPED_TRACE(line);
    const bool cuda = line.find("--device cuda:") != std::string::npos;
    const bool pinned = line.find("--cpu-core") != std::string::npos;
    EXPECT_EQ(pinned, !cuda); // with two CPU workers both are pinned
  }
  EXPECT_GE(starts, 4);
  pool->Shutdown();
}

TEST_F(DevicePoolTest, OneCpuWorkerIsNotPinned) {
  std::unique_ptr<DevicePool> pool = StartPool();
  ASSERT_NE(pool, nullptr);
  absl::StatusOr<DeviceStats> stats = pool->Stats("cpu");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->cpu_core, -1);
  EXPECT_EQ(AllowedCpus(stats->worker_pid), AllowedCpus(getpid()));
}

TEST_F(DevicePoolTest, RunsRequestsAndCountsThem) {
  std::unique_ptr<DevicePool> pool = StartPool();
  ASSERT_NE(pool, nullptr);
  ExpectWorking(*pool);
  absl::StatusOr<DeviceStats> stats = pool->Stats("cpu");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->requests, 2);
  EXPECT_EQ(stats->failed_requests, 0);
  EXPECT_EQ(stats->restarts, 0);
  EXPECT_EQ(stats->generation, 1u);
  EXPECT_GT(stats->busy_seconds, 0);
  EXPECT_GT(stats->worker_pid, 0);
  EXPECT_EQ(stats->state, "running");
}

TEST_F(DevicePoolTest, SegfaultIsACrashAndTheWorkerRestarts) {
  std::unique_ptr<DevicePool> pool = StartPool();
  ASSERT_NE(pool, nullptr);
  Load(*pool, "kiln_segv");
  absl::StatusOr<pb::WorkerResponse> r = pool->Call("cpu", testing::RunOneOutput("kiln_segv"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(WorkerErrorKindOf(r.status()), WorkerErrorKind::kCrash) << r.status();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(r.status().message(), HasSubstr("killed by signal 11"));
  EXPECT_THAT(StderrTailOf(r.status()), HasSubstr("fatal signal SIGSEGV"));
  EXPECT_THAT(StderrTailOf(r.status()), HasSubstr("kiln_segv"));
  EXPECT_EQ(MeasurementStatusFor(r.status()), pb::Measurement::STATUS_LAUNCH_ERROR);

  // The next request waits for the replacement, which has lost the module.
  absl::StatusOr<pb::WorkerResponse> again = pool->Call("cpu", testing::RunOneOutput("kiln_segv"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(WorkerErrorKindOf(again.status()), WorkerErrorKind::kWorkerError);
  EXPECT_THAT(again.status().message(), HasSubstr("no module 'kiln_segv'"));
  ExpectWorking(*pool);
  absl::StatusOr<DeviceStats> stats = pool->Stats("cpu");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->crashes, 1);
  EXPECT_EQ(stats->restarts, 1);
  EXPECT_EQ(stats->generation, 2u);
  EXPECT_THAT(stats->last_error, HasSubstr("killed by signal 11"));
}

TEST_F(DevicePoolTest, HangIsKilledAtTheTimeoutAndTheWorkerRestarts) {
  std::unique_ptr<DevicePool> pool = StartPool();
  ASSERT_NE(pool, nullptr);
  Load(*pool, "kiln_spin");
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<pb::WorkerResponse> r =
      pool->Call("cpu", testing::RunOneOutput("kiln_spin"), absl::Milliseconds(300));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(WorkerErrorKindOf(r.status()), WorkerErrorKind::kTimeout) << r.status();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("timed out after 0.300 s"));
  EXPECT_EQ(MeasurementStatusFor(r.status()), pb::Measurement::STATUS_TIMEOUT);
  EXPECT_GE(elapsed, std::chrono::milliseconds(300));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
  ExpectWorking(*pool);
  absl::StatusOr<DeviceStats> stats = pool->Stats("cpu");
  EXPECT_EQ(stats->timeouts, 1);
  EXPECT_EQ(stats->restarts, 1);
}

TEST_F(DevicePoolTest, RequestTimeoutSecondsIsTheDefaultLimit) {
  std::unique_ptr<DevicePool> pool = StartPool();
  ASSERT_NE(pool, nullptr);
  Load(*pool, "kiln_spin");
  pb::WorkerRequest run = testing::RunOneOutput("kiln_spin");
  run.mutable_run()->set_timeout_seconds(0.2);
  absl::StatusOr<pb::WorkerResponse> r = pool->Call("cpu", run);
  EXPECT_EQ(WorkerErrorKindOf(r.status()), WorkerErrorKind::kTimeout) << r.status();
}

TEST_F(DevicePoolTest, KernelErrorIsALaunchFailureAndTheWorkerRestarts) {
  std::unique_ptr<DevicePool> pool = StartPool();
  ASSERT_NE(pool, nullptr);
  Load(*pool, "kiln_fail");
  absl::StatusOr<pb::WorkerResponse> r = pool->Call("cpu", testing::RunOneOutput("kiln_fail"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(WorkerErrorKindOf(r.status()), WorkerErrorKind::kLaunchFailed) << r.status();
  EXPECT_EQ(WorkerCodeOf(r.status()), pb::WorkerError::CODE_LAUNCH_FAILED);
  EXPECT_THAT(r.status().message(), HasSubstr("barrier reached by 3 of 4 threads"));
  EXPECT_THAT(r.status().message(), HasSubstr("exit code 3"));
  ExpectWorking(*pool);
  EXPECT_EQ(pool->Stats("cpu")->launch_failures, 1);
  EXPECT_EQ(pool->Stats("cpu")->restarts, 1);
}

TEST_F(DevicePoolTest, WorkerKilledWhileIdleIsReplaced) {
  std::unique_ptr<DevicePool> pool = StartPool();
  ASSERT_NE(pool, nullptr);
  const int64_t pid = pool->Stats("cpu")->worker_pid;
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(static_cast<pid_t>(pid), SIGKILL), 0);
  // The supervisor's health check notices (a request sent in the moment
  // before it does would see the crash itself).
  ASSERT_TRUE(WaitFor([&] { return pool->Stats("cpu")->restarts == 1; }));
  ExpectWorking(*pool);
  absl::StatusOr<DeviceStats> stats = pool->Stats("cpu");
  EXPECT_EQ(stats->crashes, 1);
  EXPECT_EQ(stats->restarts, 1);
  EXPECT_NE(stats->worker_pid, pid);
  EXPECT_THAT(stats->last_error, HasSubstr("died while idle"));
}

TEST_F(DevicePoolTest, OneRequestAtATimePerDevice) {
  std::unique_ptr<DevicePool> pool = StartPool();
  ASSERT_NE(pool, nullptr);
  Load(*pool, "kiln_stamp");
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> intervals; // inside the worker
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        pb::WorkerRequest run = testing::RunOneOutput("kiln_stamp", pb::DTYPE_INT64);
        absl::StatusOr<pb::WorkerResponse> r = pool->Call("cpu", run);
        if (!r.ok() || r->run().outputs_size() != 1 || r->run().outputs(0).size() < 16) {
          ++failures;
          continue;
        }
        int64_t stamp[2];
        std::memcpy(stamp, r->run().outputs(0).data(), sizeof(stamp));
        std::lock_guard<std::mutex> lock(mu);
        intervals.emplace_back(stamp[0], stamp[1]);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_EQ(intervals.size(), 20u);
  std::sort(intervals.begin(), intervals.end());
  for (size_t i = 1; i < intervals.size(); ++i) {
    EXPECT_GE(intervals[i].first, intervals[i - 1].second)
        << "kernel runs " << i - 1 << " and " << i << " overlap";
  }
  EXPECT_EQ(pool->Stats("cpu")->requests, 21);
}

TEST_F(DevicePoolTest, WaitingCallersTimeOutOrAreCancelled) {
  std::unique_ptr<DevicePool> pool = StartPool();
  ASSERT_NE(pool, nullptr);
  absl::StatusOr<DeviceLease> held = pool->Acquire("cpu");
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_TRUE(pool->Devices()[0].busy());

  absl::StatusOr<DeviceLease> late = pool->Acquire("cpu", absl::Milliseconds(100));
  EXPECT_EQ(WorkerErrorKindOf(late.status()), WorkerErrorKind::kQueueTimeout) << late.status();
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);

  std::stop_source stop;
  absl::Status waited;
  const auto start = std::chrono::steady_clock::now();
  std::thread waiter([&] {
    waited = pool->Call("cpu", testing::DescribeRequest(), absl::ZeroDuration(), stop.get_token())
                 .status();
  });
  const bool queued = WaitFor([&] { return pool->Stats("cpu")->queue_depth == 1; });
  stop.request_stop();
  waiter.join();
  EXPECT_TRUE(queued);
  EXPECT_EQ(WorkerErrorKindOf(waited), WorkerErrorKind::kCancelled) << waited;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(pool->Stats("cpu")->queue_depth, 0);

  held->Release();
  ExpectWorking(*pool);
}

TEST_F(DevicePoolTest, QueueDepthIsBounded) {
  DevicePoolOptions options = TestOptions();
  options.max_queue_depth = 1;
  std::unique_ptr<DevicePool> pool = StartPool(options);
  ASSERT_NE(pool, nullptr);
  absl::StatusOr<DeviceLease> held = pool->Acquire("cpu");
  ASSERT_TRUE(held.ok());
  std::thread waiter([&] { (void)pool->Acquire("cpu", absl::Milliseconds(500)); });
  EXPECT_TRUE(WaitFor([&] { return pool->Stats("cpu")->queue_depth == 1; }));
  absl::StatusOr<DeviceLease> full = pool->Acquire("cpu", absl::Milliseconds(500));
  EXPECT_EQ(WorkerErrorKindOf(full.status()), WorkerErrorKind::kQueueFull) << full.status();
  waiter.join();
}

TEST_F(DevicePoolTest, CancellingAnInFlightRequestKillsAndRestartsTheWorker) {
  std::unique_ptr<DevicePool> pool = StartPool();
  ASSERT_NE(pool, nullptr);
  Load(*pool, "kiln_spin");
  std::stop_source stop;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.request_stop();
  });
  absl::StatusOr<pb::WorkerResponse> r =
      pool->Call("cpu", testing::RunOneOutput("kiln_spin"), absl::Seconds(30), stop.get_token());
  canceller.join();
  EXPECT_EQ(WorkerErrorKindOf(r.status()), WorkerErrorKind::kCancelled) << r.status();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  ExpectWorking(*pool);
  EXPECT_EQ(pool->Stats("cpu")->cancellations, 1);
  EXPECT_EQ(pool->Stats("cpu")->restarts, 1);
}

TEST_F(DevicePoolTest, LeaseSpansRequestsAndSeesTheWorkerGo) {
  std::unique_ptr<DevicePool> pool = StartPool();
  ASSERT_NE(pool, nullptr);
  uint64_t generation = 0;
  {
    absl::StatusOr<DeviceLease> lease = pool->Acquire("cpu");
    ASSERT_TRUE(lease.ok()) << lease.status();
    generation = lease->worker_generation();
    ASSERT_TRUE(lease->Call(testing::LoadRequest("segv", kernels_, "kiln_segv")).ok());
    absl::StatusOr<pb::WorkerResponse> crashed = lease->Call(testing::RunOneOutput("segv"));
    EXPECT_EQ(WorkerErrorKindOf(crashed.status()), WorkerErrorKind::kCrash) << crashed.status();
    absl::StatusOr<pb::WorkerResponse> after = lease->Call(testing::DescribeRequest());
    EXPECT_EQ(WorkerErrorKindOf(after.status()), WorkerErrorKind::kUnavailable);
    EXPECT_THAT(after.status().message(), HasSubstr("lost earlier in this lease"));
  }
  absl::StatusOr<DeviceLease> next = pool->Acquire("cpu");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->worker_generation(), generation + 1);
  EXPECT_TRUE(next->Call(testing::DescribeRequest()).ok());
}

TEST_F(DevicePoolTest, DeviceWhoseWorkerCannotStartIsFailed) {
  DevicePoolOptions options = TestOptions();
  options.extra_devices = {"cuda:97"};
  std::unique_ptr<DevicePool> pool = StartPool(options);
  ASSERT_NE(pool, nullptr);
  std::vector<pb::Device> devices = pool->Devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].worker_state(), "running");
  EXPECT_EQ(devices[1].id(), "cuda:97");
  EXPECT_THAT(devices[1].worker_state(), AnyOf("failed", "restarting"));
  absl::StatusOr<pb::WorkerResponse> r =
      pool->Call("cuda:97", testing::DescribeRequest(), absl::Seconds(5));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(WorkerErrorKindOf(r.status()), WorkerErrorKind::kUnavailable) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("cannot open cuda:97"));
  EXPECT_GE(pool->Stats("cuda:97")->start_failures, 1);
  ExpectWorking(*pool);
}

class CountingObserver : public DevicePoolObserver {
 public:
  void OnWorkerStarted(const std::string& device_id, bool restart) override {
    (restart ? restarts : starts)++;
  }
  void OnWorkerFailed(const std::string& device_id, WorkerErrorKind kind,
                      const absl::Status& status) override {
    if (kind == WorkerErrorKind::kCrash) crashes++;
  }
  void OnRequestFinished(const std::string& device_id, absl::Duration busy,
                         const absl::Status& status) override {
    requests++;
  }
  std::atomic<int> starts{0}, restarts{0}, crashes{0}, requests{0};
};

TEST_F(DevicePoolTest, ObserverSeesStartsFailuresAndRequests) {
  CountingObserver observer;
  DevicePoolOptions options = TestOptions();
  options.observer = &observer;
  std::unique_ptr<DevicePool> pool = StartPool(options);
  ASSERT_NE(pool, nullptr);
  Load(*pool, "kiln_segv");
  EXPECT_FALSE(pool->Call("cpu", testing::RunOneOutput("kiln_segv")).ok());
  ExpectWorking(*pool);
  pool.reset();
  EXPECT_EQ(observer.starts.load(), 1);
  EXPECT_EQ(observer.restarts.load(), 1);
  EXPECT_EQ(observer.crashes.load(), 1);
  EXPECT_EQ(observer.requests.load(), 4);
}

TEST_F(DevicePoolTest, UnknownDeviceAndShutdown) {
  std::unique_ptr<DevicePool> pool = StartPool();
  ASSERT_NE(pool, nullptr);
  absl::StatusOr<pb::WorkerResponse> r = pool->Call("cuda:5", testing::DescribeRequest());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("devices: cpu"));
  pool->Shutdown();
  absl::StatusOr<pb::WorkerResponse> after = pool->Call("cpu", testing::DescribeRequest());
  EXPECT_EQ(after.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(pool->Devices()[0].worker_state(), "stopped");
}

TEST(DevicePoolStart, Errors) {
  DevicePoolOptions missing = TestOptions();
  missing.worker_path = "/nonexistent/kiln-worker";
  EXPECT_EQ(DevicePool::Start(missing).status().code(), absl::StatusCode::kNotFound);
  DevicePoolOptions relative = TestOptions();
  relative.worker_path = "kiln-worker";
  EXPECT_EQ(DevicePool::Start(relative).status().code(), absl::StatusCode::kInvalidArgument);
  DevicePoolOptions none = TestOptions();
  none.offer_cpu = false;
  EXPECT_EQ(DevicePool::Start(none).status().code(), absl::StatusCode::kInvalidArgument);
  DevicePoolOptions no_cpu_workers = TestOptions();
  no_cpu_workers.cpu_workers = 0;
  absl::Status s = DevicePool::Start(no_cpu_workers).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cpu_workers must be at least 1"));
}

TEST(DevicePoolStart, CountGpusWithoutADriverIsZero) {
  if (access("/dev/nvidiactl", F_OK) == 0) GTEST_SKIP() << "a GPU is attached";
  std::string note;
  EXPECT_EQ(DevicePool::CountGpus(kWorker, &note), 0);
  EXPECT_THAT(note, HasSubstr("CUDA driver not found"));
}

} // namespace
} // namespace kiln::server
