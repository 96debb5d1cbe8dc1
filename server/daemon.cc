#include "server/daemon.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "compiler/toolchain/nvrtc.h"
#include "server/cache_job_store.h"
#include "server/call_policy.h"
#include "server/library_logs.h"
#include "server/roller_planner.h"
#include "server/rpc_observer.h"
#include "server/version.h"
#include "server/worker_error.h"
#include "util/log.h"

namespace kiln::server {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read the TLS ", what, " ", path));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const TlsConfig& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions o;
  absl::StatusOr<std::string> cert = ReadPem(tls.cert_file, "certificate");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem(tls.key_file, "key");
  if (!key.ok()) return key.status();
  o.pem_key_cert_pairs.push_back({*key, *cert});
  if (tls.mutual()) {
    absl::StatusOr<std::string> ca = ReadPem(tls.client_ca_file, "client CA bundle");
    if (!ca.ok()) return ca.status();
    o.pem_root_certs = *ca;
    o.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(o);
}

DaemonMetrics::JobKind MetricKind(kiln::v1::JobKind k) {
  switch (k) {
  case kiln::v1::JOB_KIND_TUNE:
    return DaemonMetrics::JobKind::kTune;
  case kiln::v1::JOB_KIND_BENCHMARK:
    return DaemonMetrics::JobKind::kBenchmark;
  default:
    return DaemonMetrics::JobKind::kCompile;
  }
}

DaemonMetrics::JobState MetricState(kiln::v1::JobState s) {
  switch (s) {
  case kiln::v1::JOB_STATE_RUNNING:
    return DaemonMetrics::JobState::kRunning;
  case kiln::v1::JOB_STATE_SUCCEEDED:
    return DaemonMetrics::JobState::kSucceeded;
  case kiln::v1::JOB_STATE_FAILED:
    return DaemonMetrics::JobState::kFailed;
  case kiln::v1::JOB_STATE_CANCELLED:
    return DaemonMetrics::JobState::kCancelled;
  default:
    return DaemonMetrics::JobState::kQueued;
  }
}

DaemonMetrics::Priority MetricPriority(Priority p) {
  switch (p) {
  case Priority::kBenchmark:
    return DaemonMetrics::Priority::kCi;
  case Priority::kTuning:
    return DaemonMetrics::Priority::kTuning;
  default:
    return DaemonMetrics::Priority::kInteractive;
  }
}

// Device pool events into the log and, when there are metrics, into
// kiln_worker_up, kiln_worker_restarts_total and kiln_gpu_busy_seconds_total.
class DeviceEvents final : public DevicePoolObserver {
 public:
  explicit DeviceEvents(DaemonMetrics* metrics) : metrics_(metrics) {}

  void OnWorkerStarted(const std::string& device, bool restart) override {
    if (metrics_ != nullptr) metrics_->WorkerUp(device).Set(1);
    // First starts are listed after kilnd's "listening on" line.
    if (restart) util::LogInfo("device worker restarted", {{"device", device}});
  }
  void OnWorkerFailed(const std::string& device, WorkerErrorKind kind,
                      const absl::Status& status) override {
    if (metrics_ != nullptr) {
      metrics_->WorkerUp(device).Set(0);
      metrics_->WorkerRestarts(device, RestartReason(kind)).Increment();
    }
    util::LogWarning(
        "device worker lost; it restarts",
        {{"device", device}, {"kind", WorkerErrorKindName(kind)}, {"error", status.message()}});
  }
  void OnRequestFinished(const std::string& device, absl::Duration busy,
                         const absl::Status& status) override {
    if (metrics_ != nullptr)
      metrics_->GpuBusySeconds(device).Increment(absl::ToDoubleSeconds(busy));
  }

 private:
  // kiln_worker_restarts_total's reason label.
  static std::string_view RestartReason(WorkerErrorKind kind) {
    switch (kind) {
    case WorkerErrorKind::kTimeout:
      return "hang";
    case WorkerErrorKind::kUnavailable: // a replacement that did not start
      return "start_timeout";
    case WorkerErrorKind::kCancelled:
      return "cancelled";
    default: // crash, launch failure, protocol error, death while idle
      return "crash";
    }
  }

  DaemonMetrics* const metrics_;
};

} // namespace

Daemon::Daemon(ServerConfig config, DaemonMetrics* metrics)
    : config_(std::move(config)), metrics_(metrics) {
  config_.cache_dir = ResolveCacheDir(config_);
}

Daemon::~Daemon() { Shutdown(absl::ZeroDuration()); }

std::string Daemon::address() const {
  const std::string& l = config_.listen_address;
  return absl::StrCat(l.substr(0, l.rfind(':')), ":", port_);
}

absl::Status Daemon::Start() {
  // protobuf's and gRPC's own lines go into the structured log (one JSON
  // object per line in JSON mode), before the server's threads use them.
  static std::once_flag route_library_logs;
  std::call_once(route_library_logs, RouteLibraryLogs);
  absl::StatusOr<std::unique_ptr<Authenticator>> auth =
      Authenticator::Create(config_.auth, config_.fair_share);
  if (!auth.ok()) return auth.status();
  auth_ = *std::move(auth);
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> creds = Credentials(config_.tls);
  if (!creds.ok()) return creds.status();

  cache::CacheOptions co;
  co.max_size_bytes = config_.cache_max_bytes;
  co.min_free_bytes = config_.cache_min_free_bytes;
  co.on_warning = [](const std::string& w) { util::LogWarning(w, {{"component", "cache"}}); };
  absl::StatusOr<std::unique_ptr<cache::Cache>> c = cache::Cache::Open(config_.cache_dir, co);
  if (!c.ok()) {
    return absl::Status(
        c.status().code(),
        absl::StrCat("cannot open the cache in ", config_.cache_dir, ": ", c.status().message()));
  }
  cache_ = *std::move(c);
  warnings_ = cache_->warnings();

  job_store_ = std::make_unique<CacheJobStore>(cache_.get());
  jobs_ = std::make_unique<JobManager>(
      job_store_.get(), static_cast<size_t>(config_.jobs.keep_finished),
      static_cast<size_t>(config_.jobs.keep_finished_bytes), config_.jobs.keep_records);
  if (metrics_ != nullptr) {
    jobs_->set_observer([m = metrics_](kiln::v1::JobKind kind,
                                       std::optional<kiln::v1::JobState> from,
                                       kiln::v1::JobState to) {
      std::optional<DaemonMetrics::JobState> f;
      if (from) f = MetricState(*from);
      m->OnJobStateChange(MetricKind(kind), f, MetricState(to));
    });
  }
  if (absl::StatusOr<int64_t> n = jobs_->RecoverInterrupted(); !n.ok()) {
    warnings_.push_back(absl::StrCat("could not recover earlier jobs: ", n.status().message()));
  } else if (*n > 0) {
    util::LogInfo("marked jobs an earlier kilnd left unfinished as failed", {{"jobs", *n}});
  }

  CompilePoolOptions po;
  po.threads = config_.compile_threads;
  po.max_queued = {config_.max_queued.interactive, config_.max_queued.ci,
                   config_.max_queued.tuning};
  po.max_queued_bytes = static_cast<int64_t>(config_.max_queued.max_bytes);
  if (config_.fair_share.enabled)
    po.max_queued_per_client = config_.fair_share.max_queued_per_client;
  if (metrics_ != nullptr) {
    po.on_depth = [m = metrics_](Priority p, int64_t depth) {
      m->QueueDepth(MetricPriority(p)).Set(static_cast<double>(depth));
    };
    po.on_reject = [m = metrics_](Priority p) {
      m->QueueRejections(MetricPriority(p)).Increment();
    };
  }
  pool_ = std::make_unique<CompilePool>(po);
  store_ = std::make_unique<CacheArtifactStore>(cache_.get());
  PreparePoolOptions prepare;
  prepare.threads = config_.prepare_threads > 0 ? config_.prepare_threads : 2;
  prepare_pool_ = std::make_unique<PreparePool>(prepare);
  compile_ =
      std::make_unique<CompileService>(store_.get(), jobs_.get(), pool_.get(), prepare_pool_.get());
  frontend::EvalLimits eval_limits;
  eval_limits.max_steps = config_.eval_max_steps;
  eval_limits.max_bytes = static_cast<int64_t>(config_.eval_max_bytes);
  eval_limits.max_seconds = absl::ToDoubleSeconds(config_.eval_max_time);
  compile_->set_eval_limits(eval_limits);
  if (metrics_ != nullptr) {
    compile_->set_on_build([m = metrics_](const std::string& target, double seconds, bool ok) {
      m->ObserveCompile(target, ok, seconds);
    });
    // The cache families read the index at scrape time; a second's old
    // answer is good enough and keeps scrapes from queueing on SQLite.
    struct Memo {
      std::mutex mu;
      absl::Time at = absl::InfinitePast();
      DaemonMetrics::CacheStats stats;
    };
    auto memo = std::make_shared<Memo>();
    cache::Cache* cache = cache_.get();
    const uint64_t limit = config_.cache_max_bytes;
    metrics_->SetCacheStatsSource([memo, cache, limit] {
      std::lock_guard<std::mutex> lock(memo->mu);
      if (absl::Now() - memo->at > absl::Seconds(1)) {
        absl::StatusOr<cache::CacheStats> s = cache->Stats();
        if (s.ok()) {
          memo->stats.hits = static_cast<uint64_t>(s->hits);
          memo->stats.misses = static_cast<uint64_t>(s->misses);
          memo->stats.evictions = static_cast<uint64_t>(s->evictions);
          memo->stats.bytes = s->blob_bytes;
          memo->stats.entries = static_cast<uint64_t>(s->artifacts);
          memo->stats.limit_bytes = limit;
        }
        memo->at = absl::Now();
      }
      return memo->stats;
    });
  }

  // Kernels run in worker processes, one per device; a daemon whose worker
  // cannot start still compiles and serves.
  device_events_ = std::make_unique<DeviceEvents>(metrics_);
  DevicePoolOptions dp;
  dp.worker_path = ResolveWorkerPath(config_);
  dp.discover_gpus = config_.devices.mode == DeviceSelection::Mode::kAuto;
  dp.cpu_workers = config_.cpu_workers;
  if (config_.devices.mode == DeviceSelection::Mode::kList) {
    for (int ordinal : config_.devices.cuda_ordinals) {
      dp.extra_devices.push_back(absl::StrCat("cuda:", ordinal));
    }
  }
  dp.default_timeout = config_.worker.request;
  dp.start_timeout = config_.worker.start;
  dp.observer = device_events_.get();
  dp.stderr_sink = [](std::string_view device, std::string_view line) {
    util::LogInfo(line, {{"component", "worker"}, {"device", device}});
  };
  absl::StatusOr<std::unique_ptr<DevicePool>> devices = DevicePool::Start(std::move(dp));
  if (devices.ok()) {
    devices_ = *std::move(devices);
  } else {
    warnings_.push_back(
        absl::StrCat("no device workers, so no kernel can run here: ", devices.status().message()));
  }

  StartNvrtcHelpers();

  ServiceDeps deps;
  if (devices_ != nullptr) {
    // Roller tunes measure their device model's bandwidth and tensor
    // throughput on first use (server/device_profiles.h); ListDevices shows
    // what is known.
    DeviceProfilesOptions profile_options;
    profile_options.measure = config_.microbench;
    profiles_ = std::make_unique<DeviceProfiles>(devices_.get(), cache_.get(), kKilnVersion,
                                                 profile_options);
    deps.devices = [d = devices_.get(), p = profiles_.get()] {
      std::vector<kiln::v1::Device> devices = d->Devices();
      p->Annotate(devices);
      return devices;
    };
    // Benchmarks mostly wait (for a compile, for their device): a few
    // threads of their own, so they never hold a compile thread.
    CompilePoolOptions mp;
    mp.threads = static_cast<int>(devices_->Devices().size()) + 2;
    mp.max_queued = po.max_queued;
    mp.max_queued_bytes = po.max_queued_bytes;
    if (config_.fair_share.enabled) {
      mp.max_queued_per_client = config_.fair_share.max_queued_per_client;
    }
    measure_pool_ = std::make_unique<CompilePool>(mp);
    benchmark_ = std::make_unique<BenchmarkService>(compile_.get(), store_.get(), devices_.get(),
                                                    jobs_.get(), measure_pool_.get(), cache_.get());
    deps.benchmark = benchmark_.get();
    // Grid and random sweeps use what is known of the device model; only
    // the roller's ranking waits for a measurement.
    TunePlanner planner = [p = profiles_.get()](const kiln::v1::TuneRequest& r,
                                                const kiln::v1::Device& device,
                                                const frontend::EvalLimits& limits) {
      const bool need = r.strategy() == kiln::v1::TUNE_STRATEGY_ROLLER ||
                        r.strategy() == kiln::v1::TUNE_STRATEGY_UNSPECIFIED;
      const kiln::v1::DeviceMeasurements measured = p->Get(device, need);
      return RollerPlannerMeasured(r, device, &measured, limits);
    };
    tune_ = std::make_unique<TuneService>(compile_.get(), store_.get(), devices_.get(), jobs_.get(),
                                          measure_pool_.get(), cache_.get(), planner);
    deps.tune = tune_.get();
  }
  deps.compile = compile_.get();
  deps.jobs = jobs_.get();
  deps.cache = cache_.get();
  deps.cache_dir = config_.cache_dir;
  deps.auth = auth_.get();
  deps.wire_limits.max_parsed_bytes = config_.max_parsed_request_bytes;
  service_ = std::make_unique<KilnService>(std::move(deps));

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config_.listen_address, *creds, &port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(config_.max_message_bytes));
  {
    // The call policy first: the observer then records the status it set.
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors;
    interceptors.push_back(CallPolicyFactory(auth_.get(), config_.auth.open_reflection));
    for (auto& f : RpcObserverFactories(metrics_)) interceptors.push_back(std::move(f));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || (port_ == 0 && config_.listen_address.rfind("unix:", 0) != 0)) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config_.listen_address));
  }
  running_ = true;
  return absl::OkStatus();
}

void Daemon::StartNvrtcHelpers() {
  if (config_.compile_helpers < 0) return;
  NvrtcHelperOptions o;
  o.worker_path = ResolveWorkerPath(config_);
  o.max_helpers = config_.compile_helpers > 0 ? config_.compile_helpers : pool_->threads();
  // With a GPU attached, candidates for it are coming: the helpers start
  // now and each builds one kernel for its arch, so that NVRTC's first-build
  // cost is paid before the first sweep. Without one they start on demand.
  std::string gpu_arch;
  if (devices_ != nullptr) {
    for (const kiln::v1::Device& d : devices_->Devices()) {
      if (d.id().rfind("cuda:", 0) == 0 && !d.arch().empty()) {
        gpu_arch = d.arch();
        break;
      }
    }
  }
  o.warm_arch = gpu_arch;
  absl::StatusOr<std::unique_ptr<NvrtcHelpers>> helpers = NvrtcHelpers::Create(o);
  if (!helpers.ok()) {
    warnings_.push_back(absl::StrCat("CUDA builds run in kilnd's process, without helpers: ",
                                     helpers.status().message()));
    return;
  }
  nvrtc_helpers_ = *std::move(helpers);
  nvrtc_runner_ = toolchain::InstallNvrtcRunner(
      [h = nvrtc_helpers_](const toolchain::CudaCompileInput& in) { return h->Compile(in); });
  if (!gpu_arch.empty()) nvrtc_helpers_->Prewarm(o.max_helpers);
  if (metrics_ != nullptr) {
    metrics_->SetCompileHelperStatsSource([h = nvrtc_helpers_] {
      const NvrtcHelperStats st = h->stats();
      DaemonMetrics::CompileHelperStats out;
      out.started = static_cast<uint64_t>(st.started);
      out.lost = static_cast<uint64_t>(st.lost);
      out.builds = static_cast<uint64_t>(st.builds);
      out.in_process = static_cast<uint64_t>(st.in_process);
      out.idle = static_cast<uint64_t>(st.idle);
      out.busy = static_cast<uint64_t>(std::max(0, st.live - st.idle));
      return out;
    });
  }
}

void Daemon::LogToolchain() const {
  if (nvrtc_helpers_ == nullptr) {
    util::LogInfo("CUDA builds run in kilnd's process", {{"compile_threads", pool_->threads()}});
    return;
  }
  // A warm-up arch is set exactly when the helpers were started with the
  // daemon (a GPU is attached); otherwise they start on demand.
  const NvrtcHelperOptions& o = nvrtc_helpers_->options();
  util::LogInfo("CUDA builds run in NVRTC helper processes",
                {{"max_helpers", o.max_helpers},
                 {"started_now", o.warm_arch.empty() ? "no (on demand)" : "yes"},
                 {"warm_arch", o.warm_arch}});
}

void Daemon::Shutdown(std::optional<absl::Duration> grace) {
  const absl::Duration g = grace.value_or(config_.grace_period);
  const absl::Time deadline = absl::Now() + g;
  running_ = false;
  if (server_ != nullptr) {
    if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
      health->SetServingStatus(false);
    }
    // New calls are refused at once; calls in flight have the grace period,
    // then are cancelled (and their jobs with them, unless others hold them).
    server_->Shutdown(absl::ToChronoTime(deadline));
  }
  // Queued and running jobs, async ones included (their calls returned long
  // ago), have what is left of the grace period. What has not finished then
  // fails with a status its saved record keeps, so a client that asks after
  // a restart learns why (jobs are not resumed: see docs/operations.md).
  if (pool_) (void)pool_->WaitIdle(deadline);
  if (measure_pool_) (void)measure_pool_->WaitIdle(deadline);
  if (jobs_) {
    jobs_->FailUnfinished(absl::UnavailableError(
        absl::StrCat("daemon shutting down: the job did not finish within the ",
                     absl::FormatDuration(g), " grace period; submit it again")));
  }
  if (measure_pool_) measure_pool_->Shutdown(); // benchmarks end: their jobs are cancelled
  if (pool_) pool_->Shutdown();
  // Evaluations still running stop at their next budget check.
  if (prepare_pool_) prepare_pool_->Shutdown();
  if (server_ != nullptr) {
    server_->Wait();
    server_.reset();
  }
  if (metrics_ != nullptr && cache_ != nullptr) metrics_->SetCacheStatsSource(nullptr);
  service_.reset();
  tune_.reset();
  benchmark_.reset();
  measure_pool_.reset();
  if (devices_) devices_->Shutdown(); // kills the workers; jobs are already cancelled
  devices_.reset();
  compile_.reset();
  prepare_pool_.reset();
  store_.reset();
  pool_.reset();
  // Later builds run in process; the helpers go once no build holds them.
  if (nvrtc_runner_ != 0) toolchain::RemoveNvrtcRunner(std::exchange(nvrtc_runner_, 0));
  if (metrics_ != nullptr && nvrtc_helpers_ != nullptr) {
    metrics_->SetCompileHelperStatsSource(nullptr);
  }
  nvrtc_helpers_.reset();
  jobs_.reset();
  job_store_.reset();
  cache_.reset(); // flushes access times and counters
}

} // namespace kiln::server
