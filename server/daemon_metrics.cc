#include "server/daemon_metrics.h"

#include <chrono>
#include <utility>

#include "util/status_macros.h"

namespace kiln::server {
namespace {

// gRPC's status code names, by number (the same numbers as absl::StatusCode).
constexpr std::string_view kCodeNames[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

bool IsLive(DaemonMetrics::JobState state) {
  return state == DaemonMetrics::JobState::kQueued || state == DaemonMetrics::JobState::kRunning;
}

} // namespace

std::vector<double> DaemonMetrics::RpcLatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,     1,      2.5,   5,      10,    30,   60,    120,  300};
}

std::vector<double> DaemonMetrics::CompileLatencyBuckets() {
  return {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
}

std::string_view DaemonMetrics::PriorityName(Priority priority) {
  switch (priority) {
  case Priority::kInteractive:
    return "interactive";
  case Priority::kCi:
    return "ci";
  case Priority::kTuning:
    return "tuning";
  }
  return "unknown";
}

std::string_view DaemonMetrics::JobKindName(JobKind kind) {
  switch (kind) {
  case JobKind::kCompile:
    return "compile";
  case JobKind::kTune:
    return "tune";
  case JobKind::kBenchmark:
    return "benchmark";
  }
  return "unknown";
}

std::string_view DaemonMetrics::JobStateName(JobState state) {
  switch (state) {
  case JobState::kQueued:
    return "queued";
  case JobState::kRunning:
    return "running";
  case JobState::kSucceeded:
    return "succeeded";
  case JobState::kFailed:
    return "failed";
  case JobState::kCancelled:
    return "cancelled";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<DaemonMetrics>> DaemonMetrics::Create(MetricRegistry& registry,
                                                                     std::string_view version) {
  std::unique_ptr<DaemonMetrics> metrics(new DaemonMetrics(registry));
  if (absl::Status s = metrics->Register(version); !s.ok()) return s;
  return metrics;
}

DaemonMetrics::~DaemonMetrics() {
  // The registry may outlive this object: detach the callbacks that read it.
  for (CallbackFamily* family : cache_families_) family->SetCallback(nullptr);
  for (CallbackFamily* family : helper_families_) family->SetCallback(nullptr);
}

absl::Status DaemonMetrics::Register(std::string_view version) {
  GaugeFamily* build_info = nullptr;
  ASSIGN_OR_RETURN(
      build_info,
      registry_.AddGauge("kiln_build_info", "Always 1; the labels name this build.", {"version"}));
  build_info->WithLabels({version}).Set(1);
  GaugeFamily* start_time = nullptr;
  ASSIGN_OR_RETURN(start_time,
                   registry_.AddGauge("process_start_time_seconds",
                                      "Start time of the process since the Unix epoch, in "
                                      "seconds."));
  start_time->Get().Set(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());

  ASSIGN_OR_RETURN(rpc_requests_,
                   registry_.AddCounter("kiln_rpc_requests_total",
                                        "RPCs handled, by method and gRPC status code.",
                                        {"method", "code"}));
  ASSIGN_OR_RETURN(rpc_latency_,
                   registry_.AddHistogram("kiln_rpc_duration_seconds",
                                          "Time from the arrival of an RPC to its status, by "
                                          "method and gRPC status code.",
                                          {"method", "code"}, RpcLatencyBuckets()));
  ASSIGN_OR_RETURN(compile_latency_,
                   registry_.AddHistogram("kiln_compile_duration_seconds",
                                          "Time the compiler and toolchain took for one "
                                          "program (cache misses only), by target and "
                                          "outcome (ok, error).",
                                          {"target", "outcome"}, CompileLatencyBuckets()));

  GaugeFamily* queue_depth = nullptr;
  ASSIGN_OR_RETURN(queue_depth,
                   registry_.AddGauge("kiln_queue_depth",
                                      "Jobs waiting in the scheduler's queue, by priority.",
                                      {"priority"}));
  CounterFamily* rejections = nullptr;
  ASSIGN_OR_RETURN(rejections,
                   registry_.AddCounter("kiln_queue_rejections_total",
                                        "Requests refused with RESOURCE_EXHAUSTED because their "
                                        "queue (or their client's share of it) was full, by "
                                        "priority.",
                                        {"priority"}));
  for (int p = 0; p < kPriorities; ++p) {
    const std::string_view name = PriorityName(static_cast<Priority>(p));
    queue_depth_[p] = &queue_depth->WithLabels({name});
    queue_rejections_[p] = &rejections->WithLabels({name});
  }

  GaugeFamily* jobs = nullptr;
  ASSIGN_OR_RETURN(jobs,
                   registry_.AddGauge("kiln_jobs", "Jobs now queued or running, by kind and state.",
                                      {"kind", "state"}));
  CounterFamily* finished = nullptr;
  ASSIGN_OR_RETURN(finished,
                   registry_.AddCounter("kiln_jobs_finished_total",
                                        "Jobs that reached a final state (succeeded, failed, "
                                        "cancelled), by kind and state.",
                                        {"kind", "state"}));
  for (int k = 0; k < kJobKinds; ++k) {
    const std::string_view kind = JobKindName(static_cast<JobKind>(k));
    for (int s = 0; s < kJobStates; ++s) {
      const auto state = static_cast<JobState>(s);
      if (IsLive(state)) {
        jobs_live_[k][s] = &jobs->WithLabels({kind, JobStateName(state)});
      } else {
        jobs_finished_[k][s] = &finished->WithLabels({kind, JobStateName(state)});
      }
    }
  }

  ASSIGN_OR_RETURN(worker_restarts_,
                   registry_.AddCounter("kiln_worker_restarts_total",
                                        "GPU worker processes restarted, by device and "
                                        "reason (crash, hang, start_timeout).",
                                        {"device", "reason"}));
  ASSIGN_OR_RETURN(worker_up_, registry_.AddGauge("kiln_worker_up",
                                                  "1 while the device's worker process is "
                                                  "running and ready, else 0.",
                                                  {"device"}));
  ASSIGN_OR_RETURN(gpu_busy_,
                   registry_.AddCounter("kiln_gpu_busy_seconds_total",
                                        "Seconds the device spent on measurements (each has "
                                        "exclusive use of its GPU).",
                                        {"device"}));

  // The cache families read one CacheStats field each at scrape time.
  struct CacheFamily {
    std::string_view name;
    std::string_view help;
    bool counter;
    uint64_t CacheStats::*field;
  };
  static constexpr CacheFamily kCacheFamilies[] = {
      {"kiln_cache_hits_total", "Cache lookups answered from the cache.", true, &CacheStats::hits},
      {"kiln_cache_misses_total", "Cache lookups that found nothing.", true, &CacheStats::misses},
      {"kiln_cache_evictions_total",
       "Cache entries removed to stay under the size limit (best configs are never evicted).", true,
       &CacheStats::evictions},
      {"kiln_cache_size_bytes", "Bytes stored in the cache.", false, &CacheStats::bytes},
      {"kiln_cache_entries", "Entries stored in the cache.", false, &CacheStats::entries},
      {"kiln_cache_limit_bytes", "The cache's size limit in bytes (0: unbounded).", false,
       &CacheStats::limit_bytes},
  };
  for (const CacheFamily& f : kCacheFamilies) {
    MetricCallback read = [this, field = f.field]() -> std::vector<CallbackSample> {
      std::optional<CacheStats> stats = ReadCacheStats();
      if (!stats.has_value()) return {};
      return {CallbackSample{{}, static_cast<double>((*stats).*field)}};
    };
    CallbackFamily* family = nullptr;
    if (f.counter) {
      ASSIGN_OR_RETURN(family, registry_.AddCallbackCounter(f.name, f.help, {}, read));
    } else {
      ASSIGN_OR_RETURN(family, registry_.AddCallbackGauge(f.name, f.help, {}, read));
    }
    cache_families_.push_back(family);
  }

  // NVRTC helper processes: one read of the pool's stats per family and scrape.
  auto read_helpers = [this]() -> std::optional<CompileHelperStats> {
    std::lock_guard<std::mutex> lock(helper_mu_);
    if (!helper_source_) return std::nullopt;
    return helper_source_();
  };
  CallbackFamily* helpers = nullptr;
  ASSIGN_OR_RETURN(helpers,
                   registry_.AddCallbackGauge(
                       "kiln_compile_helpers",
                       "NVRTC helper processes (kiln-worker --compile) by state: idle, or busy "
                       "(building or starting).",
                       {"state"}, [read_helpers]() -> std::vector<CallbackSample> {
                         std::optional<CompileHelperStats> st = read_helpers();
                         if (!st.has_value()) return {};
                         return {CallbackSample{{"idle"}, static_cast<double>(st->idle)},
                                 CallbackSample{{"busy"}, static_cast<double>(st->busy)}};
                       }));
  helper_families_.push_back(helpers);
  struct HelperCounter {
    std::string_view name;
    std::string_view help;
    uint64_t CompileHelperStats::*field;
  };
  static constexpr HelperCounter kHelperCounters[] = {
      {"kiln_compile_helper_starts_total", "NVRTC helper processes started.",
       &CompileHelperStats::started},
      {"kiln_compile_helper_lost_total",
       "NVRTC helper processes that died or were killed (a crash or a hang in a build).",
       &CompileHelperStats::lost},
      {"kiln_compile_helper_builds_total", "CUDA builds answered by an NVRTC helper process.",
       &CompileHelperStats::builds},
      {"kiln_compile_builds_in_process_total",
       "CUDA builds run in kilnd's own process because no helper could be started.",
       &CompileHelperStats::in_process},
  };
  for (const HelperCounter& c : kHelperCounters) {
    CallbackFamily* family = nullptr;
    ASSIGN_OR_RETURN(family, registry_.AddCallbackCounter(
                                 c.name, c.help, {},
                                 [read_helpers, field = c.field]() -> std::vector<CallbackSample> {
                                   std::optional<CompileHelperStats> st = read_helpers();
                                   if (!st.has_value()) return {};
                                   return {CallbackSample{{}, static_cast<double>((*st).*field)}};
                                 }));
    helper_families_.push_back(family);
  }
  return absl::OkStatus();
}

void DaemonMetrics::RpcMetrics::Record(absl::StatusCode code, double seconds) {
  int c = static_cast<int>(code);
  if (c < 0 || c >= kCodes) c = static_cast<int>(absl::StatusCode::kUnknown);
  const Series* series = series_[c].load(std::memory_order_acquire);
  if (series == nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    series = series_[c].load(std::memory_order_relaxed);
    if (series == nullptr) {
      Series& s = storage_[c];
      s.requests = &owner_->rpc_requests_->WithLabels({method_, kCodeNames[c]});
      s.latency = &owner_->rpc_latency_->WithLabels({method_, kCodeNames[c]});
      series_[c].store(&s, std::memory_order_release);
      series = &s;
    }
  }
  series->requests->Increment();
  series->latency->Observe(seconds);
}

DaemonMetrics::RpcMetrics& DaemonMetrics::Rpc(std::string_view method) {
  std::lock_guard<std::mutex> lock(rpc_mu_);
  auto it = rpcs_.find(method);
  if (it == rpcs_.end()) {
    it = rpcs_.emplace(std::string(method), std::make_unique<RpcMetrics>(this, std::string(method)))
             .first;
  }
  return *it->second;
}

void DaemonMetrics::RecordRpc(std::string_view method, absl::StatusCode code, double seconds) {
  Rpc(method).Record(code, seconds);
}

void DaemonMetrics::ObserveCompile(std::string_view target, bool ok, double seconds) {
  compile_latency_->WithLabels({target, ok ? "ok" : "error"}).Observe(seconds);
}

Gauge& DaemonMetrics::QueueDepth(Priority priority) {
  return *queue_depth_[static_cast<int>(priority)];
}

Counter& DaemonMetrics::QueueRejections(Priority priority) {
  return *queue_rejections_[static_cast<int>(priority)];
}

void DaemonMetrics::OnJobStateChange(JobKind kind, std::optional<JobState> from, JobState to) {
  const int k = static_cast<int>(kind);
  if (from.has_value() && IsLive(*from)) jobs_live_[k][static_cast<int>(*from)]->Decrement();
  if (IsLive(to)) {
    jobs_live_[k][static_cast<int>(to)]->Increment();
  } else {
    jobs_finished_[k][static_cast<int>(to)]->Increment();
  }
}

Counter& DaemonMetrics::WorkerRestarts(std::string_view device, std::string_view reason) {
  return worker_restarts_->WithLabels({device, reason});
}

Gauge& DaemonMetrics::WorkerUp(std::string_view device) { return worker_up_->WithLabels({device}); }

Counter& DaemonMetrics::GpuBusySeconds(std::string_view device) {
  return gpu_busy_->WithLabels({device});
}

void DaemonMetrics::SetCacheStatsSource(std::function<CacheStats()> source) {
  std::function<CacheStats()> old;
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    old = std::exchange(cache_source_, std::move(source));
  }
}

void DaemonMetrics::SetCompileHelperStatsSource(std::function<CompileHelperStats()> source) {
  std::function<CompileHelperStats()> old;
  {
    std::lock_guard<std::mutex> lock(helper_mu_);
    old = std::exchange(helper_source_, std::move(source));
  }
}

std::optional<DaemonMetrics::CacheStats> DaemonMetrics::ReadCacheStats() const {
  std::lock_guard<std::mutex> lock(cache_mu_);
  if (!cache_source_) return std::nullopt;
  return cache_source_();
}

} // namespace kiln::server
