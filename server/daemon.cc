#include "server/daemon.h"

#include <utility>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server_builder.h>

#include "absl/strings/str_cat.h"
#include "server/cache_job_store.h"

namespace kiln::server {

Daemon::Daemon(DaemonOptions options) : options_(std::move(options)) {}

Daemon::~Daemon() { Shutdown(std::chrono::milliseconds(0)); }

std::string Daemon::address() const {
  const std::string& l = options_.listen_address;
  return absl::StrCat(l.substr(0, l.rfind(':')), ":", port_);
}

absl::Status Daemon::Start() {
  if (options_.cache_dir.empty()) return absl::InvalidArgumentError("no cache directory");
  cache::CacheOptions co;
  co.max_size_bytes = options_.cache_max_bytes;
  absl::StatusOr<std::unique_ptr<cache::Cache>> c = cache::Cache::Open(options_.cache_dir, co);
  if (!c.ok()) {
    return absl::Status(
        c.status().code(),
        absl::StrCat("cannot open the cache in ", options_.cache_dir, ": ", c.status().message()));
  }
  cache_ = *std::move(c);
  warnings_ = cache_->warnings();

  job_store_ = std::make_unique<CacheJobStore>(cache_.get());
  jobs_ = std::make_unique<JobManager>(job_store_.get());
  if (absl::StatusOr<int64_t> n = jobs_->RecoverInterrupted(); !n.ok()) {
    warnings_.push_back(absl::StrCat("could not recover earlier jobs: ", n.status().message()));
  }
  CompilePoolOptions po;
  po.threads = options_.compile_threads;
  po.max_queued = options_.max_queued;
  pool_ = std::make_unique<CompilePool>(po);
  store_ = std::make_unique<CacheArtifactStore>(cache_.get());
  compile_ = std::make_unique<CompileService>(store_.get(), jobs_.get(), pool_.get());

  ServiceDeps deps;
  deps.compile = compile_.get();
  deps.jobs = jobs_.get();
  deps.cache = cache_.get();
  deps.cache_dir = options_.cache_dir;
  service_ = std::make_unique<KilnService>(std::move(deps));

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.listen_address, grpc::InsecureServerCredentials(), &port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options_.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(options_.max_message_bytes));
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen_address));
  }
  running_ = true;
  return absl::OkStatus();
}

void Daemon::Shutdown(std::chrono::milliseconds grace) {
  if (server_ != nullptr) {
    if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
      health->SetServingStatus(false);
    }
    // New calls are refused at once; calls in flight have `grace`, then are
    // cancelled (their jobs with them, unless held).
    server_->Shutdown(std::chrono::system_clock::now() + grace);
  }
  if (jobs_) jobs_->CancelAll();
  if (pool_) pool_->Shutdown();
  if (server_ != nullptr) {
    server_->Wait();
    server_.reset();
  }
  service_.reset();
  compile_.reset();
  store_.reset();
  pool_.reset();
  jobs_.reset();
  job_store_.reset();
  cache_.reset(); // flushes access times and counters
  running_ = false;
}

} // namespace kiln::server
