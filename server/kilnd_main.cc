// kilnd: the Kiln daemon. Serves kiln.v1.Kiln, grpc.health.v1 and server
// reflection until SIGINT/SIGTERM, then drains and shuts down.
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include <pthread.h>

#include "absl/strings/numbers.h"
#include "server/daemon.h"
#include "server/server_config.h"
#include "server/version.h"

namespace {

constexpr char kUsage[] =
    "usage: kilnd [--listen HOST:PORT] [--cache-dir DIR] [--compile-threads N] [--version]\n"
    "  --listen HOST:PORT    where to serve gRPC (default 127.0.0.1:7070; port 0 picks one)\n"
    "  --cache-dir DIR       the cache directory (default $KILN_CACHE_DIR, else ~/.cache/kiln)\n"
    "  --compile-threads N   compile pool threads (default: one per core)\n";

bool TakeValue(const std::vector<std::string>& args, size_t& i, const std::string& name,
               std::string* value) {
  const std::string& a = args[i];
  std::string alt = name;
  for (char& c : alt) c = c == '-' ? '_' : c;
  alt = "--" + alt.substr(2);
  for (const std::string& n : {name, alt}) {
    if (a == n && i + 1 < args.size()) {
      *value = args[++i];
      return true;
    }
    if (a.rfind(n + "=", 0) == 0) {
      *value = a.substr(n.size() + 1);
      return true;
    }
  }
  return false;
}

} // namespace

int main(int argc, char** argv) {
  kiln::server::ServerConfig config;
  int threads = 0;
  const std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string v;
    if (args[i] == "--version") {
      std::printf("kilnd %s (tile IR v%s)\n", kiln::server::kKilnVersion,
                  kiln::server::kIrVersions);
      return 0;
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::printf("%s", kUsage);
      return 0;
    } else if (TakeValue(args, i, "--listen", &v)) {
      config.listen_address = v;
    } else if (TakeValue(args, i, "--cache-dir", &v)) {
      config.cache_dir = v;
    } else if (TakeValue(args, i, "--compile-threads", &v)) {
      if (!absl::SimpleAtoi(v, &threads) || threads < 0) {
        std::fprintf(stderr, "kilnd: --compile-threads expects a number\n%s", kUsage);
        return 2;
      }
    } else {
      std::fprintf(stderr, "kilnd: unknown argument '%s'\n%s", args[i].c_str(), kUsage);
      return 2;
    }
  }

  // Block SIGINT/SIGTERM before any thread starts, so every thread inherits
  // the mask and main() receives them with sigwait: no window in which a
  // signal is lost or kills the process without a clean shutdown.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  kiln::server::DaemonOptions options;
  options.listen_address = config.listen_address;
  options.cache_dir = kiln::server::ResolveCacheDir(config);
  options.compile_threads = threads;
  kiln::server::Daemon daemon(options);
  if (absl::Status s = daemon.Start(); !s.ok()) {
    const std::string message(s.message());
    std::fprintf(stderr, "kilnd: %s\n", message.c_str());
    return 1;
  }
  std::printf("kilnd %s listening on %s (cache %s)\n", kiln::server::kKilnVersion,
              daemon.address().c_str(), options.cache_dir.c_str());
  for (const std::string& w : daemon.warnings()) std::printf("kilnd: warning: %s\n", w.c_str());
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::printf("kilnd: %s, shutting down\n", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);
  daemon.Shutdown();
  return 0;
}
