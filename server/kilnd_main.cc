// kilnd: the Kiln daemon. Listens for gRPC (kiln.v1.Kiln, grpc.health.v1 and
// server reflection) and, with --metrics-listen, serves /metrics and /healthz
// over HTTP, until SIGINT/SIGTERM, then shuts down gracefully. Configuration:
// server/server_config.h (kilnd --help).
#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <pthread.h>

#include "absl/strings/str_cat.h"
#include "server/daemon_metrics.h"
#include "server/http_server.h"
#include "server/kiln_service.h"
#include "server/metrics.h"
#include "server/server_config.h"
#include "server/version.h"
#include "util/log.h"

int main(int argc, char** argv) {
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
  if (absl::Status s =
          kiln::util::ConfigureLogging(config.log.format, config.log.level, config.log.file);
      !s.ok()) {
    std::fprintf(stderr, "kilnd: %s\n", absl::StrCat(s.message()).c_str());
    return 1;
  }
  for (const std::string& warning : loaded->warnings) kiln::util::LogWarning(warning);
  // Until the gRPC layer serves them, refuse security settings rather than
  // ignore them and serve plaintext without authentication.
  if (config.tls.enabled() || config.auth.enabled()) {
    kiln::util::LogError("TLS and bearer tokens are configured, but this kilnd does not serve "
                         "them yet; refusing to start");
    return 1;
  }

  // Block SIGINT/SIGTERM before any thread starts, so every gRPC thread
  // inherits the mask and main() receives them with sigwait: no window in
  // which a signal is lost or kills the process without a clean shutdown.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  kiln::server::MetricRegistry registry;
  absl::StatusOr<std::unique_ptr<kiln::server::DaemonMetrics>> metrics =
      kiln::server::DaemonMetrics::Create(registry, kiln::server::kKilnVersion);
  if (!metrics.ok()) {
    kiln::util::LogError("cannot register metrics", {{"error", metrics.status().ToString()}});
    return 1;
  }
  std::atomic<bool> serving{false};
  std::unique_ptr<kiln::server::HttpServer> http;
  if (!config.metrics_listen_address.empty()) {
    kiln::server::HttpServerOptions options;
    options.listen_address = config.metrics_listen_address;
    options.routes = kiln::server::OpsHttpRoutes(registry, [&serving] { return serving.load(); });
    absl::StatusOr<std::unique_ptr<kiln::server::HttpServer>> started =
        kiln::server::HttpServer::Start(std::move(options));
    if (!started.ok()) {
      kiln::util::LogError(absl::StrCat("kilnd: ", started.status().message()));
      return 1;
    }
    http = *std::move(started);
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  kiln::server::KilnService service(config);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(config.listen_address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    kiln::util::LogError(absl::StrCat("kilnd: cannot listen on ", config.listen_address));
    return 1;
  }
  serving.store(true);
  std::string host = config.listen_address.substr(0, config.listen_address.rfind(':'));
  std::string metrics_part =
      http != nullptr ? absl::StrCat(" metrics on ", http->address()) : std::string();
  kiln::util::LogInfo(absl::StrCat("kilnd ", kiln::server::kKilnVersion, " listening on ", host,
                                   ":", port, metrics_part, " (cache ", config.cache_dir, ")"));

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  serving.store(false);
  kiln::util::LogInfo(
      absl::StrCat("kilnd: ", signal_number == SIGINT ? "SIGINT" : "SIGTERM", ", shutting down"));
  server->Shutdown();
  if (http != nullptr) http->Stop();
  return 0;
}
