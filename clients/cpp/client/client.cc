#include "clients/cpp/client/client.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "clients/cpp/client/local_cache.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "kiln/v1/service.grpc.pb.h"
#include "util/file_path.h"
#include "util/sha256.h"

namespace kiln::client {
namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::Status ToAbsl(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read the TLS ", what, " '", path, "'"));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string DeterministicBytes(const google::protobuf::Message& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream sos(&out);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&cos);
  }
  return out;
}

CacheState StateOf(kiln::v1::CacheOutcome o) {
  switch (o) {
  case kiln::v1::CACHE_OUTCOME_HIT:
    return CacheState::kHit;
  case kiln::v1::CACHE_OUTCOME_MISS:
    return CacheState::kMiss;
  case kiln::v1::CACHE_OUTCOME_JOINED:
    return CacheState::kJoined;
  default:
    return CacheState::kUnknown;
  }
}

const char* Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

} // namespace

const char* CacheStateName(CacheState s) {
  switch (s) {
  case CacheState::kHit:
    return "hit";
  case CacheState::kMiss:
    return "miss";
  case CacheState::kJoined:
    return "joined";
  case CacheState::kLocal:
    return "local";
  default:
    return "unknown";
  }
}

ClientOptions OptionsFromEnvironment(ClientOptions base) {
  if (const char* v = Getenv("KILN_SERVER")) base.address = v;
  if (const char* v = Getenv("KILN_TOKEN")) base.token = v;
  if (const char* v = Getenv("KILN_TLS_CA")) {
    base.tls = true;
    base.tls_root_certs_file = v;
  }
  if (const char* v = Getenv("KILN_TLS_CERT")) base.tls_cert_file = v;
  if (const char* v = Getenv("KILN_TLS_KEY")) base.tls_key_file = v;
  if (const char* v = Getenv("KILN_CLIENT_CACHE")) base.cache_dir = v;
  return base;
}

namespace {

// "[64, 128]" / "(1, 2)" / "[]" / "(3,)": a list (tuple) of ints, as the
// frontend's --bind reads it; anything else: false.
bool ParseIntList(absl::string_view text, kiln::v1::IntList* out) {
  text = absl::StripAsciiWhitespace(text);
  if (text.size() < 2) return false;
  const bool tuple = text.front() == '(';
  if (!((text.front() == '[' && text.back() == ']') || (tuple && text.back() == ')'))) return false;
  absl::string_view body = absl::StripAsciiWhitespace(text.substr(1, text.size() - 2));
  out->set_tuple(tuple);
  if (body.empty()) return true;
  std::vector<absl::string_view> items = absl::StrSplit(body, ',');
  // Python allows one trailing comma, and a one-item tuple needs it.
  const bool trailing = absl::StripAsciiWhitespace(items.back()).empty();
  if (trailing) items.pop_back();
  if (tuple && items.size() == 1 && !trailing) return false;
  for (absl::string_view item : items) {
    int64_t x = 0;
    if (!absl::SimpleAtoi(item, &x)) return false;
    out->add_values(x);
  }
  return true;
}

} // namespace

kiln::v1::BindingValue ParseBinding(const std::string& text) {
  kiln::v1::BindingValue v;
  int64_t i = 0;
  double d = 0;
  kiln::v1::IntList list;
  if (ParseIntList(text, &list)) {
    *v.mutable_int_list() = std::move(list);
  } else if (absl::SimpleAtoi(text, &i)) {
    v.set_int_value(i);
  } else if (text == "True" || text == "true" || text == "False" || text == "false") {
    v.set_bool_value(text[0] == 'T' || text[0] == 't');
  } else if (absl::SimpleAtod(text, &d) && text.find_first_of("0123456789") != std::string::npos) {
    v.set_float_value(d);
  } else {
    v.set_string_value(text);
  }
  return v;
}

absl::StatusOr<kiln::v1::ProgramSource> LoadProgram(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  kiln::v1::ProgramSource p;
  const size_t first = source.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && source.compare(first, 8, "program ") == 0) {
    p.set_ir_text(std::move(source));
  } else {
    p.set_tilelang_source(std::move(source));
  }
  p.set_file_name(path);
  return p;
}

// --- Impl ------------------------------------------------------------------------

struct Client::Impl {
  ClientOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<kiln::v1::Kiln::Stub> stub;
  std::optional<LocalCache> cache;

  std::atomic<int64_t> attempts{0}, retries{0}, local_artifact_hits{0}, local_compile_hits{0},
      corrupt_local_files{0};
  std::mutex rng_mu;
  std::mt19937_64 rng{std::random_device{}()};

  void Prepare(grpc::ClientContext* ctx, SteadyClock::time_point deadline) const {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(
                          deadline - SteadyClock::now()));
    if (!options.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options.token);
    if (!options.client_name.empty()) ctx->AddMetadata("x-kiln-client", options.client_name);
  }

  // The sleep before attempt `attempt` + 1 (attempt >= 1).
  std::chrono::milliseconds Backoff(int attempt) {
    const RetryPolicy& r = options.retry;
    double ms = static_cast<double>(r.initial_backoff.count());
    for (int i = 1; i < attempt; ++i) ms *= r.multiplier;
    ms = std::min(ms, static_cast<double>(r.max_backoff.count()));
    double factor = 1;
    if (r.jitter > 0) {
      std::lock_guard<std::mutex> lock(rng_mu);
      factor = std::uniform_real_distribution<double>(1 - r.jitter, 1 + r.jitter)(rng);
    }
    return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, ms * factor)));
  }

  // Runs `attempt(ctx)` with a fresh context until it succeeds, fails with
  // something other than UNAVAILABLE, `retryable()` says no, the attempts
  // are spent or the deadline passes.
  template <typename Attempt, typename Retryable>
  grpc::Status Call(std::chrono::milliseconds budget, const Attempt& attempt,
                    const Retryable& retryable) {
    const SteadyClock::time_point deadline = SteadyClock::now() + budget;
    const int max_attempts = std::max(1, options.retry.max_attempts);
    for (int n = 1;; ++n) {
      grpc::ClientContext ctx;
      Prepare(&ctx, deadline);
      attempts.fetch_add(1, std::memory_order_relaxed);
      grpc::Status s = attempt(&ctx);
      if (s.error_code() != grpc::StatusCode::UNAVAILABLE || n >= max_attempts || !retryable()) {
        return s;
      }
      const std::chrono::milliseconds wait = Backoff(n);
      if (SteadyClock::now() + wait >= deadline) return s;
      std::this_thread::sleep_for(wait);
      retries.fetch_add(1, std::memory_order_relaxed);
    }
  }
  template <typename Attempt>
  grpc::Status Idempotent(const Attempt& attempt) {
    return Call(options.deadline, attempt, [] { return true; });
  }

  // Every file of `metadata` is in the local cache with its size.
  bool HasAllFilesLocally(const kiln::v1::ArtifactMetadata& metadata) const {
    for (const kiln::v1::ArtifactFile& f : metadata.files()) {
      std::error_code ec;
      const std::string path =
          absl::StrCat(cache->dir(), "/artifacts/", metadata.key(), "/", KindFileName(f.kind()));
      const auto size = std::filesystem::file_size(path, ec);
      if (ec || static_cast<int64_t>(size) != f.size_bytes()) return false;
    }
    return true;
  }

  absl::StatusOr<Artifact> FetchFromServer(const std::string& key,
                                           const std::vector<kiln::v1::ArtifactKind>& kinds);
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

const ClientOptions& Client::options() const { return impl_->options; }

ClientStats Client::stats() const {
  ClientStats s;
  s.attempts = impl_->attempts.load();
  s.retries = impl_->retries.load();
  s.local_artifact_hits = impl_->local_artifact_hits.load();
  s.local_compile_hits = impl_->local_compile_hits.load();
  s.corrupt_local_files = impl_->corrupt_local_files.load();
  return s;
}

absl::StatusOr<std::unique_ptr<Client>> Client::Create(const ClientOptions& options) {
  if (options.address.empty()) return absl::InvalidArgumentError("the server address is empty");
  if (options.deadline.count() <= 0 || options.stream_deadline.count() <= 0) {
    return absl::InvalidArgumentError("deadlines must be positive");
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "a TLS client certificate needs both the certificate and its key");
  }
  if (!options.tls && (!options.tls_root_certs_file.empty() || !options.tls_cert_file.empty())) {
    return absl::InvalidArgumentError("TLS files are given but TLS is off");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  std::shared_ptr<grpc::ChannelCredentials> creds;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  // Reconnect promptly, so that a retry after UNAVAILABLE finds a daemon
  // that came back instead of waiting out gRPC's own (1 s, x1.6) backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(std::max<int64_t>(100, options.retry.max_backoff.count())));
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_root_certs_file.empty()) {
      absl::StatusOr<std::string> roots =
          ReadPemFile(options.tls_root_certs_file, "root certificates");
      if (!roots.ok()) return roots.status();
      ssl.pem_root_certs = *roots;
    }
    if (!options.tls_cert_file.empty()) {
      absl::StatusOr<std::string> cert = ReadPemFile(options.tls_cert_file, "certificate");
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = ReadPemFile(options.tls_key_file, "key");
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    creds = grpc::SslCredentials(ssl);
    if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  impl->channel = grpc::CreateCustomChannel(options.address, creds, args);
  impl->stub = kiln::v1::Kiln::NewStub(impl->channel);
  if (!options.cache_dir.empty()) {
    if (absl::Status s = util::EnsureDirectory(options.cache_dir); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("the local cache: ", s.message()));
    }
    impl->cache.emplace(options.cache_dir);
  }
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

// --- Compile ---------------------------------------------------------------------

absl::StatusOr<CompileResult> Client::Compile(const kiln::v1::CompileRequest& request) {
  Impl& d = *impl_;
  std::string memo_id;
  if (d.cache && d.options.compile_memo_ttl.count() > 0 && request.use_best_for_device().empty() &&
      !request.async()) {
    util::Sha256 h;
    h.UpdateField(d.options.address);
    h.UpdateField(DeterministicBytes(request));
    memo_id = h.FinishHex();
    if (std::optional<std::string> key =
            d.cache->GetCompileKey(memo_id, d.options.compile_memo_ttl, NowUnixMs())) {
      kiln::v1::ArtifactMetadata m;
      if (d.cache->GetMetadata(*key, &m) == LocalCache::Read::kOk && d.HasAllFilesLocally(m)) {
        d.local_compile_hits.fetch_add(1, std::memory_order_relaxed);
        CompileResult r;
        r.key = *key;
        r.cache = CacheState::kLocal;
        r.compile_ms = m.compile_seconds() * 1000;
        r.metadata = std::move(m);
        return r;
      }
    }
  }
  kiln::v1::CompileResponse resp;
  grpc::Status s = d.Idempotent([&](grpc::ClientContext* ctx) {
    resp.Clear();
    return d.stub->Compile(ctx, request, &resp);
  });
  if (!s.ok()) return ToAbsl(s);
  CompileResult r;
  r.key = resp.artifact().key();
  r.cache = StateOf(resp.outcome());
  r.compile_ms = resp.artifact().compile_seconds() * 1000;
  r.server_ms = resp.server_seconds() * 1000;
  r.job_id = resp.job_id();
  r.diagnostics.assign(resp.diagnostics().begin(), resp.diagnostics().end());
  r.metadata = resp.artifact();
  if (d.cache && IsCacheKey(r.key)) {
    // Best effort: a full disk costs the next run a round trip, nothing else.
    if (d.cache->PutMetadata(r.metadata).ok() && !memo_id.empty()) {
      (void)d.cache->PutCompileKey(memo_id, r.key, NowUnixMs());
    }
  }
  return r;
}

// --- GetArtifact -----------------------------------------------------------------

absl::StatusOr<Artifact>
Client::Impl::FetchFromServer(const std::string& key,
                              const std::vector<kiln::v1::ArtifactKind>& kinds) {
  Artifact a;
  grpc::Status s = Idempotent([&](grpc::ClientContext* ctx) {
    a = Artifact{};
    kiln::v1::GetArtifactRequest req;
    req.set_key(key);
    for (kiln::v1::ArtifactKind k : kinds) req.add_kinds(k);
    std::unique_ptr<grpc::ClientReader<kiln::v1::ArtifactChunk>> reader =
        stub->GetArtifact(ctx, req);
    kiln::v1::ArtifactChunk chunk;
    bool first = true;
    while (reader->Read(&chunk)) {
      if (first) {
        a.metadata = chunk.metadata();
        first = false;
      }
      if (chunk.kind() == kiln::v1::ARTIFACT_KIND_UNSPECIFIED) continue;
      std::string& bytes = a.files[chunk.kind()];
      if (chunk.offset() != static_cast<int64_t>(bytes.size())) {
        ctx->TryCancel();
        (void)reader->Finish();
        return grpc::Status(grpc::StatusCode::DATA_LOSS,
                            absl::StrCat("artifact ", key, ": a chunk at offset ", chunk.offset(),
                                         " after ", bytes.size(), " bytes"));
      }
      bytes += chunk.data();
    }
    return reader->Finish();
  });
  if (!s.ok()) return ToAbsl(s);
  if (a.metadata.key() != key) {
    return absl::DataLossError(absl::StrCat("artifact ", key, ": the server sent the metadata of '",
                                            a.metadata.key(), "'"));
  }
  for (const auto& [kind, bytes] : a.files) {
    const kiln::v1::ArtifactFile* listed = nullptr;
    for (const kiln::v1::ArtifactFile& f : a.metadata.files()) {
      if (f.kind() == kind) listed = &f;
    }
    if (listed != nullptr && !listed->blob_digest().empty() &&
        util::Sha256Hex(bytes) != listed->blob_digest()) {
      return absl::DataLossError(absl::StrCat("artifact ", key, ": the ", KindFileName(kind),
                                              " does not match its SHA-256"));
    }
  }
  return a;
}

absl::StatusOr<Artifact> Client::FetchArtifact(const std::string& key,
                                               const std::vector<kiln::v1::ArtifactKind>& kinds) {
  Impl& d = *impl_;
  if (!IsCacheKey(key)) {
    return absl::InvalidArgumentError(
        absl::StrCat("an artifact key is 64 lowercase hex digits, not '", key, "'"));
  }
  if (!d.cache) return d.FetchFromServer(key, kinds);

  Artifact local;
  std::vector<kiln::v1::ArtifactKind> wanted = kinds;
  const LocalCache::Read meta = d.cache->GetMetadata(key, &local.metadata);
  if (meta == LocalCache::Read::kCorrupt) d.corrupt_local_files.fetch_add(1);
  if (meta == LocalCache::Read::kOk) {
    if (wanted.empty()) {
      for (const kiln::v1::ArtifactFile& f : local.metadata.files()) wanted.push_back(f.kind());
    }
    bool complete = true;
    for (kiln::v1::ArtifactKind k : wanted) {
      std::string bytes;
      const LocalCache::Read r = d.cache->GetFile(local.metadata, k, &bytes);
      if (r == LocalCache::Read::kCorrupt) d.corrupt_local_files.fetch_add(1);
      if (r != LocalCache::Read::kOk) {
        complete = false;
        break;
      }
      local.files[k] = std::move(bytes);
    }
    if (complete) {
      d.local_artifact_hits.fetch_add(1, std::memory_order_relaxed);
      local.from_local_cache = true;
      return local;
    }
  }
  // Fetch every file the node lacks in one stream (so the next run of the
  // same program is served from disk), then answer the requested kinds.
  absl::StatusOr<Artifact> fetched = d.FetchFromServer(key, {});
  if (!fetched.ok()) {
    // The server may not have a kind that an older metadata promised; ask
    // for the requested kinds alone, for the server's own error.
    if (!kinds.empty()) return d.FetchFromServer(key, kinds);
    return fetched.status();
  }
  (void)d.cache->PutMetadata(fetched->metadata);
  for (const auto& [kind, bytes] : fetched->files) {
    (void)d.cache->PutFile(fetched->metadata, kind, bytes);
  }
  if (kinds.empty()) return fetched;
  Artifact out;
  out.metadata = fetched->metadata;
  for (kiln::v1::ArtifactKind k : kinds) {
    auto it = fetched->files.find(k);
    if (it == fetched->files.end()) {
      return absl::NotFoundError(absl::StrCat("artifact ", key, " has no ", KindFileName(k),
                                              " (compile with emit_ptx for PTX)"));
    }
    out.files[k] = it->second;
  }
  return out;
}

absl::StatusOr<std::string> Client::FetchFile(const std::string& key, kiln::v1::ArtifactKind kind) {
  absl::StatusOr<Artifact> a = FetchArtifact(key, {kind});
  if (!a.ok()) return a.status();
  auto it = a->files.find(kind);
  if (it == a->files.end()) {
    return absl::NotFoundError(absl::StrCat("artifact ", key, " has no ", KindFileName(kind)));
  }
  return std::move(it->second);
}

// --- Tune ------------------------------------------------------------------------

absl::StatusOr<TuneOutcome> Client::Tune(const kiln::v1::TuneRequest& request,
                                         const TuneProgressFn& progress) {
  Impl& d = *impl_;
  TuneOutcome out;
  bool have_result = false;
  grpc::Status s = d.Call(
      d.options.stream_deadline,
      [&](grpc::ClientContext* ctx) {
        kiln::v1::TuneRequest req = request;
        // After the first event the job exists: re-attach to it.
        if (!out.job_id.empty()) req.set_attach_job_id(out.job_id);
        std::unique_ptr<grpc::ClientReader<kiln::v1::TuneEvent>> reader = d.stub->Tune(ctx, req);
        kiln::v1::TuneEvent event;
        while (reader->Read(&event)) {
          if (!event.job_id().empty()) out.job_id = event.job_id();
          if (event.has_result()) {
            out.result = event.result();
            have_result = true;
          } else if (event.has_progress() && progress) {
            progress(out.job_id, event.progress());
          }
        }
        return reader->Finish();
      },
      [] { return true; });
  if (!s.ok()) return ToAbsl(s);
  if (!have_result) return absl::DataLossError("the Tune stream ended without a result");
  return out;
}

// --- unary calls -------------------------------------------------------------------

absl::StatusOr<kiln::v1::LookupBestResponse>
Client::LookupBest(const kiln::v1::LookupBestRequest& request) {
  kiln::v1::LookupBestResponse resp;
  grpc::Status s = impl_->Idempotent(
      [&](grpc::ClientContext* ctx) { return impl_->stub->LookupBest(ctx, request, &resp); });
  if (!s.ok()) return ToAbsl(s);
  return resp;
}

absl::StatusOr<kiln::v1::BenchmarkResponse>
Client::Benchmark(const kiln::v1::BenchmarkRequest& request) {
  kiln::v1::BenchmarkResponse resp;
  grpc::Status s = impl_->Call(
      impl_->options.deadline,
      [&](grpc::ClientContext* ctx) { return impl_->stub->Benchmark(ctx, request, &resp); },
      [] { return false; });
  if (!s.ok()) return ToAbsl(s);
  return resp;
}

absl::StatusOr<kiln::v1::Job> Client::GetJob(const std::string& job_id) {
  kiln::v1::GetJobRequest req;
  req.set_job_id(job_id);
  kiln::v1::Job job;
  grpc::Status s = impl_->Idempotent(
      [&](grpc::ClientContext* ctx) { return impl_->stub->GetJob(ctx, req, &job); });
  if (!s.ok()) return ToAbsl(s);
  return job;
}

absl::StatusOr<kiln::v1::Job> Client::WatchJob(const std::string& job_id, const JobFn& on_update) {
  kiln::v1::WatchJobRequest req;
  req.set_job_id(job_id);
  kiln::v1::Job last;
  bool any = false;
  grpc::Status s = impl_->Call(
      impl_->options.stream_deadline,
      [&](grpc::ClientContext* ctx) {
        std::unique_ptr<grpc::ClientReader<kiln::v1::Job>> reader = impl_->stub->WatchJob(ctx, req);
        kiln::v1::Job j;
        while (reader->Read(&j)) {
          any = true;
          last = j;
          if (on_update) on_update(j);
        }
        return reader->Finish();
      },
      [] { return true; });
  if (!s.ok()) return ToAbsl(s);
  if (!any) return absl::DataLossError(absl::StrCat("WatchJob ", job_id, " sent no snapshot"));
  return last;
}

absl::StatusOr<kiln::v1::Job> Client::CancelJob(const std::string& job_id) {
  kiln::v1::CancelJobRequest req;
  req.set_job_id(job_id);
  kiln::v1::CancelJobResponse resp;
  grpc::Status s = impl_->Idempotent(
      [&](grpc::ClientContext* ctx) { return impl_->stub->CancelJob(ctx, req, &resp); });
  if (!s.ok()) return ToAbsl(s);
  return resp.job();
}

absl::StatusOr<std::vector<kiln::v1::Job>> Client::ListJobs(int limit) {
  kiln::v1::ListJobsRequest req;
  req.set_limit(limit);
  kiln::v1::ListJobsResponse resp;
  grpc::Status s = impl_->Idempotent(
      [&](grpc::ClientContext* ctx) { return impl_->stub->ListJobs(ctx, req, &resp); });
  if (!s.ok()) return ToAbsl(s);
  return std::vector<kiln::v1::Job>(resp.jobs().begin(), resp.jobs().end());
}

absl::StatusOr<std::vector<kiln::v1::Device>> Client::ListDevices() {
  kiln::v1::ListDevicesResponse resp;
  grpc::Status s = impl_->Idempotent(
      [&](grpc::ClientContext* ctx) { return impl_->stub->ListDevices(ctx, {}, &resp); });
  if (!s.ok()) return ToAbsl(s);
  return std::vector<kiln::v1::Device>(resp.devices().begin(), resp.devices().end());
}

absl::StatusOr<kiln::v1::ListMeasurementsResponse>
Client::ListMeasurements(const kiln::v1::ListMeasurementsRequest& request) {
  kiln::v1::ListMeasurementsResponse resp;
  grpc::Status s = impl_->Idempotent(
      [&](grpc::ClientContext* ctx) { return impl_->stub->ListMeasurements(ctx, request, &resp); });
  if (!s.ok()) return ToAbsl(s);
  return resp;
}

absl::StatusOr<kiln::v1::GetVersionResponse> Client::GetVersion() {
  kiln::v1::GetVersionResponse resp;
  grpc::Status s = impl_->Idempotent(
      [&](grpc::ClientContext* ctx) { return impl_->stub->GetVersion(ctx, {}, &resp); });
  if (!s.ok()) return ToAbsl(s);
  return resp;
}

absl::StatusOr<kiln::v1::CacheStatsResponse>
Client::CacheStats(const kiln::v1::CacheStatsRequest& request) {
  kiln::v1::CacheStatsResponse resp;
  // A zeroing call is not repeated: a retry after a lost answer would
  // report the counters just zeroed.
  const bool zero = request.zero();
  grpc::Status s = impl_->Call(
      impl_->options.deadline,
      [&](grpc::ClientContext* ctx) { return impl_->stub->CacheStats(ctx, request, &resp); },
      [zero] { return !zero; });
  if (!s.ok()) return ToAbsl(s);
  return resp;
}

} // namespace kiln::client
