#include "server/kiln_service.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "compiler/passes/target.h"
#include "compiler/toolchain/fingerprint.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "server/artifact_metadata.h"
#include "server/artifact_store.h"
#include "server/best_config.h"
#include "server/cache_artifact_store.h"
#include "server/grpc_status.h"
#include "server/request_convert.h"
#include "server/version.h"
#include "server/wire_scan.h"
#include "util/log.h"

namespace kiln::server {
namespace {

using grpc::CallbackServerContext;
using grpc::ServerUnaryReactor;

ServerUnaryReactor* FinishNow(CallbackServerContext* ctx, const absl::Status& status) {
  ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// Whose jobs a caller sees (JobManager's *For methods).
JobViewer ViewerOf(const Caller& caller) { return {caller.identity, caller.admin()}; }

// A raw method's request bytes in one piece: gRPC hands a request that
// arrived in one piece as one slice; a larger one is joined once.
absl::StatusOr<grpc::Slice> WholeRequest(absl::string_view method, const grpc::ByteBuffer& bytes) {
  grpc::Slice whole;
  if (!bytes.TrySingleSlice(&whole).ok() && !bytes.DumpToSingleSlice(&whole).ok()) {
    return absl::InternalError(absl::StrCat(method, ": cannot read the request"));
  }
  return whole;
}

absl::string_view View(const grpc::Slice& slice) {
  return {reinterpret_cast<const char*>(slice.begin()), slice.size()};
}

// A raw method's request, parsed within the daemon's limits (wire_scan.h).
absl::Status ParseRaw(absl::string_view method, const grpc::ByteBuffer& bytes,
                      const WireLimits& limits, google::protobuf::Message* request) {
  absl::StatusOr<grpc::Slice> whole = WholeRequest(method, bytes);
  if (!whole.ok()) return whole.status();
  return ParseRequest(method, View(*whole), limits, request);
}

// `message`'s wire form as the call's response.
absl::Status SerializeInto(const google::protobuf::Message& message, grpc::ByteBuffer* out) {
  bool own_buffer = false;
  const grpc::Status s =
      grpc::SerializationTraits<google::protobuf::Message>::Serialize(message, out, &own_buffer);
  if (!s.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot serialize the ", message.GetDescriptor()->full_name(), " response"));
  }
  return absl::OkStatus();
}

bool IsHexKey(const std::string& key) {
  return key.size() == 64 && std::all_of(key.begin(), key.end(), [](char c) {
           return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f');
         });
}

// --- Compile -----------------------------------------------------------------

void FillCompileResponse(CompileReply reply, kiln::v1::CompileResponse* response) {
  if (!reply.metadata.key().empty()) *response->mutable_artifact() = std::move(reply.metadata);
  response->set_outcome(reply.outcome);
  response->set_job_id(reply.job_id);
  response->set_server_seconds(reply.server_seconds);
}

// A Compile call's request and response messages, on one protobuf arena: the
// parse and the response's metadata copy make no heap allocation each, and
// the call's end frees them at once.
class CompileMessages {
 public:
  CompileMessages()
      : arena_(Options()),
        request_(google::protobuf::Arena::CreateMessage<kiln::v1::CompileRequest>(&arena_)),
        response_(google::protobuf::Arena::CreateMessage<kiln::v1::CompileResponse>(&arena_)) {}
  kiln::v1::CompileRequest* request() { return request_; }
  kiln::v1::CompileResponse* response() { return response_; }

 private:
  static google::protobuf::ArenaOptions Options() {
    google::protobuf::ArenaOptions o;
    o.start_block_size = 16 << 10; // a GEMM request and its response fit in the first block
    return o;
  }
  google::protobuf::Arena arena_;
  kiln::v1::CompileRequest* const request_;
  kiln::v1::CompileResponse* const response_;
};

// A hit's response from the stored metadata's wire form: field 1 (artifact,
// length-delimited) written with a CodedOutputStream, then the scalar fields as a message of
// their own (concatenated messages parse as one).
grpc::ByteBuffer EncodedHitResponse(const std::string& artifact, double server_seconds) {
  std::string bytes;
  bytes.reserve(artifact.size() + 32);
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream out(&raw);
    constexpr uint32_t kLengthDelimited = 2; // wire type
    out.WriteTag((kiln::v1::CompileResponse::kArtifactFieldNumber << 3) | kLengthDelimited);
    out.WriteVarint64(artifact.size());
    out.WriteRaw(artifact.data(), static_cast<int>(artifact.size()));
  }
  kiln::v1::CompileResponse tail;
  tail.set_outcome(kiln::v1::CACHE_OUTCOME_HIT);
  tail.set_server_seconds(server_seconds);
  tail.AppendToString(&bytes);
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

// Finishes a Compile RPC that waits on a job when the compile service calls
// back; a cancelled or timed-out call detaches from its job.
class CompileReactor final : public ServerUnaryReactor {
 public:
  CompileReactor(std::shared_ptr<CompileService::Pending> pending,
                 std::unique_ptr<CompileMessages> messages, grpc::ByteBuffer* out)
      : messages_(std::move(messages)), out_(out), pending_(std::move(pending)) {}

  void Complete(absl::StatusOr<CompileReply> reply) {
    absl::Status status = reply.status();
    if (reply.ok()) {
      FillCompileResponse(*std::move(reply), messages_->response());
      status = SerializeInto(*messages_->response(), out_);
    }
    Finish(ToGrpcStatus(status));
  }
  void OnCancel() override { pending_->Cancel(); }
  void OnDone() override { delete this; }

 private:
  const std::unique_ptr<CompileMessages> messages_;
  grpc::ByteBuffer* const out_;
  const std::shared_ptr<CompileService::Pending> pending_;
};

// --- Benchmark ---------------------------------------------------------------

// Finishes a (raw) Benchmark RPC with the reply serialized into `out`.
class BenchmarkReactor final : public ServerUnaryReactor {
 public:
  BenchmarkReactor(BenchmarkService* service, const BenchmarkCall& call, grpc::ByteBuffer* out)
      : out_(out) {
    std::shared_ptr<BenchmarkService::Pending> pending =
        service->Start(call, [this](absl::StatusOr<kiln::v1::BenchmarkResponse> reply) {
          absl::Status status = reply.status();
          if (reply.ok()) status = SerializeInto(*reply, out_);
          Finish(ToGrpcStatus(status));
        });
    bool cancel = false;
    {
      absl::MutexLock lock(&mu_);
      pending_ = pending;
      cancel = cancelled_;
    }
    if (cancel) pending->Cancel();
  }

  void OnCancel() override {
    std::shared_ptr<BenchmarkService::Pending> pending;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      pending = pending_;
    }
    if (pending) pending->Cancel();
  }
  void OnDone() override { delete this; }

 private:
  grpc::ByteBuffer* const out_;
  absl::Mutex mu_;
  std::shared_ptr<BenchmarkService::Pending> pending_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// --- GetArtifact -------------------------------------------------------------

class ArtifactWriter final : public grpc::ServerWriteReactor<kiln::v1::ArtifactChunk> {
 public:
  ArtifactWriter(const ServiceDeps& deps, const kiln::v1::GetArtifactRequest& request) {
    absl::Status s = Load(deps, request);
    if (!s.ok()) {
      Finish(ToGrpcStatus(s));
      return;
    }
    Next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading"));
      return;
    }
    Next();
  }
  void OnDone() override { delete this; }

 private:
  absl::Status Load(const ServiceDeps& deps, const kiln::v1::GetArtifactRequest& request) {
    if (!IsHexKey(request.key())) {
      return absl::InvalidArgumentError(
          absl::StrCat("key must be 64 lowercase hex digits, not '", request.key(), "'"));
    }
    chunk_ = request.chunk_bytes() > 0
                 ? std::min<int64_t>(request.chunk_bytes(), deps.max_chunk_bytes)
                 : int64_t{1} << 20;
    if (deps.cache == nullptr) return absl::UnavailableError("this daemon has no cache");
    // Bytes proven against their digests, metadata against the key (a
    // mismatch is evicted and NOT_FOUND saying so: nothing to recompile from).
    absl::StatusOr<cache::Artifact> a = ReadVerifiedArtifact(*deps.cache, request.key(), {});
    if (!a.ok()) return a.status();
    bool have_metadata = false;
    for (cache::ArtifactFile& f : a->files) {
      if (f.kind == kMetadataKind) have_metadata = metadata_.ParseFromString(f.bytes);
    }
    if (!have_metadata) {
      return absl::DataLossError(absl::StrCat("artifact ", request.key(), " has no metadata"));
    }
    for (int k : request.kinds()) {
      const auto kind = static_cast<kiln::v1::ArtifactKind>(k);
      if (FileKindOf(kind, metadata_.target()).empty()) {
        return absl::InvalidArgumentError(absl::StrCat("kinds: unknown artifact kind ", k));
      }
    }
    for (cache::ArtifactFile& f : a->files) {
      const kiln::v1::ArtifactKind kind = ArtifactKindOf(f.kind);
      if (kind == kiln::v1::ARTIFACT_KIND_UNSPECIFIED) continue; // metadata, launch JSON
      const bool wanted =
          request.kinds().empty() || std::find(request.kinds().begin(), request.kinds().end(),
                                               static_cast<int>(kind)) != request.kinds().end();
      if (wanted) files_.push_back({kind, std::move(f.bytes)});
    }
    if (!request.kinds().empty() && files_.size() < static_cast<size_t>(request.kinds().size())) {
      return absl::NotFoundError(
          absl::StrCat("artifact ", request.key(), " lacks some of the requested kinds (it has ",
                       a->files.size() - 1, " files; compile with emit_ptx for PTX)"));
    }
    return absl::OkStatus();
  }

  void Next() {
    if (file_ >= files_.size() && sent_any_) {
      Finish(grpc::Status::OK);
      return;
    }
    out_.Clear();
    if (!sent_any_) *out_.mutable_metadata() = metadata_;
    sent_any_ = true;
    if (file_ < files_.size()) {
      const File& f = files_[file_];
      const int64_t n = std::min<int64_t>(chunk_, static_cast<int64_t>(f.bytes.size()) - offset_);
      out_.set_kind(f.kind);
      out_.set_offset(offset_);
      out_.set_data(f.bytes.substr(offset_, n));
      offset_ += n;
      if (offset_ >= static_cast<int64_t>(f.bytes.size())) {
        out_.set_last_of_file(true);
        ++file_;
        offset_ = 0;
      }
    }
    StartWrite(&out_);
  }

  struct File {
    kiln::v1::ArtifactKind kind;
    std::string bytes;
  };
  kiln::v1::ArtifactMetadata metadata_;
  std::vector<File> files_;
  int64_t chunk_ = 1 << 20;
  size_t file_ = 0;
  int64_t offset_ = 0;
  bool sent_any_ = false;
  kiln::v1::ArtifactChunk out_;
};

// --- WatchJob and Tune: streams of a job's changes ----------------------------

// Writes a message after every change of a job (coalescing changes made while
// a write is in flight) until the derived class's Fill says the last one was
// written, or gives the status to finish with. Cancellation: a write in flight
// completes (not ok) after a cancel and finishes in OnWriteDone; Finish while
// a write is outstanding, or a write started after Finish, is a use after free
// in gRPC (the daemon aborted or crashed when clients cancelled streams).
template <typename Out>
class JobStream : public grpc::ServerWriteReactor<Out> {
 public:
  void OnWriteDone(bool ok) override {
    bool again = false, finish = false;
    grpc::Status status = grpc::Status::OK;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok || cancelled_) {
        status = grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
        finish = TakeFinish();
      } else if (last_written_) {
        finish = TakeFinish();
      } else if (dirty_) {
        dirty_ = false;
        std::optional<grpc::Status> end;
        again = writing_ = Next(&end);
        if (end) {
          status = *end;
          finish = TakeFinish();
        }
      }
    }
    if (finish) {
      this->Finish(status);
    } else if (again) {
      this->StartWrite(&out_);
    }
  }
  void OnCancel() override {
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      if (!writing_) finish = TakeFinish();
    }
    if (finish) this->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }
  void OnDone() override {
    if (link_) {
      {
        absl::MutexLock lock(&link_->mu);
        link_->reactor = nullptr;
      }
      job_->RemoveWatcher(watcher_);
    }
    delete this;
  }

 protected:
  ~JobStream() override = default;

  // Follows `job`'s changes from its present state: the end of a derived
  // class's constructor (Fill is the derived class's from then on).
  void Watch(std::shared_ptr<Job> job) {
    job_ = std::move(job);
    link_ = std::make_shared<Link>();
    {
      absl::MutexLock lock(&link_->mu);
      link_->reactor = this;
    }
    std::shared_ptr<Link> link = link_;
    watcher_ = job_->AddWatcher([link] {
      absl::MutexLock lock(&link->mu);
      if (link->reactor != nullptr) link->reactor->Changed();
    });
    Changed();
  }
  // Writes `message` as the stream's only one.
  void WriteOnly(Out message) {
    {
      absl::MutexLock lock(&mu_);
      out_ = std::move(message);
      last_written_ = true;
      writing_ = true;
    }
    this->StartWrite(&out_);
  }
  // The next message into *out (true; *last when it is the final one), or
  // the status to finish with in *finish (false).
  virtual bool Fill(const kiln::v1::Job& snapshot, Out* out, bool* last,
                    std::optional<grpc::Status>* finish) = 0;

  std::shared_ptr<Job> job_;

 private:
  // The watcher callback holds this, so it never touches a deleted reactor.
  struct Link {
    absl::Mutex mu;
    JobStream* reactor ABSL_GUARDED_BY(mu) = nullptr;
  };

  // True once: the caller finishes the stream (Finish is called once).
  bool TakeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return false;
    finished_ = true;
    return true;
  }
  bool Next(std::optional<grpc::Status>* finish) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    bool last = false;
    const bool write = Fill(job_->Snapshot(), &out_, &last, finish);
    if (!write) finishing_ = true;
    last_written_ = write && last;
    return write;
  }
  void Changed() {
    std::optional<grpc::Status> end;
    bool write = false, finish = false;
    {
      absl::MutexLock lock(&mu_);
      if (last_written_ || finishing_ || cancelled_ || finished_) return;
      if (writing_) {
        dirty_ = true;
        return;
      }
      write = writing_ = Next(&end);
      if (end) finish = TakeFinish();
    }
    if (finish) {
      this->Finish(*end);
    } else if (write) {
      this->StartWrite(&out_);
    }
  }

  std::shared_ptr<Link> link_;
  uint64_t watcher_ = 0;
  absl::Mutex mu_;
  Out out_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  bool last_written_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false; // Finish was called
};

// WatchJob: the job's snapshot (as the viewer may see it) after every
// change, until a final state is written.
class JobWatcher final : public JobStream<kiln::v1::Job> {
 public:
  JobWatcher(std::shared_ptr<Job> job, JobViewer viewer) : viewer_(std::move(viewer)) {
    Watch(std::move(job));
  }
  // A finished job that only the store remembers: one snapshot, then done.
  explicit JobWatcher(const kiln::v1::Job& record) { WriteOnly(record); }

 private:
  bool Fill(const kiln::v1::Job& snapshot, kiln::v1::Job* out, bool* last,
            std::optional<grpc::Status>* /*finish*/) override {
    *out = snapshot;
    viewer_.Redact(out);
    *last = IsFinal(out->state());
    return true;
  }

  JobViewer viewer_;
};

// Tune: a progress event after every change, then the result, then OK; or
// the job's error. A client that goes away leaves the job running (it is
// held): re-attach with attach_job_id. Tune is a raw method: the events are
// written serialized.
class TuneWriter final : public JobStream<grpc::ByteBuffer> {
 public:
  explicit TuneWriter(std::shared_ptr<Job> job) { Watch(std::move(job)); }

 private:
  bool Fill(const kiln::v1::Job& snapshot, grpc::ByteBuffer* out, bool* last,
            std::optional<grpc::Status>* finish) override {
    kiln::v1::TuneEvent event;
    event.set_job_id(snapshot.id());
    if (!IsFinal(snapshot.state())) {
      *event.mutable_progress() = snapshot.tune_progress();
    } else if (const TuneJobResult* r = job_->result<TuneJobResult>()) {
      *event.mutable_result() = r->result;
      *last = true;
    } else {
      *finish = ToGrpcStatus(job_->status());
      return false;
    }
    out->Clear();
    if (absl::Status s = SerializeInto(event, out); !s.ok()) {
      *finish = ToGrpcStatus(s);
      return false;
    }
    return true;
  }
};

template <typename Message>
class FailedWriter final : public grpc::ServerWriteReactor<Message> {
 public:
  explicit FailedWriter(const absl::Status& status) { this->Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

// The stored best config for (program, shape, target, device model). An
// empty model means: the model of a device here that runs the target, else
// the most recently updated best of any model. NotFound when none.
absl::StatusOr<std::pair<cache::BestConfigKey, cache::BestConfig>>
FindBest(const ServiceDeps& deps, const kiln::v1::ProgramSource& program, const std::string& target,
         const std::string& device_model, const kiln::v1::CompileOptions& options) {
  if (deps.cache == nullptr) return absl::UnavailableError("this daemon has no cache");
  if (program.source_case() == kiln::v1::ProgramSource::SOURCE_NOT_SET) {
    return absl::InvalidArgumentError("program: no source (tilelang_source, ir or ir_text)");
  }
  std::string model = device_model;
  if (model.empty() && deps.devices) {
    absl::StatusOr<std::string> id = ChooseDevice(deps.devices(), target, {});
    if (id.ok()) {
      for (const kiln::v1::Device& d : deps.devices()) {
        if (d.id() == *id) model = d.model();
      }
    }
  }
  cache::BestConfigKey key = BestKeyFor(program, target, model, options);
  if (!model.empty()) {
    absl::StatusOr<cache::BestConfig> best = deps.cache->GetBest(key);
    if (best.ok()) return std::make_pair(key, *std::move(best));
    if (best.status().code() != absl::StatusCode::kNotFound || !device_model.empty()) {
      return best.status();
    }
  }
  absl::StatusOr<std::vector<std::pair<cache::BestConfigKey, cache::BestConfig>>> all =
      deps.cache->ListBest(key.program_key);
  if (!all.ok()) return all.status();
  const std::pair<cache::BestConfigKey, cache::BestConfig>* newest = nullptr;
  for (const auto& entry : *all) {
    if (entry.first.shape != key.shape || entry.first.target != key.target) continue;
    if (newest == nullptr || entry.second.updated_unix_ms > newest->second.updated_unix_ms) {
      newest = &entry;
    }
  }
  if (newest == nullptr) return absl::NotFoundError("no best config stored");
  return *newest;
}

} // namespace

kiln::v1::Device HostCpuDevice() {
  kiln::v1::Device cpu;
  cpu.set_id("cpu");
  cpu.set_model("host CPU");
  cpu.set_arch("x86_64");
  cpu.set_sm_count(static_cast<int32_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  cpu.set_worker_state("none");
  return cpu;
}

KilnService::KilnService(ServiceDeps deps) : deps_(std::move(deps)) {
  if (deps_.auth == nullptr) {
    owned_auth_ = std::make_unique<Authenticator>(std::vector<BearerToken>{},
                                                  FairShareConfig::ClientKey::kPeer);
    deps_.auth = owned_auth_.get();
  }
  stats_since_unix_ms_ = absl::ToUnixMillis(absl::Now());
}

grpc::ServerUnaryReactor* KilnService::Compile(CallbackServerContext* ctx,
                                               const grpc::ByteBuffer* request_bytes,
                                               grpc::ByteBuffer* response_bytes) {
  const absl::Time received = absl::Now();
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kCompile, "Compile");
  if (!who.ok()) return FinishNow(ctx, who.status());
  if (deps_.compile == nullptr) {
    return FinishNow(ctx, absl::UnavailableError("this daemon does not compile"));
  }
  absl::StatusOr<grpc::Slice> whole = WholeRequest("Compile", *request_bytes);
  if (!whole.ok()) return FinishNow(ctx, whole.status());
  const absl::string_view wire = View(*whole);
  const CompileService::RequestDigest bytes_digest = CompileService::DigestOfBytes(wire);
  {
    std::string artifact;
    if (deps_.compile->TryRequestHitEncoded(bytes_digest, &artifact)) {
      *response_bytes = EncodedHitResponse(artifact, absl::ToDoubleSeconds(absl::Now() - received));
      return FinishNow(ctx, absl::OkStatus());
    }
  }
  auto messages = std::make_unique<CompileMessages>();
  kiln::v1::CompileRequest* const request = messages->request();
  kiln::v1::CompileResponse* const response = messages->response();
  if (absl::Status parsed = ParseRequest("Compile", wire, deps_.wire_limits, request);
      !parsed.ok()) {
    return FinishNow(ctx, parsed);
  }
  const std::optional<CompileService::RequestDigest> digest = CompileService::DigestOf(*request);
  if (digest && deps_.compile->TryRequestHit(*digest, response->mutable_artifact())) {
    deps_.compile->LearnRequest(bytes_digest, response->artifact().key());
    response->set_outcome(kiln::v1::CACHE_OUTCOME_HIT);
    response->set_server_seconds(absl::ToDoubleSeconds(absl::Now() - received));
    return FinishNow(ctx, SerializeInto(*response, response_bytes));
  }
  response->clear_artifact();
  google::protobuf::Map<std::string, kiln::v1::BindingValue> config;
  if (!request->use_best_for_device().empty()) {
    // The best config first; an explicit config entry wins over it.
    absl::StatusOr<std::pair<cache::BestConfigKey, cache::BestConfig>> best =
        FindBest(deps_, request->program(), request->target(), request->use_best_for_device(),
                 request->options());
    if (best.ok()) {
      absl::StatusOr<ConfigMap> parsed = ConfigFromJson(best->second.config_json);
      if (!parsed.ok()) return FinishNow(ctx, parsed.status());
      for (auto& [k, v] : *parsed) config[k] = v;
    } else if (best.status().code() != absl::StatusCode::kNotFound) {
      return FinishNow(ctx, best.status());
    }
  }
  for (const auto& [k, v] : request->config()) config[k] = v;
  absl::StatusOr<driver::ProgramInput> program = ProgramFromProto(request->program(), config);
  if (!program.ok()) return FinishNow(ctx, program.status());
  CompileCall call;
  // The frontend's evaluation stops at the RPC's deadline (and on cancel).
  call.deadline = absl::FromChrono(ctx->deadline());
  call.program = *std::move(program);
  call.options = OptionsFromProto(request->target(), request->options());
  if (absl::Status s = AddKnobs(request->program(), config, &call.options); !s.ok())
    return FinishNow(ctx, s);
  call.client = who->client;
  call.identity = who->identity;
  call.async = request->async();
  // A hit (or an error found before any job) completes inside Start: answer
  // it with the default reactor, which gRPC finishes inline, and create the
  // reactor that waits on a job only when there is a job to wait on.
  struct Early {
    absl::Mutex mu;
    bool returned ABSL_GUARDED_BY(mu) = false;
    std::optional<absl::StatusOr<CompileReply>> reply ABSL_GUARDED_BY(mu);
    CompileReactor* reactor ABSL_GUARDED_BY(mu) = nullptr;
  };
  auto early = std::make_shared<Early>();
  std::shared_ptr<CompileService::Pending> pending =
      deps_.compile->Start(call, [early](absl::StatusOr<CompileReply> reply) {
        CompileReactor* reactor = nullptr;
        {
          absl::MutexLock lock(&early->mu);
          if (!early->returned) {
            early->reply = std::move(reply);
            return;
          }
          reactor = early->reactor;
        }
        reactor->Complete(std::move(reply));
      });
  absl::MutexLock lock(&early->mu);
  early->returned = true;
  if (early->reply) {
    if (early->reply->ok()) {
      if (digest && (*early->reply)->outcome == kiln::v1::CACHE_OUTCOME_HIT) {
        deps_.compile->LearnRequest(*digest, (*early->reply)->metadata.key());
        deps_.compile->LearnRequest(bytes_digest, (*early->reply)->metadata.key());
      }
      FillCompileResponse(std::move(**early->reply), response);
      // The whole handler, request conversion included.
      response->set_server_seconds(absl::ToDoubleSeconds(absl::Now() - received));
      return FinishNow(ctx, SerializeInto(*response, response_bytes));
    }
    return FinishNow(ctx, early->reply->status());
  }
  early->reactor = new CompileReactor(std::move(pending), std::move(messages), response_bytes);
  return early->reactor;
}

grpc::ServerWriteReactor<kiln::v1::ArtifactChunk>*
KilnService::GetArtifact(CallbackServerContext* ctx, const kiln::v1::GetArtifactRequest* request) {
  if (absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kRead, "GetArtifact");
      !who.ok()) {
    return new FailedWriter<kiln::v1::ArtifactChunk>(who.status());
  }
  return new ArtifactWriter(deps_, *request);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>*
KilnService::Tune(CallbackServerContext* ctx, const grpc::ByteBuffer* request_bytes) {
  using Failed = FailedWriter<grpc::ByteBuffer>;
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kTune, "Tune");
  if (!who.ok()) return new Failed(who.status());
  if (deps_.tune == nullptr) {
    return new Failed(absl::UnavailableError(
        "this daemon has no device workers (kiln-worker did not start), so it cannot tune"));
  }
  TuneCall call;
  if (absl::Status parsed = ParseRaw("Tune", *request_bytes, deps_.wire_limits, &call.request);
      !parsed.ok()) {
    return new Failed(parsed);
  }
  if (!call.request.attach_job_id().empty()) {
    // Only a job this caller may see; another tenant's is answered like a
    // missing one.
    absl::StatusOr<kiln::v1::Job> seen =
        deps_.jobs->GetFor(call.request.attach_job_id(), ViewerOf(*who));
    if (!seen.ok()) return new Failed(seen.status());
  }
  call.client = who->client;
  call.identity = who->identity;
  absl::StatusOr<std::shared_ptr<Job>> job = deps_.tune->Start(call);
  if (!job.ok()) return new Failed(job.status());
  return new TuneWriter(*std::move(job));
}

grpc::ServerUnaryReactor* KilnService::LookupBest(CallbackServerContext* ctx,
                                                  const grpc::ByteBuffer* request_bytes,
                                                  grpc::ByteBuffer* response_bytes) {
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kRead, "LookupBest");
  if (!who.ok()) return FinishNow(ctx, who.status());
  kiln::v1::LookupBestRequest request;
  if (absl::Status parsed = ParseRaw("LookupBest", *request_bytes, deps_.wire_limits, &request);
      !parsed.ok()) {
    return FinishNow(ctx, parsed);
  }
  kiln::v1::LookupBestResponse response;
  absl::Status status = LookupBestInto(request, &response);
  if (status.ok()) status = SerializeInto(response, response_bytes);
  return FinishNow(ctx, status);
}

absl::Status KilnService::LookupBestInto(const kiln::v1::LookupBestRequest& request,
                                         kiln::v1::LookupBestResponse* response) const {
  const std::string target = request.target().empty() ? "cpu" : request.target();
  response->set_program_key(BestKeyFor(request.program(), target, "").program_key);
  absl::StatusOr<std::pair<cache::BestConfigKey, cache::BestConfig>> best =
      FindBest(deps_, request.program(), target, request.device_model(), request.options());
  if (!best.ok()) {
    if (best.status().code() == absl::StatusCode::kNotFound) {
      response->set_found(false);
      return absl::OkStatus();
    }
    return best.status();
  }
  absl::StatusOr<ConfigMap> config = ConfigFromJson(best->second.config_json);
  if (!config.ok()) {
    return absl::DataLossError(
        absl::StrCat("the stored best config does not parse: ", config.status().message()));
  }
  response->set_found(true);
  kiln::v1::Measurement* m = response->mutable_measurement();
  for (const auto& [k, v] : *config) {
    (*response->mutable_config())[k] = v;
    (*m->mutable_config())[k] = v;
  }
  const cache::LatencyStats& l = best->second.latency;
  m->set_key(best->second.artifact_key);
  m->set_device_model(best->first.device_model);
  m->set_status(kiln::v1::Measurement::STATUS_OK);
  m->set_median_us(l.median_us);
  m->set_mean_us(l.mean_us);
  m->set_stddev_us(l.stddev_us);
  m->set_min_us(l.min_us);
  m->set_samples(static_cast<int32_t>(l.samples));
  m->set_unix_ms(best->second.updated_unix_ms);
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* KilnService::Benchmark(CallbackServerContext* ctx,
                                                 const grpc::ByteBuffer* request_bytes,
                                                 grpc::ByteBuffer* response_bytes) {
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kCompile, "Benchmark");
  if (!who.ok()) return FinishNow(ctx, who.status());
  if (deps_.benchmark == nullptr) {
    return FinishNow(ctx, absl::UnavailableError(
                              "this daemon has no device workers (kiln-worker did not start), so "
                              "it cannot run kernels; see its start-up warnings"));
  }
  BenchmarkCall call;
  if (absl::Status parsed = ParseRaw("Benchmark", *request_bytes, deps_.wire_limits, &call.request);
      !parsed.ok()) {
    return FinishNow(ctx, parsed);
  }
  call.client = who->client;
  call.identity = who->identity;
  return new BenchmarkReactor(deps_.benchmark, call, response_bytes);
}

grpc::ServerUnaryReactor* KilnService::GetJob(CallbackServerContext* ctx,
                                              const kiln::v1::GetJobRequest* request,
                                              kiln::v1::Job* response) {
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kRead, "GetJob");
  if (!who.ok()) return FinishNow(ctx, who.status());
  absl::StatusOr<kiln::v1::Job> job = deps_.jobs->GetFor(request->job_id(), ViewerOf(*who));
  if (!job.ok()) return FinishNow(ctx, job.status());
  *response = *std::move(job);
  return FinishNow(ctx, absl::OkStatus());
}

grpc::ServerWriteReactor<kiln::v1::Job>*
KilnService::WatchJob(CallbackServerContext* ctx, const kiln::v1::WatchJobRequest* request) {
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kRead, "WatchJob");
  if (!who.ok()) return new FailedWriter<kiln::v1::Job>(who.status());
  const JobViewer viewer = ViewerOf(*who);
  if (std::shared_ptr<Job> job = deps_.jobs->FindFor(request->job_id(), viewer)) {
    return new JobWatcher(std::move(job), viewer);
  }
  absl::StatusOr<kiln::v1::Job> stored = deps_.jobs->GetFor(request->job_id(), viewer);
  if (!stored.ok()) return new FailedWriter<kiln::v1::Job>(stored.status());
  return new JobWatcher(*stored);
}

grpc::ServerUnaryReactor* KilnService::CancelJob(CallbackServerContext* ctx,
                                                 const kiln::v1::CancelJobRequest* request,
                                                 kiln::v1::CancelJobResponse* response) {
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kRead, "CancelJob");
  if (!who.ok()) return FinishNow(ctx, who.status());
  absl::StatusOr<kiln::v1::Job> job = deps_.jobs->CancelFor(request->job_id(), ViewerOf(*who));
  if (!job.ok()) return FinishNow(ctx, job.status());
  *response->mutable_job() = *std::move(job);
  return FinishNow(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* KilnService::ListJobs(CallbackServerContext* ctx,
                                                const kiln::v1::ListJobsRequest* request,
                                                kiln::v1::ListJobsResponse* response) {
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kRead, "ListJobs");
  if (!who.ok()) return FinishNow(ctx, who.status());
  const int limit = request->limit() > 0 ? std::min(request->limit(), 10000) : 50;
  for (kiln::v1::Job& j : deps_.jobs->ListFor(limit, ViewerOf(*who))) {
    *response->add_jobs() = std::move(j);
  }
  return FinishNow(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* KilnService::ListDevices(CallbackServerContext* ctx,
                                                   const kiln::v1::ListDevicesRequest*,
                                                   kiln::v1::ListDevicesResponse* response) {
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kRead, "ListDevices");
  if (!who.ok()) return FinishNow(ctx, who.status());
  if (deps_.devices) {
    for (kiln::v1::Device& d : deps_.devices()) *response->add_devices() = std::move(d);
  } else {
    *response->add_devices() = HostCpuDevice();
  }
  return FinishNow(ctx, absl::OkStatus());
}

KilnService::StatsCounters KilnService::ReadStatsCounters() const {
  StatsCounters c;
  if (deps_.compile != nullptr) {
    const CompileCounters& k = deps_.compile->counters();
    c.compile_hits = k.hits.load();
    c.compile_misses = k.misses.load();
    c.joined = k.joined.load();
    c.builds = k.builds.load();
    c.build_failures = k.build_failures.load();
  }
  if (deps_.tune != nullptr) {
    const TuneCounters& t = deps_.tune->counters();
    c.tunes = t.jobs.load();
    c.tune_measured = t.measured.load();
    c.tune_failed = t.failed.load();
  }
  if (deps_.benchmark != nullptr) c.benchmarks = deps_.benchmark->counters().started.load();
  return c;
}

grpc::ServerUnaryReactor* KilnService::CacheStats(CallbackServerContext* ctx,
                                                  const kiln::v1::CacheStatsRequest* request,
                                                  kiln::v1::CacheStatsResponse* response) {
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kRead, "CacheStats");
  if (!who.ok()) return FinishNow(ctx, who.status());
  if (request->zero() && !who->Allows(Role::kTune)) {
    // The baseline is every client's: a read-only or compile-only token
    // does not move it (tune, the default role, does, as before roles).
    return FinishNow(ctx, absl::PermissionDeniedError(absl::StrCat(
                              "CacheStats with zero needs role tune or above; client '",
                              who->identity, "' has role ", std::string(RoleName(who->role)))));
  }
  if (deps_.cache == nullptr) return FinishNow(ctx, absl::UnavailableError("no cache"));
  absl::StatusOr<cache::CacheStats> s = deps_.cache->Stats();
  if (!s.ok()) return FinishNow(ctx, s.status());
  response->set_entries(s->artifacts);
  response->set_blob_bytes(static_cast<int64_t>(s->blob_bytes));
  response->set_capacity_bytes(static_cast<int64_t>(s->soft_limit_bytes));
  response->set_hits(s->hits);
  response->set_misses(s->misses);
  response->set_evictions(s->evictions);
  response->set_corrupt_blobs_repaired(s->corrupt_blobs);
  response->set_corrupt_artifacts_evicted(s->corrupt_artifacts);
  response->set_overhead_bytes(static_cast<int64_t>(s->overhead_bytes));
  response->set_best_configs(s->best_configs);
  response->set_measurements(s->measurements);
  response->set_cache_dir(s->dir);
  const StatsCounters now = ReadStatsCounters();
  StatsCounters base;
  {
    absl::MutexLock lock(&stats_mu_);
    base = stats_base_;
    response->set_since_unix_ms(stats_since_unix_ms_);
    if (request->zero()) {
      stats_base_ = now;
      stats_since_unix_ms_ = absl::ToUnixMillis(absl::Now());
      response->set_zeroed(true);
    }
  }
  response->set_compile_hits(now.compile_hits - base.compile_hits);
  response->set_compile_misses(now.compile_misses - base.compile_misses);
  response->set_joined(now.joined - base.joined);
  response->set_builds(now.builds - base.builds);
  response->set_build_failures(now.build_failures - base.build_failures);
  response->set_tunes(now.tunes - base.tunes);
  response->set_tune_configs_measured(now.tune_measured - base.tune_measured);
  response->set_tune_configs_failed(now.tune_failed - base.tune_failed);
  response->set_benchmarks(now.benchmarks - base.benchmarks);
  if (request->zero()) {
    util::LogInfo("statistics zeroed", {{"client", who->client}});
  }
  return FinishNow(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor*
KilnService::ListMeasurements(CallbackServerContext* ctx,
                              const kiln::v1::ListMeasurementsRequest* request,
                              kiln::v1::ListMeasurementsResponse* response) {
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kRead, "ListMeasurements");
  if (!who.ok()) return FinishNow(ctx, who.status());
  if (deps_.cache == nullptr) return FinishNow(ctx, absl::UnavailableError("no cache"));
  if (request->history_name().empty()) {
    return FinishNow(ctx, absl::InvalidArgumentError("ListMeasurements: history_name is empty"));
  }
  if (request->limit() < 0) {
    return FinishNow(ctx, absl::InvalidArgumentError("ListMeasurements: limit is negative"));
  }
  cache::MeasurementQuery q;
  q.key = request->history_name();
  if (!request->label().empty()) q.label = request->label();
  if (!request->device_model().empty()) q.device_model = request->device_model();
  q.successes_only = request->successes_only();
  q.limit = request->limit() > 0 ? request->limit() : 1000;
  absl::StatusOr<std::vector<cache::Measurement>> rows = deps_.cache->QueryMeasurements(q);
  if (!rows.ok()) return FinishNow(ctx, rows.status());
  for (const cache::Measurement& m : *rows) {
    kiln::v1::HistoryEntry* e = response->add_entries();
    e->set_history_name(m.key);
    e->set_label(m.label);
    e->set_target(m.target);
    e->set_device_model(m.device_model);
    e->set_device_id(m.device_id);
    e->set_config_json(m.config_json);
    e->set_min_us(m.latency.min_us);
    e->set_median_us(m.latency.median_us);
    e->set_mean_us(m.latency.mean_us);
    e->set_p90_us(m.latency.p90_us);
    e->set_stddev_us(m.latency.stddev_us);
    e->set_samples(static_cast<int32_t>(m.latency.samples));
    e->set_failure(m.failure);
    e->set_unix_ms(m.time_unix_ms);
    e->set_id(m.id);
  }
  absl::StatusOr<std::vector<std::string>> labels =
      deps_.cache->MeasurementLabels(request->history_name());
  if (!labels.ok()) return FinishNow(ctx, labels.status());
  for (const std::string& l : *labels) response->add_labels(l);
  return FinishNow(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* KilnService::Echo(CallbackServerContext* ctx,
                                            const kiln::v1::EchoRequest* request,
                                            kiln::v1::EchoResponse* response) {
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kRead, "Echo");
  if (!who.ok()) return FinishNow(ctx, who.status());
  if (request->size() < 0 || request->size() > (16 << 20)) {
    return FinishNow(ctx, absl::InvalidArgumentError("Echo: size must be 0..16 MiB"));
  }
  response->mutable_payload()->assign(static_cast<size_t>(request->size()), 'k');
  return FinishNow(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* KilnService::GetVersion(CallbackServerContext* ctx,
                                                  const kiln::v1::GetVersionRequest*,
                                                  kiln::v1::GetVersionResponse* response) {
  absl::StatusOr<Caller> who = deps_.auth->Authorize(*ctx, Role::kRead, "GetVersion");
  if (!who.ok()) return FinishNow(ctx, who.status());
  response->set_version(kKilnVersion);
  response->set_ir_version(kIrVersions);
  for (const std::string& t : passes::SupportedTargets()) response->add_targets(t);
  response->set_toolchain_fingerprint(
      toolchain::ToolchainFingerprint(toolchain::ToolchainKind::kNvrtc));
  return FinishNow(ctx, absl::OkStatus());
}

} // namespace kiln::server
