// kilnd: the Kiln daemon. Listens for gRPC (kiln.v1.Kiln, grpc.health.v1 and
// server reflection) until SIGINT/SIGTERM, then shuts down gracefully.
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <pthread.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "server/kiln_service.h"
#include "server/server_config.h"
#include "server/version.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7070",
          "host:port to listen on (port 0 picks a free port)");
ABSL_FLAG(std::string, cache_dir, "", "cache directory (default $KILN_CACHE_DIR or ~/.cache/kiln)");
ABSL_FLAG(bool, version, false, "print the version and exit");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("kilnd: the Kiln compilation and autotuning daemon");
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_version)) {
    std::printf("kilnd %s (tile IR v%s)\n", kiln::server::kKilnVersion, kiln::server::kIrVersions);
    return 0;
  }

  kiln::server::ServerConfig config;
  config.listen_address = absl::GetFlag(FLAGS_listen);
  config.cache_dir = absl::GetFlag(FLAGS_cache_dir);

  // Block SIGINT/SIGTERM before any thread starts, so every gRPC thread
  // inherits the mask and main() receives them with sigwait: no window in
  // which a signal is lost or kills the process without a clean shutdown.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  kiln::server::KilnService service(config);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(config.listen_address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "kilnd: cannot listen on %s\n", config.listen_address.c_str());
    return 1;
  }
  std::string host = config.listen_address.substr(0, config.listen_address.rfind(':'));
  std::printf("kilnd %s listening on %s:%d (cache %s)\n", kiln::server::kKilnVersion, host.c_str(),
              port, kiln::server::ResolveCacheDir(config).c_str());
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::printf("kilnd: %s, shutting down\n", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);
  server->Shutdown();
  return 0;
}
