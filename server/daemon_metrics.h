// The metric families kilnd exports (docs/metrics.md describes each), and
// the hooks through which the gRPC layer, the scheduler, the job manager,
// the device pool and the cache feed them.
//
//   MetricRegistry registry;
//   std::unique_ptr<DaemonMetrics> metrics = *DaemonMetrics::Create(registry, kKilnVersion);
//   DaemonMetrics::RpcMetrics& compile_rpc = metrics->Rpc("Compile");  // once per method
//   compile_rpc.Record(absl::StatusCode::kOk, seconds);                  // per call, lock-free
//
// Thread-safety: every method is thread-safe. The references returned stay
// valid as long as the DaemonMetrics; updating through them is lock-free.
// Methods that take a free-form label (method, target, device) look the
// series up under a lock: call them once and keep the reference where the
// path is hot.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/metrics.h"

namespace kiln::server {

class DaemonMetrics {
 public:
  // Scheduler priorities, highest first (issue 5: interactive compile > CI
  // benchmark > tuning sweep).
  enum class Priority { kInteractive, kCi, kTuning };
  enum class JobKind { kCompile, kTune, kBenchmark };
  // Queued and running are live states (a gauge each); the others are final
  // (a counter each).
  enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };

  // What the cache reports; read at each scrape, so it must be cheap.
  struct CacheStats {
    uint64_t hits = 0;        // lookups answered from the cache, since start
    uint64_t misses = 0;      // lookups that were not, since start
    uint64_t evictions = 0;   // entries removed to stay under the size limit, since start
    uint64_t bytes = 0;       // bytes stored now
    uint64_t entries = 0;     // entries stored now
    uint64_t limit_bytes = 0; // configured bound; 0 = unbounded
  };

  // What the NVRTC helper pool reports (server/nvrtc_helpers.h); read at
  // each scrape.
  struct CompileHelperStats {
    uint64_t started = 0;    // helpers started, since start
    uint64_t lost = 0;       // helpers that died or were killed, since start
    uint64_t builds = 0;     // builds a helper answered, since start
    uint64_t in_process = 0; // builds run in kilnd for want of a helper, since start
    uint64_t idle = 0;       // helpers waiting for a build now
    uint64_t busy = 0;       // helpers building or starting now
  };

  // Latency buckets, in seconds. RPCs: from 100 us (a cache hit) to 5 min (a
  // long compile). Compiles: from 10 ms (NVRTC on a small kernel) to 10 min.
  static std::vector<double> RpcLatencyBuckets();
  static std::vector<double> CompileLatencyBuckets();

  // Registers every family in `registry` (which must outlive the result) and
  // sets kiln_build_info{version} and process_start_time_seconds.
  // AlreadyExists if the registry already has one of the families.
  static absl::StatusOr<std::unique_ptr<DaemonMetrics>> Create(MetricRegistry& registry,
                                                               std::string_view version);
  ~DaemonMetrics();
  DaemonMetrics(const DaemonMetrics&) = delete;
  DaemonMetrics& operator=(const DaemonMetrics&) = delete;

  // The counter and latency histogram of one RPC method, by status code.
  // gRPC's status codes have the same numbers as absl::StatusCode
  // (static_cast<absl::StatusCode>(grpc_status.error_code())).
  // Obtained from Rpc().
  class RpcMetrics {
   public:
    RpcMetrics(DaemonMetrics* owner, std::string method)
        : owner_(owner), method_(std::move(method)) {}

    // Counts one finished call and observes its latency. Lock-free once a
    // code has been seen; codes outside 0..16 are recorded as UNKNOWN.
    void Record(absl::StatusCode code, double seconds);

   private:
    struct Series {
      Counter* requests = nullptr;
      Histogram* latency = nullptr;
    };
    static constexpr int kCodes = 17;
    DaemonMetrics* owner_;
    std::string method_;
    std::mutex mu_; // serializes first use of a code
    std::array<std::atomic<const Series*>, kCodes> series_{};
    std::array<Series, kCodes> storage_{}; // written once under mu_, then published
  };
  // The metrics of `method` (the RPC's short name, "Compile").
  RpcMetrics& Rpc(std::string_view method);
  // Rpc(method).Record(code, seconds).
  void RecordRpc(std::string_view method, absl::StatusCode code, double seconds);

  // One compile by the toolchain (not a cache hit): `target` is the target's
  // family as the compiler names it ("cuda:sm_90", "cpu"); keep it bounded.
  void ObserveCompile(std::string_view target, bool ok, double seconds);

  // Jobs waiting in the scheduler's queue of each priority (set by the
  // scheduler whenever a queue changes), and requests refused because a
  // queue was full (RESOURCE_EXHAUSTED).
  Gauge& QueueDepth(Priority priority);
  Counter& QueueRejections(Priority priority);

  // A job entered state `to` (from `from`, or new / reloaded after a restart
  // when from is empty). Keeps kiln_jobs{kind,state} (live states) and
  // kiln_jobs_finished_total{kind,state} (final states) in step. Lock-free.
  void OnJobStateChange(JobKind kind, std::optional<JobState> from, JobState to);

  // Device pool. `device` is the device's id ("cuda:0"); `reason` is one of
  // "crash", "hang", "start_timeout".
  Counter& WorkerRestarts(std::string_view device, std::string_view reason);
  // 1 while the device's worker is running and ready, else 0.
  Gauge& WorkerUp(std::string_view device);
  // Seconds the device spent measuring (exclusive use), summed.
  Counter& GpuBusySeconds(std::string_view device);

  // Where the cache families read their values; an empty function (the
  // default) exposes the families without samples. Waits for a scrape that
  // is calling the old source to finish.
  void SetCacheStatsSource(std::function<CacheStats()> source);
  // The same for the compile-helper families (empty: no samples, as when
  // CUDA builds run in kilnd's process by configuration).
  void SetCompileHelperStatsSource(std::function<CompileHelperStats()> source);

  static std::string_view PriorityName(Priority priority);
  static std::string_view JobKindName(JobKind kind);
  static std::string_view JobStateName(JobState state);

 private:
  explicit DaemonMetrics(MetricRegistry& registry) : registry_(registry) {}
  absl::Status Register(std::string_view version);
  // Calls the source (once per cache family and scrape); empty without one.
  std::optional<CacheStats> ReadCacheStats() const;

  static constexpr int kPriorities = 3;
  static constexpr int kJobKinds = 3;
  static constexpr int kJobStates = 5;

  MetricRegistry& registry_;
  CounterFamily* rpc_requests_ = nullptr;
  HistogramFamily* rpc_latency_ = nullptr;
  HistogramFamily* compile_latency_ = nullptr;
  CounterFamily* worker_restarts_ = nullptr;
  GaugeFamily* worker_up_ = nullptr;
  CounterFamily* gpu_busy_ = nullptr;
  std::array<Gauge*, kPriorities> queue_depth_{};
  std::array<Counter*, kPriorities> queue_rejections_{};
  // [kind][state]: gauges for live states, counters for final ones.
  std::array<std::array<Gauge*, kJobStates>, kJobKinds> jobs_live_{};
  std::array<std::array<Counter*, kJobStates>, kJobKinds> jobs_finished_{};

  std::mutex rpc_mu_;
  std::map<std::string, std::unique_ptr<RpcMetrics>, std::less<>> rpcs_; // guarded by rpc_mu_

  mutable std::mutex cache_mu_;              // held while the source runs
  std::function<CacheStats()> cache_source_; // guarded by cache_mu_
  std::vector<CallbackFamily*> cache_families_;
  mutable std::mutex helper_mu_;                      // held while the source runs
  std::function<CompileHelperStats()> helper_source_; // guarded by helper_mu_
  std::vector<CallbackFamily*> helper_families_;
};

} // namespace kiln::server
