// kilnd: the Kiln daemon. Serves gRPC (kiln.v1.Kiln, grpc.health.v1 and
// server reflection) and, with --metrics-listen, /metrics and /healthz over
// HTTP, until SIGINT/SIGTERM; then stops accepting calls, drains for the
// grace period, cancels the rest and closes the cache. Configuration:
// server/server_config.h (`kilnd --help`).
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include <malloc.h>
#include <pthread.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/daemon.h"
#include "server/daemon_metrics.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/server_config.h"
#include "server/version.h"
#include "util/file_path.h"
#include "util/log.h"

namespace {

// Memory the allocator keeps after a burst of large requests (issue 27: under
// rpc_fuzz, kilnd's RSS reached 2.2 GB; of 770 MB held by malloc after 10,000
// calls, 620 MB were free). glibc raises its mmap threshold (up to 32 MiB)
// each time it frees a large mapped block, so from then on the 1 to 64 MiB
// buffers of large requests come from the arenas, where freed memory stays
// in the process. A fixed threshold keeps blocks of kMmapThreshold and more
// in their own mappings, unmapped at free, and a trim every kTrimEvery hands
// the free pages inside the arenas back to the kernel.
constexpr int kMmapThreshold = 1 << 20;
constexpr absl::Duration kTrimEvery = absl::Seconds(10);

// Calls malloc_trim every kTrimEvery until Stop.
class MemoryTrimmer {
 public:
  MemoryTrimmer() {
    mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
    thread_ = std::thread([this] {
      for (;;) {
        {
          absl::MutexLock lock(&mu_);
          if (mu_.AwaitWithTimeout(absl::Condition(&stop_), kTrimEvery)) return;
        }
        malloc_trim(0);
      }
    });
  }
  ~MemoryTrimmer() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    thread_.join();
  }
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

 private:
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

} // namespace

int main(int argc, char** argv) {
  // Abseil's mutex deadlock detector keeps a lock graph on every lock: worth
  // it in tests (they run with it), not on the hit path of a service.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::StatusOr<kiln::server::LoadedServerConfig> loaded =
      kiln::server::LoadServerConfig(argc, argv, kiln::server::ProcessEnvironment());
  if (!loaded.ok()) {
    std::fprintf(stderr, "kilnd: %s\n", absl::StrCat(loaded.status().message()).c_str());
    return 1;
  }
  switch (loaded->action) {
  case kiln::server::ServerAction::kHelp:
    std::fputs(kiln::server::ServerConfigHelp().c_str(), stdout);
    return 0;
  case kiln::server::ServerAction::kVersion:
    std::printf("kilnd %s (tile IR v%s)\n", kiln::server::kKilnVersion, kiln::server::kIrVersions);
    return 0;
  case kiln::server::ServerAction::kPrintConfig:
    std::fputs(kiln::server::DumpConfigYaml(loaded->config, &loaded->sources).c_str(), stdout);
    return 0;
  case kiln::server::ServerAction::kServe:
    break;
  }
  const kiln::server::ServerConfig& config = loaded->config;
  // log.file's folder is created like every output's (logs/kilnd.log).
  if (!config.log.file.empty()) {
    if (absl::Status s = kiln::util::EnsureDirectory(kiln::util::ParentFolder(config.log.file));
        !s.ok()) {
      std::fprintf(stderr, "kilnd: log.file %s: %s\n", config.log.file.c_str(),
                   absl::StrCat(s.message()).c_str());
      return 1;
    }
  }
  if (absl::Status s =
          kiln::util::ConfigureLogging(config.log.format, config.log.level, config.log.file);
      !s.ok()) {
    std::fprintf(stderr, "kilnd: %s\n", absl::StrCat(s.message()).c_str());
    return 1;
  }
  for (const std::string& warning : loaded->warnings) kiln::util::LogWarning(warning);

  // Block SIGINT/SIGTERM before any thread starts, so every thread inherits
  // the mask and main() receives them with sigwait: no window in which a
  // signal is lost or kills the process without a clean shutdown.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  MemoryTrimmer trimmer; // after the signal mask: its thread inherits it

  kiln::server::MetricRegistry registry;
  absl::StatusOr<std::unique_ptr<kiln::server::DaemonMetrics>> metrics =
      kiln::server::DaemonMetrics::Create(registry, kiln::server::kKilnVersion);
  if (!metrics.ok()) {
    kiln::util::LogError("cannot register metrics", {{"error", metrics.status().ToString()}});
    return 1;
  }
  kiln::server::Daemon daemon(config, metrics->get());
  std::unique_ptr<kiln::server::HttpServer> http;
  if (!config.metrics_listen_address.empty()) {
    kiln::server::HttpServerOptions options;
    options.listen_address = config.metrics_listen_address;
    options.routes = kiln::server::OpsHttpRoutes(registry, [&daemon] { return daemon.serving(); });
    absl::StatusOr<std::unique_ptr<kiln::server::HttpServer>> started =
        kiln::server::HttpServer::Start(std::move(options));
    if (!started.ok()) {
      kiln::util::LogError(absl::StrCat("kilnd: ", started.status().message()));
      return 1;
    }
    http = *std::move(started);
  }
  if (absl::Status s = daemon.Start(); !s.ok()) {
    kiln::util::LogError(absl::StrCat("kilnd: ", s.message()));
    return 1;
  }
  for (const std::string& w : daemon.warnings()) kiln::util::LogWarning(w);
  const std::string metrics_part =
      http != nullptr ? absl::StrCat(" metrics on ", http->address()) : std::string();
  kiln::util::LogInfo(absl::StrCat("kilnd ", kiln::server::kKilnVersion, " listening on ",
                                   daemon.address(), metrics_part, " (cache ",
                                   kiln::server::ResolveCacheDir(config), ")"));
  daemon.LogToolchain();
  if (kiln::server::DevicePool* devices = daemon.devices()) {
    for (const kiln::v1::Device& d : devices->Devices()) {
      kiln::util::LogInfo(absl::StrCat("device ", d.id(), ": ", d.model(), " (", d.arch(), ")"),
                          {{"device", d.id()}, {"worker", d.worker_state()}});
    }
    kiln::util::LogInfo(absl::StrCat("GPU discovery: ", devices->discovery_note()));
  }

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  kiln::util::LogInfo(
      absl::StrCat("kilnd: ", signal_number == SIGINT ? "SIGINT" : "SIGTERM", ", shutting down"));
  daemon.Shutdown();
  if (http != nullptr) http->Stop();
  kiln::util::LogInfo("kilnd: stopped");
  return 0;
}
