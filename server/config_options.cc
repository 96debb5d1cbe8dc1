#include "server/config_options.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "server/config_values.h"

namespace kiln::server {
namespace {

std::string S(std::string_view text) { return std::string(text); }

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// A string field through an accessor `field(config) -> std::string&` that
// works on const and non-const configs.
template <typename Field>
ConfigOption StringOption(std::string_view key, std::string_view value_name, std::string_view help,
                          Field field,
                          const std::function<absl::Status(std::string_view)>& validate = nullptr,
                          std::string_view default_text = {}) {
  ConfigOption option;
  option.key = key;
  option.value_name = value_name;
  option.help = help;
  option.default_text = default_text;
  option.parse = [field, validate](std::string_view text, ServerConfig& c) {
    if (validate) {
      if (absl::Status s = validate(text); !s.ok()) return s;
    }
    field(c) = S(text);
    return absl::OkStatus();
  };
  option.format = [field](const ServerConfig& c) { return S(field(c)); };
  return option;
}

template <typename Field>
ConfigOption IntOption(std::string_view key, std::string_view help, Field field, int64_t min,
                       int64_t max, std::string_view default_text = {}) {
  ConfigOption option;
  option.key = key;
  option.value_name = "N";
  option.help = help;
  option.default_text = default_text;
  option.parse = [field, min, max](std::string_view text, ServerConfig& c) {
    absl::StatusOr<int64_t> value = ParseConfigInteger(text, min, max);
    if (!value.ok()) return value.status();
    field(c) = static_cast<std::remove_reference_t<decltype(field(c))>>(*value);
    return absl::OkStatus();
  };
  option.format = [field](const ServerConfig& c) { return absl::StrCat(field(c)); };
  return option;
}

template <typename Field>
ConfigOption BoolOption(std::string_view key, std::string_view help, Field field) {
  ConfigOption option;
  option.key = key;
  option.value_name = "BOOL";
  option.help = help;
  option.is_bool = true;
  option.parse = [field](std::string_view text, ServerConfig& c) {
    absl::StatusOr<bool> value = ParseConfigBool(text);
    if (!value.ok()) return value.status();
    field(c) = *value;
    return absl::OkStatus();
  };
  option.format = [field](const ServerConfig& c) {
    return std::string(field(c) ? "true" : "false");
  };
  return option;
}

template <typename Field>
ConfigOption SizeOption(std::string_view key, std::string_view help, Field field, uint64_t min,
                        uint64_t max) {
  ConfigOption option;
  option.key = key;
  option.value_name = "SIZE";
  option.help = help;
  option.parse = [field, min, max](std::string_view text, ServerConfig& c) {
    absl::StatusOr<uint64_t> value = ParseByteSize(text);
    if (!value.ok()) return value.status();
    if (*value < min || *value > max) {
      return Invalid(absl::StrCat(S(text), " is out of range (", FormatByteSize(min), "..",
                                  FormatByteSize(max), ")"));
    }
    field(c) = static_cast<std::remove_reference_t<decltype(field(c))>>(*value);
    return absl::OkStatus();
  };
  option.format = [field](const ServerConfig& c) {
    return FormatByteSize(static_cast<uint64_t>(field(c)));
  };
  return option;
}

template <typename Field>
ConfigOption DurationOption(std::string_view key, std::string_view help, Field field,
                            absl::Duration min) {
  ConfigOption option;
  option.key = key;
  option.value_name = "DURATION";
  option.help = help;
  option.parse = [field, min](std::string_view text, ServerConfig& c) {
    absl::StatusOr<absl::Duration> value = ParseConfigDuration(text);
    if (!value.ok()) return value.status();
    if (*value < min) {
      return Invalid(absl::StrCat(S(text), " is below the minimum of ", absl::FormatDuration(min)));
    }
    field(c) = *value;
    return absl::OkStatus();
  };
  option.format = [field](const ServerConfig& c) { return absl::FormatDuration(field(c)); };
  return option;
}

template <typename Field, typename Parse, typename Format>
ConfigOption EnumOption(std::string_view key, std::string_view value_name, std::string_view help,
                        Field field, Parse parse, Format format) {
  ConfigOption option;
  option.key = key;
  option.value_name = value_name;
  option.help = help;
  option.parse = [field, parse](std::string_view text, ServerConfig& c) {
    auto value = parse(text);
    if (!value.ok()) return value.status();
    field(c) = *value;
    return absl::OkStatus();
  };
  option.format = [field, format](const ServerConfig& c) { return S(format(field(c))); };
  return option;
}

absl::Status NotEmpty(std::string_view text) {
  if (text.empty()) return Invalid("must not be empty");
  return absl::OkStatus();
}

std::vector<ConfigOption> BuildOptions() {
  std::vector<ConfigOption> o;
  // Options without a section come first; each section's options are
  // contiguous (DumpConfigYaml writes a section once).
  o.push_back(StringOption(
      "listen", "HOST:PORT",
      "gRPC address to serve on. Port 0 picks a free port (printed at start-up); unix:PATH serves "
      "on a Unix socket. Another machine can only reach a non-loopback address: then turn on TLS "
      "or tokens.",
      [](auto& c) -> auto& { return c.listen_address; },
      [](std::string_view t) { return ValidateListenAddress(t, /*allow_unix=*/true); }));
  o.push_back(SizeOption(
      "max_message_size",
      "Largest gRPC message received or sent (artifacts are streamed in chunks below it).",
      [](auto& c) -> auto& { return c.max_message_bytes; }, uint64_t{1} << 10,
      (uint64_t{1} << 31) - 1));
  o.push_back(SizeOption(
      "max_parsed_request_size",
      "Most memory a request that carries a program (Compile, Benchmark, Tune, LookupBest) may "
      "take once parsed, estimated from its bytes before parsing: a message of many empty "
      "sub-messages parses to some 50 times its size. Past it: RESOURCE_EXHAUSTED.",
      [](auto& c) -> auto& { return c.max_parsed_request_bytes; }, uint64_t{1} << 20,
      uint64_t{1} << 40));
  o.push_back(DurationOption(
      "grace_period",
      "On SIGTERM: stop accepting, give running calls and jobs this long "
      "to finish, then cancel the rest (0: cancel at once).",
      [](auto& c) -> auto& { return c.grace_period; }, absl::ZeroDuration()));
  o.push_back(EnumOption(
      "devices", "auto|none|LIST",
      "GPUs to start a worker for: auto (every GPU the driver reports), none (compile only), or "
      "CUDA ordinals as numbered after CUDA_VISIBLE_DEVICES (0,1). In YAML also a list: [0, 1].",
      [](auto& c) -> auto& { return c.devices; }, ParseDevices, FormatDevices));

  o.push_back(StringOption(
      "metrics.listen", "HOST:PORT",
      "HTTP address for Prometheus /metrics and the /healthz probe. Port 0 picks a free port "
      "(printed at start-up). Empty: no HTTP endpoint.",
      [](auto& c) -> auto& { return c.metrics_listen_address; },
      [](std::string_view t) {
        return t.empty() ? absl::OkStatus() : ValidateListenAddress(t, /*allow_unix=*/false);
      },
      "\"\" (off)"));

  o.push_back(StringOption(
      "cache.dir", "DIR",
      "Cache directory (blobs and the SQLite index); daemons and CLIs on one host may share it.",
      [](auto& c) -> auto& { return c.cache_dir; }, NotEmpty, "~/.cache/kiln"));
  o.push_back(SizeOption(
      "cache.max_size",
      "Size bound of the cache: past it the least recently used entries are "
      "evicted (best configs never are). 0: unbounded.",
      [](auto& c) -> auto& { return c.cache_max_bytes; }, 0, std::numeric_limits<uint64_t>::max()));
  o.push_back(SizeOption(
      "cache.min_free",
      "Free space the cache's filesystem must keep: below it, a compile that would store an "
      "artifact is refused with RESOURCE_EXHAUSTED before it builds (hits are still served). "
      "0: only a full disk.",
      [](auto& c) -> auto& { return c.cache_min_free_bytes; }, 0,
      std::numeric_limits<uint64_t>::max()));

  o.push_back(IntOption(
      "compile.threads",
      "Programs compiled at once. 0: one per core available to the process "
      "(CPU affinity and cgroup quota).",
      [](auto& c) -> auto& { return c.compile_threads; }, 0, 4096, "0 (one per core)"));
  o.push_back(IntOption(
      "compile.helpers",
      "Processes (kiln-worker --compile) that CUDA builds run in with NVRTC (builds "
      "on threads of one process contend inside NVRTC). 0: one per compile thread; "
      "-1: none, builds run on kilnd's compile threads.",
      [](auto& c) -> auto& { return c.compile_helpers; }, -1, 4096, "0 (one per compile thread)"));
  o.push_back(IntOption(
      "compile.prepare_threads",
      "Threads that run the frontend of compile requests (parse and compile-time evaluation of "
      "the program), off the gRPC threads. 0: two.",
      [](auto& c) -> auto& { return c.prepare_threads; }, 0, 4096, "0 (two)"));
  o.push_back(IntOption(
      "compile.eval_max_steps",
      "Budget of one program's compile-time evaluation, in steps (statements, loop iterations, "
      "items compared or copied); past it the request fails RESOURCE_EXHAUSTED.",
      [](auto& c) -> auto& { return c.eval_max_steps; }, 1000, int64_t{1} << 50));
  o.push_back(SizeOption(
      "compile.eval_max_memory",
      "Budget of one program's compile-time evaluation, in bytes of values allocated in all; "
      "past it the request fails RESOURCE_EXHAUSTED.",
      [](auto& c) -> auto& { return c.eval_max_bytes; }, uint64_t{1} << 20, uint64_t{1} << 50));
  o.push_back(DurationOption(
      "compile.eval_max_time",
      "Budget of one program's compile-time evaluation, in wall time (the request's own deadline "
      "applies too); past it the request fails RESOURCE_EXHAUSTED.",
      [](auto& c) -> auto& { return c.eval_max_time; }, absl::Milliseconds(10)));

  o.push_back(IntOption(
      "queue.max_interactive",
      "Interactive jobs (Compile, LookupBest) that may wait; one more is "
      "refused with RESOURCE_EXHAUSTED.",
      [](auto& c) -> auto& { return c.max_queued.interactive; }, 1, 1000000));
  o.push_back(IntOption(
      "queue.max_ci", "CI jobs (Benchmark) that may wait.",
      [](auto& c) -> auto& { return c.max_queued.ci; }, 1, 1000000));
  o.push_back(IntOption(
      "queue.max_tuning", "Tuning jobs (Tune) that may wait.",
      [](auto& c) -> auto& { return c.max_queued.tuning; }, 1, 1000000));
  o.push_back(SizeOption(
      "queue.max_bytes",
      "Bytes of the Benchmark and Tune requests that may wait; one more is refused with "
      "RESOURCE_EXHAUSTED (a single request larger than this is still taken when nothing "
      "waits).",
      [](auto& c) -> auto& { return c.max_queued.max_bytes; }, uint64_t{1} << 20,
      uint64_t{1} << 50));

  o.push_back(IntOption(
      "jobs.keep_finished",
      "Finished jobs kept in memory (GetJob, WatchJob, ListJobs answer older ones from the "
      "cache's job table).",
      [](auto& c) -> auto& { return c.jobs.keep_finished; }, 1, 10000000));
  o.push_back(SizeOption(
      "jobs.keep_finished_bytes",
      "Bytes of finished jobs (records, tune progress, results) kept in memory; past it the "
      "oldest go first, as past jobs.keep_finished.",
      [](auto& c) -> auto& { return c.jobs.keep_finished_bytes; }, uint64_t{1} << 20,
      uint64_t{1} << 50));
  o.push_back(IntOption(
      "jobs.keep_records",
      "Finished job records kept in the cache's job table (the newest; older ones are "
      "deleted and GetJob answers NOT_FOUND for them). 0: all, the table grows with every job.",
      [](auto& c) -> auto& { return c.jobs.keep_records; }, 0, int64_t{1} << 40));

  o.push_back(BoolOption(
      "fair_share.enabled",
      "Serve the clients of one priority in turn, so that one client's burst "
      "does not starve the others.",
      [](auto& c) -> auto& { return c.fair_share.enabled; }));
  o.push_back(EnumOption(
      "fair_share.client_key", "auto|peer|metadata",
      "What tells clients apart: auto (the token's client name with tokens on, else the peer "
      "address), peer (the peer's IP address), metadata (the x-kiln-client request metadata; "
      "trusted clients only).",
      [](auto& c) -> auto& { return c.fair_share.client_key; }, ParseClientKey, FormatClientKey));
  o.push_back(IntOption(
      "fair_share.max_queued_per_client",
      "Jobs one client may have waiting per priority. 0: only the queue bounds.",
      [](auto& c) -> auto& { return c.fair_share.max_queued_per_client; }, 0, 1000000));

  o.push_back(StringOption(
      "worker.path", "FILE",
      "The GPU worker binary: kernels run in one kiln-worker process per device, never in kilnd.",
      [](auto& c) -> auto& { return c.worker_path; }, nullptr, "\"\" (kiln-worker beside kilnd)"));
  o.push_back(DurationOption(
      "worker.start_timeout",
      "Time a GPU worker has from spawn to ready before it is killed and "
      "restarted.",
      [](auto& c) -> auto& { return c.worker.start; }, absl::Milliseconds(1)));
  o.push_back(DurationOption(
      "worker.request_timeout",
      "Time one measurement may take before the worker is killed and the "
      "job fails.",
      [](auto& c) -> auto& { return c.worker.request; }, absl::Milliseconds(1)));
  o.push_back(DurationOption(
      "worker.hang_timeout",
      "Deprecated; has no effect (workers send no heartbeat): worker.request_timeout bounds a "
      "hung kernel or a stuck worker. Kept so that existing files load.",
      [](auto& c) -> auto& { return c.worker.hang; }, absl::Milliseconds(1)));
  o.push_back(BoolOption(
      "worker.microbench",
      "Measure a device model's DRAM and L2 bandwidth and mma.sync throughput with Kiln's "
      "micro-benchmarks on its first roller tune (kept in the cache per model, driver and Kiln "
      "version). false: only results already in the cache, else the presets' figures.",
      [](auto& c) -> auto& { return c.microbench; }));
  o.push_back(IntOption(
      "worker.cpu_workers",
      "Workers that run CPU-target kernels: devices cpu, cpu:1, ... Above 1, each is pinned to "
      "its own core of kilnd's CPU affinity set, and a CPU-target sweep measures on all of them "
      "at once (keep them off the cores the compile threads need for steady timings).",
      [](auto& c) -> auto& { return c.cpu_workers; }, 1, 1024));

  o.push_back(StringOption(
      "tls.cert_file", "FILE",
      "PEM certificate chain of the server; set with tls.key_file to serve "
      "gRPC over TLS. Empty: plaintext.",
      [](auto& c) -> auto& { return c.tls.cert_file; }));
  o.push_back(StringOption(
      "tls.key_file", "FILE", "PEM private key of tls.cert_file.",
      [](auto& c) -> auto& { return c.tls.key_file; }));
  o.push_back(StringOption(
      "tls.client_ca_file", "FILE",
      "PEM CA certificates; when set, every client must present a "
      "certificate they signed (mutual TLS).",
      [](auto& c) -> auto& { return c.tls.client_ca_file; }));

  o.push_back(StringOption(
      "auth.tokens_file", "FILE",
      "Bearer tokens, one per line as TOKEN [CLIENT_NAME] [role=read|compile|tune|admin] "
      "(default role tune: all but other clients' jobs); when set, every call needs "
      "\"authorization: Bearer TOKEN\". Empty: no tokens.",
      [](auto& c) -> auto& { return c.auth.tokens_file; }));
  o.push_back(BoolOption(
      "auth.open_reflection",
      "Serve gRPC server reflection (grpcurl's list/describe) without a token. false: with "
      "auth.tokens_file set, reflection needs a token like every other call (UNAUTHENTICATED "
      "without one).",
      [](auto& c) -> auto& { return c.auth.open_reflection; }));

  o.push_back(EnumOption(
      "log.format", "text|json", "Log lines as text, or one JSON object per line.",
      [](auto& c) -> auto& { return c.log.format; }, util::ParseLogFormat, util::LogFormatName));
  o.push_back(EnumOption(
      "log.level", "debug|info|warn|error", "Least severe level logged.",
      [](auto& c) -> auto& { return c.log.level; }, util::ParseLogLevel, util::LogLevelName));
  o.push_back(StringOption(
      "log.file", "FILE", "Append the log to FILE. Empty: stderr.",
      [](auto& c) -> auto& { return c.log.file; }));
  return o;
}

} // namespace

std::string ConfigOption::flag() const {
  std::string name = absl::StrCat("--", S(key));
  std::replace(name.begin(), name.end(), '.', '-');
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

std::string ConfigOption::env() const {
  std::string name = absl::StrCat("KILN_", absl::AsciiStrToUpper(S(key)));
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

const std::vector<ConfigOption>& ServerConfigOptions() {
  static const auto* options = new std::vector<ConfigOption>(BuildOptions());
  return *options;
}

} // namespace kiln::server
