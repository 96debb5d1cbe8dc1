// One kilnd: the cache, the job manager, the compile pool, the compile
// service and the gRPC server (kiln.v1.Kiln, grpc.health.v1, reflection),
// wired together and started and stopped in the right order. kilnd_main.cc
// is the command line around it; in-process tests start one directly.
//
// Start order: cache (open, migrate) -> jobs (recover records an earlier
// process left unfinished) -> pool -> service -> gRPC listening. Shutdown
// is the reverse: health NOT_SERVING and no new calls, in-flight calls get
// `grace` to finish, then remaining jobs are cancelled, the pool joins, and
// the cache flushes and closes.
//
// Not thread-safe: Start and Shutdown from one thread; the services inside
// are thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/server.h>

#include "absl/status/statusor.h"
#include "cache/cache.h"
#include "server/cache_artifact_store.h"
#include "server/compile_pool.h"
#include "server/compile_service.h"
#include "server/job_manager.h"
#include "server/kiln_service.h"

namespace kiln::server {

struct DaemonOptions {
  std::string listen_address = "127.0.0.1:7070"; // port 0: a free port
  std::string cache_dir;                         // required
  uint64_t cache_max_bytes = 0;                  // 0: unbounded
  int compile_threads = 0;                       // 0: one per core
  std::array<int64_t, kPriorities> max_queued = {1024, 1024, 4096};
  int64_t max_message_bytes = 64 << 20;
};

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  absl::Status Start();
  // Drains for up to `grace`, then cancels what is left.
  void Shutdown(std::chrono::milliseconds grace = std::chrono::seconds(10));

  int port() const { return port_; } // after Start
  std::string address() const;       // "host:port"
  cache::Cache* cache() { return cache_.get(); }
  JobManager* jobs() { return jobs_.get(); }
  CompileService* compile() { return compile_.get(); }
  CompilePool* pool() { return pool_.get(); }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  DaemonOptions options_;
  std::unique_ptr<cache::Cache> cache_;
  std::unique_ptr<JobStore> job_store_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<CompilePool> pool_;
  std::unique_ptr<CacheArtifactStore> store_;
  std::unique_ptr<CompileService> compile_;
  std::unique_ptr<KilnService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool running_ = false;
  std::vector<std::string> warnings_;
};

} // namespace kiln::server
