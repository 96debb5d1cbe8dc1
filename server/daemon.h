// One kilnd: the cache, the job manager, the compile pool, the compile
// service and the gRPC server (kiln.v1.Kiln, grpc.health.v1, reflection),
// wired together and started and stopped in the right order. kilnd_main.cc
// is the command line around it; in-process tests start one directly.
//
// Start order: cache (open, migrate) -> jobs (recover records an earlier
// process left unfinished) -> pool -> device workers (device_pool.h: one
// kiln-worker per device; without a worker binary the daemon serves on,
// with a warning) -> NVRTC helpers (nvrtc_helpers.h; started ahead when a
// GPU is attached) -> service -> gRPC listening. Shutdown is the reverse:
// health NOT_SERVING and no new calls, in-flight calls get `grace` to
// finish, then remaining jobs are cancelled, the pool joins, the workers are
// killed, builds go back to in-process NVRTC (the helpers exit once no
// build holds them), and the cache flushes and closes.
//
// Not thread-safe: Start and Shutdown from one thread; the services inside
// are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/server.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cache/cache.h"
#include "server/authenticator.h"
#include "server/benchmark_service.h"
#include "server/cache_artifact_store.h"
#include "server/compile_pool.h"
#include "server/compile_service.h"
#include "server/daemon_metrics.h"
#include "server/device_pool.h"
#include "server/device_profiles.h"
#include "server/job_manager.h"
#include "server/kiln_service.h"
#include "server/nvrtc_helpers.h"
#include "server/prepare_pool.h"
#include "server/server_config.h"

namespace kiln::server {

class Daemon {
 public:
  // `config.cache_dir` empty: ResolveCacheDir's default. `metrics` (may be
  // null) must outlive the daemon.
  explicit Daemon(ServerConfig config, DaemonMetrics* metrics = nullptr);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  absl::Status Start();
  // Stops accepting calls, lets running ones finish for up to `grace` (the
  // config's grace period when unset), then cancels what is left.
  void Shutdown(std::optional<absl::Duration> grace = std::nullopt);
  // Whether the daemon serves (for /healthz): after Start, until Shutdown.
  bool serving() const { return running_.load(); }

  int port() const { return port_; } // after Start
  std::string address() const;       // "host:port"
  cache::Cache* cache() { return cache_.get(); }
  JobManager* jobs() { return jobs_.get(); }
  CompileService* compile() { return compile_.get(); }
  CompilePool* pool() { return pool_.get(); }
  DevicePool* devices() { return devices_.get(); } // null when no worker could start
  BenchmarkService* benchmark() { return benchmark_.get(); }
  TuneService* tune() { return tune_.get(); }
  DeviceProfiles* profiles() { return profiles_.get(); }         // null without devices
  NvrtcHelpers* nvrtc_helpers() { return nvrtc_helpers_.get(); } // null: builds in process
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Logs where CUDA builds run (kilnd prints it after its "listening on"
  // line, which stays the first line of its output).
  void LogToolchain() const;

 private:
  // The NVRTC helpers, unless config says none or they cannot be set up.
  void StartNvrtcHelpers();

  ServerConfig config_;
  DaemonMetrics* const metrics_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<cache::Cache> cache_;
  std::unique_ptr<JobStore> job_store_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<CompilePool> pool_;
  // The frontend of compile requests, off the gRPC threads.
  std::unique_ptr<PreparePool> prepare_pool_;
  // Where NVRTC builds run (null: in this process); installed as the
  // toolchain's runner under nvrtc_runner_. Shared with builds in flight.
  std::shared_ptr<NvrtcHelpers> nvrtc_helpers_;
  uint64_t nvrtc_runner_ = 0;
  std::unique_ptr<CacheArtifactStore> store_;
  std::unique_ptr<CompileService> compile_;
  std::unique_ptr<DevicePoolObserver> device_events_;
  std::unique_ptr<DevicePool> devices_;
  // Micro-benchmark results per device model; used by tune_'s planner.
  std::unique_ptr<DeviceProfiles> profiles_;
  std::unique_ptr<CompilePool> measure_pool_; // benchmarks, waiting on devices
  std::unique_ptr<BenchmarkService> benchmark_;
  std::unique_ptr<TuneService> tune_;
  std::unique_ptr<KilnService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::atomic<bool> running_{false};
  std::vector<std::string> warnings_;
};

} // namespace kiln::server
