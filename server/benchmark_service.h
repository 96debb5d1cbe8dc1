// Benchmark: time a compiled kernel on one device, the business logic
// behind the Benchmark RPC, callable without gRPC.
//
// A benchmark is a job (JOB_KIND_BENCHMARK, never shared: two identical
// requests measure twice). It runs on the measurement pool, a small pool of
// its own so that a benchmark waiting for its GPU never holds a compile
// thread:
//   1. The artifact: by key from the store, or cache-or-compile of the
//      request's program through the CompileService (priority "CI
//      benchmark", the caller's client name for fair share).
//   2. The device: the request's device ids, else any device whose model
//      matches, else any; it must run the artifact's target (a cubin for
//      sm_XY on a GPU of that major version, the CPU target on "cpu"). An
//      idle device is preferred.
//   3. Exclusive use (a DeviceLease): load the module, `warmup` untimed
//      launches and `trials` timed ones (flush_l2, use_cuda_graph as
//      asked), unload. Inputs come from launch_plan.h (seeded like kiln-run).
//   4. The result: the latency distribution; the run goes into the cache's
//      measurement history under `history_name` (default: the artifact
//      key), failures too (with their kind); with a regression policy the
//      verdict against the history before this run (latency_stats.h).
// A crashing or hanging kernel fails the job with the worker's error kind
// and stderr tail (the pool restarts the worker). Cancel() (the RPC went
// away) detaches; the job, which nobody else holds, is then cancelled: a
// wait for the device ends at once, a kernel in flight is killed with its
// worker.
//
// Thread-safe. Everything passed in must outlive the service.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cache/cache.h"
#include "kiln/v1/service.pb.h"
#include "server/artifact_store.h"
#include "server/compile_pool.h"
#include "server/compile_service.h"
#include "server/device_pool.h"
#include "server/job_manager.h"

namespace kiln::server {

struct BenchmarkCall {
  kiln::v1::BenchmarkRequest request;
  std::string client = "anonymous";
  std::string identity; // owns the benchmark job and its compiles (Caller::identity)
};

// The most untimed warm-up launches and timed samples one measurement may ask
// for: Benchmark's warmup and trials, and Tune's budget.warmup and
// budget.repeats (per candidate). A worker runs them under one device lease,
// so an unbounded count (a fuzzed 2^31-1) would hold the device until the
// worker request timeout. Above them: INVALID_ARGUMENT naming the field.
inline constexpr int kMaxMeasureWarmup = 10000;
inline constexpr int kMaxMeasureRepeats = 100000;

struct BenchmarkLimits {
  int default_trials = 20;
  int max_trials = kMaxMeasureRepeats;
  int default_warmup = 3;
  int max_warmup = kMaxMeasureWarmup;
  // Seed of the inputs (kiln-run's generator).
  uint64_t seed = 1;
};

// Counters (metrics and tests).
struct BenchmarkCounters {
  std::atomic<int64_t> started{0}, succeeded{0}, failed{0};
};

class BenchmarkService {
 public:
  using Done = std::function<void(absl::StatusOr<kiln::v1::BenchmarkResponse>)>;

  // `history` may be null (no measurement history, no verdicts).
  BenchmarkService(CompileService* compile, ArtifactStore* store, DevicePool* devices,
                   JobManager* jobs, CompilePool* measure_pool, cache::Cache* history,
                   BenchmarkLimits limits = {});

  class Pending {
   public:
    void Cancel();
    const std::string& job_id() const { return job_id_; }

   private:
    friend class BenchmarkService;
    bool Complete(absl::StatusOr<kiln::v1::BenchmarkResponse> reply);
    std::atomic<bool> completed_{false};
    Done done_;
    std::shared_ptr<Job> job_;
    std::string job_id_;
  };

  // Validates the request (InvalidArgument at once), creates the job and
  // queues it; `done` runs once with the outcome.
  std::shared_ptr<Pending> Start(const BenchmarkCall& call, Done done);
  absl::StatusOr<kiln::v1::BenchmarkResponse>
  BenchmarkSync(const BenchmarkCall& call, absl::Time deadline = absl::InfiniteFuture());

  const BenchmarkCounters& counters() const { return counters_; }

 private:
  void Run(const std::shared_ptr<Job>& job, const BenchmarkCall& call);
  absl::StatusOr<kiln::v1::BenchmarkResponse> Measure(const std::shared_ptr<Job>& job,
                                                      const BenchmarkCall& call);
  absl::StatusOr<kiln::v1::ArtifactMetadata> ArtifactFor(const std::shared_ptr<Job>& job,
                                                         const BenchmarkCall& call);
  void Record(const BenchmarkCall& call, const kiln::v1::BenchmarkResponse& response,
              const std::string& failure);

  CompileService* const compile_;
  ArtifactStore* const store_;
  DevicePool* const devices_;
  JobManager* const jobs_;
  CompilePool* const pool_;
  cache::Cache* const history_;
  const BenchmarkLimits limits_;
  BenchmarkCounters counters_;
};

// The result a benchmark job stores (Job::result<BenchmarkJobResult>()).
struct BenchmarkJobResult {
  kiln::v1::BenchmarkResponse response;
};

// Which device of `devices` runs an artifact of `target` for `selector`
// (exposed for tests). FailedPrecondition when none can, naming why.
absl::StatusOr<std::string> ChooseDevice(const std::vector<kiln::v1::Device>& devices,
                                         const std::string& target,
                                         const kiln::v1::DeviceSelector& selector);

// The devices a tune sweep of `target` measures on: those the selector
// allows that run the target, all of one model (times are compared and kept
// per model), the first such device's model unless the selector names one,
// at most selector.max_devices. Errors: what ChooseDevice says when none
// can; InvalidArgument when the selector names devices of two models.
absl::StatusOr<std::vector<kiln::v1::Device>>
SweepDevices(const std::vector<kiln::v1::Device>& devices, const std::string& target,
             const kiln::v1::DeviceSelector& selector);

} // namespace kiln::server
