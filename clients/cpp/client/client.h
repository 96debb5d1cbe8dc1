// libkiln_client: a C++ client of kilnd (proto/kiln/v1/service.proto,
// docs/api.md, docs/client.md).
//
//   kiln::client::ClientOptions o;
//   o.address = "kiln.internal:7070";
//   o.cache_dir = "/var/tmp/kiln-client";   // optional, see below
//   auto client = kiln::client::Client::Create(o);
//   kiln::v1::CompileRequest req = ...;      // LoadProgram + ParseBinding help
//   absl::StatusOr<CompileResult> c = (*client)->Compile(req);
//   absl::StatusOr<std::string> cubin =
//       (*client)->FetchFile(c->key, kiln::v1::ARTIFACT_KIND_CUBIN);
//
// Calls and errors. Every call returns absl::Status(Or); a gRPC status maps
// to the absl code of the same number with the server's message unchanged
// (a bad program's "file:line:col: message" included).
//
// Deadlines. `deadline` bounds one call of this class as a whole, retries
// and backoff included (streams too: Tune and WatchJob get `stream_deadline`).
//
// Retries. On UNAVAILABLE (the daemon is down, restarting, draining or not
// yet listening) a call that is safe to repeat is tried again, up to
// `retry.max_attempts` attempts in all, after a backoff of
// initial_backoff * multiplier^(attempt-1), capped at max_backoff, with a
// random jitter of +-`jitter` of it. Safe to repeat: Compile (idempotent by
// key: a repeat is a hit or joins the running compile), GetArtifact (a
// stream restarted from its first chunk), LookupBest, GetJob, WatchJob,
// CancelJob, ListJobs, ListDevices, ListMeasurements, GetVersion,
// CacheStats, and Tune before its first event (an identical request joins
// the sweep). Never repeated: Benchmark (each call records a run in the
// history), a CacheStats that zeroes the counters, and a Tune stream that
// already delivered an event (it re-attaches by job id instead).
//
// Security. `tls` turns on TLS with `tls_root_certs_file` (PEM CA bundle;
// empty: the system roots) and, for daemons that ask for client
// certificates (kilnd --tls-client-ca-file), `tls_cert_file` +
// `tls_key_file`. `token` is sent as "authorization: Bearer TOKEN" (kilnd
// --auth-tokens-file). `client_name` goes in "x-kiln-client" (fair share on
// trusted networks).
//
// Local read-through cache (`cache_dir`, empty: off). Artifacts are
// addressed by their cache key, and a key's files never change (the key
// hashes the program, target, options and toolchain), so they are kept on
// the node's disk and served from it without the network: DIR/artifacts/
// <key>/metadata.pb and one file per kind, written to a temporary file,
// fsynced and renamed into place; every read is checked against the SHA-256
// the metadata records, and a damaged or missing file is fetched again. For
// Compile the key is what the server decides; a memo DIR/compile/<sha256 of
// (address, the request's deterministic bytes)> remembers the answer, and a
// repeated identical request is answered locally (CacheState::kLocal) while
// its memo entry is younger than `compile_memo_ttl` and the artifact's
// metadata is in the local cache. Staleness: a daemon upgraded to a new
// toolchain gives new keys, which a memo entry learns only after its TTL; a
// request with use_best_for_device (the server's best store can change) or
// async is never memoized; compile_memo_ttl = 0 sends every Compile to the
// server (artifacts still come from the disk). Several processes may share
// one directory.
//
// Thread-safe: one Client may be used from many threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kiln/v1/service.pb.h"

namespace kiln::client {

struct RetryPolicy {
  int max_attempts = 5; // 1: no retry
  std::chrono::milliseconds initial_backoff{100};
  double multiplier = 2.0;
  std::chrono::milliseconds max_backoff{5000};
  double jitter = 0.2; // fraction of each backoff, uniformly +-
};

struct ClientOptions {
  std::string address = "127.0.0.1:7070";
  std::chrono::milliseconds deadline{600'000};          // per call, retries included
  std::chrono::milliseconds stream_deadline{3'600'000}; // Tune, WatchJob
  RetryPolicy retry;
  bool tls = false;
  std::string tls_root_certs_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_server_name; // overrides the name checked in the certificate
  std::string token;
  std::string client_name;
  std::string cache_dir;
  std::chrono::seconds compile_memo_ttl{600};
  int64_t max_message_bytes = 64 << 20;
};

// The address, token and TLS settings from the environment: KILN_SERVER,
// KILN_TOKEN, KILN_TLS_CA (implies tls), KILN_TLS_CERT, KILN_TLS_KEY,
// KILN_CLIENT_CACHE. Unset variables leave `base` as it is.
ClientOptions OptionsFromEnvironment(ClientOptions base = {});

enum class CacheState { kUnknown, kHit, kMiss, kJoined, kLocal };
const char* CacheStateName(CacheState s); // "hit", "miss", "joined", "local"

struct CompileResult {
  std::string key;
  CacheState cache = CacheState::kUnknown;
  double compile_ms = 0; // the build's own time (also on a hit)
  double server_ms = 0;  // time inside the daemon (0 for kLocal)
  std::string job_id;
  kiln::v1::ArtifactMetadata metadata;
  std::vector<kiln::v1::Diagnostic> diagnostics; // warnings
};

struct Artifact {
  kiln::v1::ArtifactMetadata metadata;
  std::map<kiln::v1::ArtifactKind, std::string> files; // the requested kinds
  bool from_local_cache = false;                       // no byte came over the network
};

struct TuneOutcome {
  std::string job_id;
  kiln::v1::TuneResult result;
};

// Called for every progress event of a Tune stream, on the calling thread.
using TuneProgressFn =
    std::function<void(const std::string& job_id, const kiln::v1::TuneProgress& progress)>;
// Called for every job snapshot of WatchJob.
using JobFn = std::function<void(const kiln::v1::Job& job)>;

// What the client did (tests, logs).
struct ClientStats {
  int64_t attempts = 0; // RPC attempts started
  int64_t retries = 0;  // attempts after an UNAVAILABLE
  int64_t local_artifact_hits = 0;
  int64_t local_compile_hits = 0;
  int64_t corrupt_local_files = 0; // found damaged and fetched again
};

class Client {
 public:
  // InvalidArgument for a bad address, NotFound for unreadable TLS files.
  static absl::StatusOr<std::unique_ptr<Client>> Create(const ClientOptions& options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  absl::StatusOr<CompileResult> Compile(const kiln::v1::CompileRequest& request);
  // The artifact's metadata and the files of `kinds` (empty: every file).
  // Each file is checked against the metadata's SHA-256 (DataLoss when a
  // file from the server does not match).
  absl::StatusOr<Artifact> FetchArtifact(const std::string& key,
                                         const std::vector<kiln::v1::ArtifactKind>& kinds = {});
  absl::StatusOr<std::string> FetchFile(const std::string& key, kiln::v1::ArtifactKind kind);
  absl::StatusOr<TuneOutcome> Tune(const kiln::v1::TuneRequest& request,
                                   const TuneProgressFn& progress = nullptr);
  absl::StatusOr<kiln::v1::LookupBestResponse>
  LookupBest(const kiln::v1::LookupBestRequest& request);
  absl::StatusOr<kiln::v1::BenchmarkResponse> Benchmark(const kiln::v1::BenchmarkRequest& request);
  absl::StatusOr<kiln::v1::Job> GetJob(const std::string& job_id);
  // Streams snapshots until the job ends; returns the last one.
  absl::StatusOr<kiln::v1::Job> WatchJob(const std::string& job_id,
                                         const JobFn& on_update = nullptr);
  absl::StatusOr<kiln::v1::Job> CancelJob(const std::string& job_id);
  absl::StatusOr<std::vector<kiln::v1::Job>> ListJobs(int limit = 50);
  absl::StatusOr<std::vector<kiln::v1::Device>> ListDevices();
  absl::StatusOr<kiln::v1::ListMeasurementsResponse>
  ListMeasurements(const kiln::v1::ListMeasurementsRequest& request);
  absl::StatusOr<kiln::v1::GetVersionResponse> GetVersion();
  absl::StatusOr<kiln::v1::CacheStatsResponse>
  CacheStats(const kiln::v1::CacheStatsRequest& request = {});

  const ClientOptions& options() const;
  ClientStats stats() const;

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A value as written on a command line: 128 -> int, 1e-5 -> float,
// True/false -> bool, [64, 128] or (1, 2) -> a list or tuple of ints,
// anything else (float16) -> string.
kiln::v1::BindingValue ParseBinding(const std::string& text);
// Reads a program file: textual IR when it starts with `program ` (after
// blank space), else TileLang source; file_name is `path`. NotFound when
// it cannot be read.
absl::StatusOr<kiln::v1::ProgramSource> LoadProgram(const std::string& path);

} // namespace kiln::client
