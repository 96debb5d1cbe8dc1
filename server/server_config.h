// Settings of one kilnd process, and where they come from.
//
// Every setting is one entry of a single option table (config_options.h),
// which gives it a YAML key, a flag and an environment variable derived from
// that key, and its --help text:
//
//   YAML key (--config FILE)   flag                    environment
//   listen                     --listen HOST:PORT      KILN_LISTEN
//   cache.dir                  --cache-dir DIR         KILN_CACHE_DIR
//   metrics.listen             --metrics-listen H:P    KILN_METRICS_LISTEN
//
// (flag: "--" + the key with '.' and '_' as '-'; variable: "KILN_" + the key
// upper-cased with '.' as '_'). Precedence: flags > environment > YAML file >
// embedded defaults. The defaults are the single-node setup: gRPC on
// 127.0.0.1:7070 without TLS or tokens, cache in $HOME/.cache/kiln, no
// metrics endpoint, a compile thread per available core, devices discovered
// at start-up. docs/kilnd.example.yaml lists every key.
//
// Plain data; not synchronized.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "util/log.h"

namespace kiln::server {

// Which GPUs kilnd spawns workers for.
struct DeviceSelection {
  enum class Mode { kAuto, kNone, kList };
  Mode mode = Mode::kAuto; // kAuto: every GPU the driver reports
  // kList: CUDA device ordinals, as numbered after CUDA_VISIBLE_DEVICES.
  std::vector<int> cuda_ordinals;

  bool operator==(const DeviceSelection&) const = default;
};

// Bounds of the scheduler's queues: a request that would exceed one is
// answered RESOURCE_EXHAUSTED.
struct QueueLimits {
  int interactive = 1024; // Compile and LookupBest from people and ranks
  int ci = 256;           // Benchmark
  int tuning = 64;        // Tune sweeps
  // Bytes of the Benchmark and Tune requests waiting (64 waiting tunes of
  // up to 64 MiB each would hold 4 GiB).
  uint64_t max_bytes = uint64_t{512} << 20;
  bool operator==(const QueueLimits&) const = default;
};

// Sharing the queues between clients.
struct FairShareConfig {
  // How a request's client is identified.
  enum class ClientKey {
    kAuto,     // the bearer token's name when tokens are on, else the peer's address
    kPeer,     // the peer's IP address
    kMetadata, // the x-kiln-client request metadata (for trusted clients only)
  };
  bool enabled = true; // round-robin between clients within a priority
  ClientKey client_key = ClientKey::kAuto;
  // Queued jobs one client may have per priority; 0 = only the queue limit.
  int max_queued_per_client = 256;
  bool operator==(const FairShareConfig&) const = default;
};

// What kilnd keeps of finished jobs (server/job_manager.h): in memory, the
// newest `keep_finished` of them within `keep_finished_bytes`; in the
// cache's job table, the newest `keep_records` finished records (0: all).
// Older jobs are answered NOT_FOUND by GetJob and are not listed.
struct JobRetention {
  int64_t keep_finished = 10000;
  uint64_t keep_finished_bytes = uint64_t{64} << 20;
  int64_t keep_records = 100000;
  bool operator==(const JobRetention&) const = default;
};

// Supervision of the GPU worker processes.
struct WorkerTimeouts {
  absl::Duration start = absl::Seconds(30);  // spawn until the worker is ready
  absl::Duration request = absl::Minutes(5); // one measurement request, end to end
  // Deprecated, no effect (kept so that existing files load; a value other
  // than the default is warned about): workers send no heartbeat, and
  // `request` bounds a hung kernel or a stuck worker.
  absl::Duration hang = absl::Seconds(30);
  bool operator==(const WorkerTimeouts&) const = default;
};

struct TlsConfig {
  std::string cert_file;      // PEM server certificate chain; empty: no TLS
  std::string key_file;       // PEM private key of cert_file
  std::string client_ca_file; // PEM CA bundle; set: clients must present a cert it signed
  bool enabled() const { return !cert_file.empty(); }
  bool mutual() const { return !client_ca_file.empty(); }
  bool operator==(const TlsConfig&) const = default;
};

struct AuthConfig {
  // Bearer tokens accepted in "authorization: Bearer TOKEN" (server/token_file.h
  // describes the file). Empty: no token needed.
  std::string tokens_file;
  // Serve gRPC server reflection without a token (development).
  bool open_reflection = false;
  bool enabled() const { return !tokens_file.empty(); }
  bool operator==(const AuthConfig&) const = default;
};

struct LogConfig {
  util::LogFormat format = util::LogFormat::kText;
  util::LogLevel level = util::LogLevel::kInfo;
  std::string file; // empty: stderr
  bool operator==(const LogConfig&) const = default;
};

struct ServerConfig {
  // gRPC address: HOST:PORT (port 0 picks a free port, printed at start-up)
  // or unix:PATH.
  std::string listen_address = "127.0.0.1:7070";
  // HOST:PORT of the HTTP endpoint for /metrics and /healthz; empty: none.
  std::string metrics_listen_address;
  // Cache directory. LoadServerConfig always fills it in; a
  // default-constructed config leaves it empty (see ResolveCacheDir).
  std::string cache_dir;
  uint64_t cache_max_bytes = uint64_t{20} << 30; // LRU eviction bound; 0 = unbounded
  // Free bytes the cache's filesystem must keep: below it, compiles are
  // refused (RESOURCE_EXHAUSTED) before they build. 0: only a full disk.
  uint64_t cache_min_free_bytes = uint64_t{64} << 20;
  // Threads compiling at once. LoadServerConfig resolves 0 to the cores
  // available to the process (affinity mask and cgroup CPU quota).
  int compile_threads = 0;
  // NVRTC helper processes (server/nvrtc_helpers.h) the CUDA builds run in;
  // 0: one per compile thread; -1: none, builds run on kilnd's compile
  // threads (where they contend inside NVRTC).
  int compile_helpers = 0;
  // The frontend of compile requests (server/prepare_pool.h): its threads
  // (0: two) and the budget of one request's compile-time evaluation
  // (compiler/frontend/eval_budget.h); past it the request fails
  // RESOURCE_EXHAUSTED with the program's location.
  int prepare_threads = 0;
  int64_t eval_max_steps = 2'000'000;
  uint64_t eval_max_bytes = uint64_t{256} << 20;
  absl::Duration eval_max_time = absl::Seconds(10);
  QueueLimits max_queued;
  FairShareConfig fair_share;
  JobRetention jobs;
  WorkerTimeouts worker;
  // Run the micro-benchmarks (server/device_profiles.h) on a device model's
  // first roller tune; false: cached results or the presets only.
  bool microbench = true;
  // CPU-target workers: "cpu", "cpu:1", ... Above 1 each is pinned to its
  // own core, and a sweep for the CPU target measures on all of them.
  int cpu_workers = 1;
  // The kiln-worker binary kernels run in (one process per device); empty:
  // kiln-worker beside the running executable (see ResolveWorkerPath).
  std::string worker_path;
  // Largest gRPC message accepted or sent (artifacts are streamed in chunks).
  int64_t max_message_bytes = int64_t{64} << 20;
  // Most memory one request that carries a program (Compile, Benchmark,
  // Tune, LookupBest) may parse to, estimated from its bytes before the
  // parse (server/wire_scan.h).
  int64_t max_parsed_request_bytes = int64_t{256} << 20;
  // On SIGTERM: stop accepting, let running calls and jobs finish for this
  // long, then cancel the rest. Below Kubernetes' default 30 s grace period.
  absl::Duration grace_period = absl::Seconds(25);
  TlsConfig tls;
  AuthConfig auth;
  LogConfig log;
  DeviceSelection devices;

  bool operator==(const ServerConfig&) const = default;
};

// The cache directory to use for `config`: config.cache_dir, else
// $KILN_CACHE_DIR, else $HOME/.cache/kiln, else /tmp/kiln-cache.
std::string ResolveCacheDir(const ServerConfig& config);

// The kiln-worker binary to use: config.worker_path, else kiln-worker in the
// directory of the running executable (/proc/self/exe).
std::string ResolveWorkerPath(const ServerConfig& config);

// What the command line asked kilnd to do.
enum class ServerAction { kServe, kHelp, kVersion, kPrintConfig };

struct LoadedServerConfig {
  ServerConfig config;
  ServerAction action = ServerAction::kServe;
  // Option key -> where its value came from: "default", "FILE:LINE",
  // "env KILN_X", "flag --x".
  std::map<std::string, std::string> sources;
  // The YAML file read (from --config or KILN_CONFIG), or empty.
  std::string config_file;
  // Settings that are allowed but probably unwise (a non-loopback listen
  // address without TLS or tokens); kilnd logs them at start-up.
  std::vector<std::string> warnings;
};

// Builds the configuration from argv (argv[0] is the program), the
// environment and the YAML file named by --config or KILN_CONFIG, over the
// embedded defaults. Flags are --name=VALUE or --name VALUE (underscores in a
// name are accepted as dashes: --cache_dir); a boolean option also takes a
// bare --name. --help and --version return at once with that action;
// --print-config loads everything and returns kPrintConfig. An empty
// environment variable counts as unset. A leading "~/" in a path is $HOME.
//
// Errors (InvalidArgument, or NotFound for a missing file), each naming the
// source: an unknown flag or YAML key (with the closest known name), a flag
// without its value, a positional argument, a value that does not parse or
// is out of range ("kilnd.yaml:7: cache.max_size: ..."), a YAML syntax error
// (FILE:LINE:COLUMN), a duplicate YAML key, a TLS key without its
// certificate (or the reverse), and a TLS or token file that cannot be read.
absl::StatusOr<LoadedServerConfig> LoadServerConfig(int argc, const char* const* argv,
                                                    const std::map<std::string, std::string>& env);

// The process environment as a map, for LoadServerConfig.
std::map<std::string, std::string> ProcessEnvironment();

// `kilnd --help`: usage, precedence, and every option with its flag,
// variable, YAML key and default.
std::string ServerConfigHelp();

// `config` as a YAML file that LoadServerConfig reads back to the same
// config. With `sources`, each key gets a comment saying where its value
// came from.
std::string DumpConfigYaml(const ServerConfig& config,
                           const std::map<std::string, std::string>* sources = nullptr);

} // namespace kiln::server
