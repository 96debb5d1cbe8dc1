#include "server/compile_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

// clang-format off
#define XXH_STATIC_LINKING_ONLY // XXH3_state_t on the stack
#include <xxhash.h>
// clang-format on

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "server/artifact_metadata.h"
#include "util/log.h"
#include "util/sha256.h"

namespace kiln::server {
namespace {

constexpr size_t kMemoGeneration = 1 << 16;               // entries per generation
constexpr size_t kMemoGenerationBytes = size_t{64} << 20; // request bytes per generation
constexpr size_t kMemoInlineBytes = 16 << 10;             // larger requests are keyed by digest
constexpr uint64_t kBytesDigestSeed = 0x6b696c6e62797465; // "kilnbyte"
// What a client is told when the cache's disk is below its free-space floor
// (cache.min_free); the log names the directory and the numbers.
constexpr char kNoRoomMessage[] =
    "the daemon's cache disk is full (below its cache.min_free floor), so the compile was not "
    "started; cache hits are still served; retry later or ask the operator";

double SecondsSince(absl::Time start) { return absl::ToDoubleSeconds(absl::Now() - start); }

std::string BindingText(const frontend::BindingValue& v) {
  switch (v.kind) {
  case frontend::BindingValue::Kind::kInt:
    return absl::StrCat("i", v.ival);
  case frontend::BindingValue::Kind::kFloat:
    return absl::StrCat("f", v.fval);
  case frontend::BindingValue::Kind::kBool:
    return v.bval ? "bT" : "bF";
  case frontend::BindingValue::Kind::kString:
    return absl::StrCat("s", v.sval);
  case frontend::BindingValue::Kind::kIntList:
    return absl::StrCat(v.tuple ? "t" : "l", absl::StrJoin(v.ivals, ","));
  }
  return "?";
}

} // namespace

// --- Pending ---------------------------------------------------------------

bool CompileService::Pending::Complete(absl::StatusOr<CompileReply> reply) {
  if (completed_.exchange(true)) return false;
  done_(std::move(reply));
  return true;
}

void CompileService::Pending::Cancel() {
  std::shared_ptr<Job> job;
  std::shared_ptr<PreparePool::Task> prepare;
  {
    absl::MutexLock lock(&mu_);
    job = job_;
    prepare = prepare_;
  }
  if (prepare) prepare->Cancel(); // the evaluation stops at its next budget check
  if (Complete(absl::CancelledError("the request was cancelled")) && job) job->Detach();
}

// --- CompileService ----------------------------------------------------------

CompileService::CompileService(ArtifactStore* store, JobManager* jobs, CompilePool* pool,
                               PreparePool* prepare)
    : store_(store), jobs_(jobs), pool_(pool), prepare_(prepare) {}

std::string CompileService::MemoKey(const CompileCall& call) {
  // The request itself, fields length-prefixed: the memo's hash map hashes
  // it (fast) and compares it whole, so a hit is exact without a digest.
  // Large requests are keyed by their SHA-256 instead, to bound the memo.
  std::string key;
  auto field = [&key](absl::string_view bytes) { absl::StrAppend(&key, bytes.size(), ":", bytes); };
  field(std::to_string(static_cast<int>(call.program.kind)));
  field(call.program.text);
  field(call.program.entry);
  for (const auto& [name, value] : call.program.bindings) {
    field(name);
    field(BindingText(value));
  }
  // Sorted and without repeats (request_convert.cc): a set, as the compile sees it.
  field(absl::StrCat(call.program.dynamic_params.size()));
  for (const std::string& name : call.program.dynamic_params) field(name);
  field(call.options.target);
  field(driver::CanonicalOptions(call.options));
  field(absl::StrCat(call.options.pass_options.size()));
  if (key.size() <= kMemoInlineBytes) return key;
  return absl::StrCat("sha256:", util::Sha256Hex(key));
}

std::optional<std::string> CompileService::MemoGet(const std::string& memo_key) {
  absl::MutexLock lock(&memo_mu_);
  auto it = memo_.find(memo_key);
  if (it != memo_.end()) return it->second;
  it = memo_old_.find(memo_key);
  if (it != memo_old_.end()) return it->second;
  return std::nullopt;
}

void CompileService::MemoPut(const std::string& memo_key, const std::string& key) {
  absl::MutexLock lock(&memo_mu_);
  if (memo_.size() >= kMemoGeneration || memo_bytes_ >= kMemoGenerationBytes) {
    memo_old_ = std::move(memo_);
    memo_.clear();
    memo_bytes_ = 0;
  }
  if (memo_.insert_or_assign(memo_key, key).second) memo_bytes_ += memo_key.size() + key.size();
}

std::optional<CompileService::RequestDigest>
CompileService::DigestOf(const kiln::v1::CompileRequest& request) {
  const kiln::v1::ProgramSource& program = request.program();
  const std::string* text = nullptr;
  switch (program.source_case()) {
  case kiln::v1::ProgramSource::kTilelangSource:
    text = &program.tilelang_source();
    break;
  case kiln::v1::ProgramSource::kIrText:
    text = &program.ir_text();
    break;
  default:
    return std::nullopt;
  }
  if (request.async() || !request.use_best_for_device().empty()) return std::nullopt;
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  // Every field length-prefixed, so no two requests hash the same bytes.
  auto field = [&state](absl::string_view bytes) {
    const uint64_t size = bytes.size();
    XXH3_128bits_update(&state, &size, sizeof(size));
    XXH3_128bits_update(&state, bytes.data(), bytes.size());
  };
  auto number = [&state](auto v) { XXH3_128bits_update(&state, &v, sizeof(v)); };
  auto bindings = [&](const google::protobuf::Map<std::string, kiln::v1::BindingValue>& map) {
    absl::InlinedVector<const google::protobuf::MapPair<std::string, kiln::v1::BindingValue>*, 16>
        sorted;
    for (const auto& entry : map) sorted.push_back(&entry);
    std::sort(sorted.begin(), sorted.end(),
              [](const auto* a, const auto* b) { return a->first < b->first; });
    number(static_cast<uint64_t>(sorted.size()));
    for (const auto* entry : sorted) {
      field(entry->first);
      const kiln::v1::BindingValue& v = entry->second;
      number(static_cast<int32_t>(v.value_case()));
      switch (v.value_case()) {
      case kiln::v1::BindingValue::kIntValue:
        number(v.int_value());
        break;
      case kiln::v1::BindingValue::kFloatValue:
        number(v.float_value());
        break;
      case kiln::v1::BindingValue::kBoolValue:
        number(static_cast<uint8_t>(v.bool_value() ? 1 : 0));
        break;
      case kiln::v1::BindingValue::kStringValue:
        field(v.string_value());
        break;
      case kiln::v1::BindingValue::kIntList:
        number(static_cast<uint8_t>(v.int_list().tuple() ? 1 : 0));
        number(static_cast<uint64_t>(v.int_list().values_size()));
        for (int64_t x : v.int_list().values()) number(x);
        break;
      case kiln::v1::BindingValue::VALUE_NOT_SET:
        break;
      }
    }
  };
  number(static_cast<int32_t>(program.source_case()));
  field(*text);
  field(program.entry());
  field(program.file_name());
  bindings(program.bindings());
  // Dynamic parameters as the compile sees them: a set (request_convert.cc).
  absl::InlinedVector<absl::string_view, 8> dynamic(program.dynamic_params().begin(),
                                                    program.dynamic_params().end());
  std::sort(dynamic.begin(), dynamic.end());
  dynamic.erase(std::unique(dynamic.begin(), dynamic.end()), dynamic.end());
  number(static_cast<uint64_t>(dynamic.size()));
  for (absl::string_view name : dynamic) field(name);
  bindings(request.config());
  field(request.target());
  std::string options;
  (void)request.options().SerializeToString(&options);
  field(options);
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return RequestDigest{h.high64, h.low64};
}

CompileService::RequestDigest CompileService::DigestOfBytes(absl::string_view request_bytes) {
  // Seeded apart from DigestOf's field-wise hash: the two share one table.
  const XXH128_hash_t h =
      XXH3_128bits_withSeed(request_bytes.data(), request_bytes.size(), kBytesDigestSeed);
  return RequestDigest{h.high64, h.low64};
}

std::optional<std::string> CompileService::LearnedKey(const RequestDigest& digest) {
  absl::MutexLock lock(&memo_mu_);
  auto it = requests_.find(digest);
  if (it == requests_.end()) {
    it = requests_old_.find(digest);
    if (it == requests_old_.end()) return std::nullopt;
  }
  return it->second;
}

bool CompileService::LearnedHit(const RequestDigest& digest, kiln::v1::ArtifactMetadata* metadata,
                                std::string* encoded) {
  const std::optional<std::string> key = LearnedKey(digest);
  if (!key || !LookupInto(*key, metadata, encoded).ok()) return false;
  counters_.hits.fetch_add(1, std::memory_order_relaxed);
  counters_.memo_hits.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool CompileService::TryRequestHit(const RequestDigest& digest,
                                   kiln::v1::ArtifactMetadata* metadata) {
  return LearnedHit(digest, metadata, nullptr);
}

bool CompileService::TryRequestHitEncoded(const RequestDigest& digest, std::string* encoded) {
  return LearnedHit(digest, nullptr, encoded);
}

void CompileService::LearnRequest(const RequestDigest& digest, const std::string& key) {
  absl::MutexLock lock(&memo_mu_);
  if (requests_.size() >= kMemoGeneration) {
    requests_old_ = std::move(requests_);
    requests_.clear();
  }
  requests_.insert_or_assign(digest, key);
}

absl::Status CompileService::LookupInto(const std::string& key,
                                        kiln::v1::ArtifactMetadata* metadata,
                                        std::string* encoded) {
  const absl::Time now = absl::Now();
  // Noted before the read: a removal that races with it makes the entry stale.
  const uint64_t generation = store_->Generation();
  auto give = [&](const HitEntry& e) {
    if (metadata != nullptr) *metadata = e.metadata;
    if (encoded != nullptr) *encoded = e.encoded;
  };
  {
    absl::MutexLock lock(&hit_mu_);
    auto it = hit_memo_.find(key);
    if (it != hit_memo_.end() && it->second.expires > now && it->second.generation == generation) {
      give(it->second);
      return absl::OkStatus();
    }
  }
  HitEntry entry;
  if (absl::Status s = LookupStore(key, &entry); !s.ok()) {
    absl::MutexLock lock(&hit_mu_);
    hit_memo_.erase(key);
    return s;
  }
  entry.expires = now + absl::Seconds(1);
  entry.generation = generation;
  give(entry);
  absl::MutexLock lock(&hit_mu_);
  if (hit_memo_.size() >= 4096) hit_memo_.clear();
  hit_memo_[key] = std::move(entry);
  return absl::OkStatus();
}

absl::StatusOr<kiln::v1::ArtifactMetadata> CompileService::Lookup(const std::string& key) {
  kiln::v1::ArtifactMetadata m;
  if (absl::Status s = LookupInto(key, &m, nullptr); !s.ok()) return s;
  return m;
}

absl::Status CompileService::LookupStore(const std::string& key, HitEntry* entry) {
  absl::StatusOr<cache::Artifact> a = store_->Get(key, {kMetadataKind});
  if (!a.ok()) return a.status();
  for (cache::ArtifactFile& f : a->files) {
    if (f.kind != kMetadataKind) continue;
    if (!entry->metadata.ParseFromString(f.bytes)) {
      return absl::DataLossError(absl::StrCat("artifact ", key, ": unreadable metadata"));
    }
    // The cache's store checks this itself and evicts; for any other store,
    // another artifact's metadata under this key is a miss, and the
    // recompile's put replaces it.
    if (entry->metadata.key() != key) {
      return absl::NotFoundError(
          absl::StrCat("artifact ", key, ": its metadata names the key ", entry->metadata.key()));
    }
    // The stored file is the metadata message's wire form: a response can
    // carry it as it is.
    entry->encoded = std::move(f.bytes);
    return absl::OkStatus();
  }
  // Stored by something other than kilnd (no metadata): compile it again.
  return absl::NotFoundError(absl::StrCat("artifact ", key, " has no metadata"));
}

frontend::EvalLimits CompileService::LimitsFor(const CompileCall& call) const {
  frontend::EvalLimits limits = eval_limits_;
  limits.deadline = std::min(eval_limits_.deadline, call.deadline);
  return limits;
}

absl::StatusOr<std::string> CompileService::KeyOf(const CompileCall& call) {
  const bool memoizable = call.program.kind != driver::ProgramInput::Kind::kProgram;
  const std::string memo = memoizable ? MemoKey(call) : "";
  if (memoizable) {
    if (std::optional<std::string> key = MemoGet(memo)) return *key;
  }
  struct Slot {
    driver::ProgramInput program;
    absl::Notification done;
    absl::StatusOr<driver::Prepared> prepared = absl::UnknownError("not prepared");
  };
  auto slot = std::make_shared<Slot>();
  slot->program = call.program;
  slot->program.limits = LimitsFor(call);
  const driver::BuildOptions options = call.options;
  auto run = [slot, options](const std::atomic<bool>* cancelled) {
    slot->program.limits.cancelled = cancelled;
    slot->prepared = driver::Prepare(slot->program, options);
    slot->done.Notify();
  };
  if (prepare_ == nullptr) {
    run(nullptr);
  } else {
    absl::StatusOr<std::shared_ptr<PreparePool::Task>> task =
        prepare_->Submit(call.client, call.deadline, run, [slot](absl::Status why) {
          slot->prepared = std::move(why);
          slot->done.Notify();
        });
    if (!task.ok()) return task.status();
    slot->done.WaitForNotification();
  }
  if (!slot->prepared.ok()) return slot->prepared.status();
  if (memoizable) MemoPut(memo, slot->prepared->key);
  return slot->prepared->key;
}

std::shared_ptr<CompileService::Pending> CompileService::Start(const CompileCall& call, Done done) {
  auto pending = std::make_shared<Pending>();
  pending->done_ = std::move(done);
  const absl::Time start = absl::Now();

  const bool memoizable = call.program.kind != driver::ProgramInput::Kind::kProgram;
  const std::string memo = memoizable ? MemoKey(call) : "";
  std::optional<std::string> key;
  if (memoizable) key = MemoGet(memo);
  if (key) {
    // A request seen before: answered here, without the frontend.
    counters_.memo_hits.fetch_add(1, std::memory_order_relaxed);
    absl::StatusOr<kiln::v1::ArtifactMetadata> hit = Lookup(*key);
    if (hit.ok()) {
      counters_.hits.fetch_add(1, std::memory_order_relaxed);
      CompileReply reply;
      reply.metadata = *std::move(hit);
      reply.outcome = kiln::v1::CACHE_OUTCOME_HIT;
      reply.server_seconds = SecondsSince(start);
      pending->Complete(std::move(reply));
      return pending;
    }
    if (hit.status().code() != absl::StatusCode::kNotFound) {
      pending->Complete(hit.status());
      return pending;
    }
    // The memo knew the key, but the artifact is gone (evicted): the build
    // needs the program again.
  }

  // The frontend runs the client's Python: on the prepare pool, never on
  // the caller's (gRPC) thread; identical requests share one run.
  auto owned = std::make_shared<CompileCall>(call);
  owned->program.limits = LimitsFor(call);
  StartPrepare(PrepareWaiter{pending, std::move(owned), key.has_value(), start}, memo);
  return pending;
}

void CompileService::StartPrepare(PrepareWaiter w, const std::string& memo) {
  if (!memo.empty()) {
    absl::MutexLock lock(&prepare_mu_);
    auto [it, started] = preparing_.try_emplace(memo);
    if (!started) {
      counters_.prepares_joined.fetch_add(1, std::memory_order_relaxed);
      it->second.push_back(std::move(w));
      return;
    }
  }
  counters_.prepares.fetch_add(1, std::memory_order_relaxed);
  auto leader = std::make_shared<PrepareWaiter>(std::move(w));
  auto run = [this, leader, memo](const std::atomic<bool>* cancelled) {
    leader->call->program.limits.cancelled = cancelled;
    FinishPrepare(*leader, memo, driver::Prepare(leader->call->program, leader->call->options));
  };
  if (prepare_ == nullptr) {
    run(nullptr);
    return;
  }
  absl::StatusOr<std::shared_ptr<PreparePool::Task>> task = prepare_->Submit(
      leader->call->client, leader->call->deadline, std::move(run),
      [this, leader, memo](absl::Status why) { FinishPrepare(*leader, memo, std::move(why)); });
  if (!task.ok()) {
    FinishPrepare(*leader, memo, task.status());
    return;
  }
  const std::shared_ptr<Pending>& pending = leader->pending;
  {
    absl::MutexLock lock(&pending->mu_);
    pending->prepare_ = *task;
  }
  if (pending->completed_.load()) (*task)->Cancel(); // cancelled before the task was noted
}

void CompileService::FinishPrepare(const PrepareWaiter& leader, const std::string& memo,
                                   absl::StatusOr<driver::Prepared> prepared) {
  std::vector<PrepareWaiter> joined;
  if (!memo.empty()) {
    absl::MutexLock lock(&prepare_mu_);
    auto it = preparing_.find(memo);
    if (it != preparing_.end()) {
      joined = std::move(it->second);
      preparing_.erase(it);
    }
  }
  if (!prepared.ok()) {
    const absl::Status& why = prepared.status();
    leader.pending->Complete(why);
    // The leader's own cancel or deadline, or its client's full queue, says
    // nothing about the program: those who joined start again (one of them
    // leads). Anything else (a located error, the budget, shutdown) is the
    // program's or the daemon's, and theirs too.
    const bool leaders_own =
        absl::IsCancelled(why) || absl::IsDeadlineExceeded(why) || IsQueueFull(why);
    for (PrepareWaiter& w : joined) {
      if (w.pending->completed_.load()) continue; // gave up while waiting
      if (leaders_own) {
        StartPrepare(std::move(w), memo);
      } else {
        w.pending->Complete(why);
      }
    }
    return;
  }
  if (!leader.looked_up && !memo.empty()) MemoPut(memo, prepared->key);
  auto shared = std::make_shared<const driver::Prepared>(*std::move(prepared));
  if (!leader.pending->completed_.load()) {
    Continue(leader.pending, *leader.call, shared, leader.looked_up, leader.start);
  }
  for (const PrepareWaiter& w : joined) {
    if (!w.pending->completed_.load()) Continue(w.pending, *w.call, shared, w.looked_up, w.start);
  }
}

void CompileService::Continue(const std::shared_ptr<Pending>& pending, const CompileCall& call,
                              std::shared_ptr<const driver::Prepared> prepared, bool looked_up,
                              absl::Time start) {
  const std::optional<std::string> key = prepared->key;
  if (!looked_up) {
    absl::StatusOr<kiln::v1::ArtifactMetadata> hit = Lookup(*key);
    if (hit.ok()) {
      counters_.hits.fetch_add(1, std::memory_order_relaxed);
      CompileReply reply;
      reply.metadata = *std::move(hit);
      reply.outcome = kiln::v1::CACHE_OUTCOME_HIT;
      reply.server_seconds = SecondsSince(start);
      pending->Complete(std::move(reply));
      return;
    }
    if (hit.status().code() != absl::StatusCode::kNotFound) {
      pending->Complete(hit.status());
      return;
    }
  }

  JobManager::Joined joined =
      jobs_->JoinOrCreate(kiln::v1::JOB_KIND_COMPILE, *key, /*held=*/call.async, call.identity);
  std::shared_ptr<Job> job = joined.job;
  if (joined.created) {
    std::shared_ptr<const driver::Prepared> shared_prepared = std::move(prepared);
    const driver::BuildOptions options = call.options;
    absl::Status queued = pool_->Submit(
        call.priority, call.client,
        [this, job, shared_prepared, options] { RunJob(job, *shared_prepared, options); },
        [job] { job->Fail(absl::CancelledError("the daemon shut down before the compile ran")); });
    if (!queued.ok()) {
      job->Fail(queued);
      pending->Complete(queued);
      return;
    }
  }
  const kiln::v1::CacheOutcome outcome =
      joined.created ? kiln::v1::CACHE_OUTCOME_MISS : kiln::v1::CACHE_OUTCOME_JOINED;
  if (call.async) {
    CompileReply reply;
    reply.outcome = outcome;
    reply.job_id = job->id();
    reply.server_seconds = SecondsSince(start);
    pending->Complete(std::move(reply));
    return;
  }
  Wait(pending, job, outcome, start);
}

void CompileService::Wait(const std::shared_ptr<Pending>& pending, const std::shared_ptr<Job>& job,
                          kiln::v1::CacheOutcome outcome, absl::Time start) {
  job->Attach();
  {
    absl::MutexLock lock(&pending->mu_);
    pending->job_ = job;
  }
  if (pending->completed_.load()) { // cancelled before it could wait
    job->Detach();
    return;
  }
  job->OnDone([this, pending, outcome, start](const Job& j) {
    absl::StatusOr<CompileReply> reply;
    if (const CompileJobResult* r = j.result<CompileJobResult>()) {
      CompileReply ok;
      ok.metadata = r->metadata;
      ok.outcome = r->from_cache ? kiln::v1::CACHE_OUTCOME_HIT : outcome;
      ok.job_id = j.id();
      ok.server_seconds = SecondsSince(start);
      reply = std::move(ok);
    } else {
      reply = j.status();
    }
    if (reply.ok()) {
      (reply->outcome == kiln::v1::CACHE_OUTCOME_HIT    ? counters_.hits
       : reply->outcome == kiln::v1::CACHE_OUTCOME_MISS ? counters_.misses
                                                        : counters_.joined)
          .fetch_add(1, std::memory_order_relaxed);
    }
    std::shared_ptr<Job> held;
    {
      absl::MutexLock lock(&pending->mu_);
      held = pending->job_;
    }
    if (pending->Complete(std::move(reply)) && held) held->Detach();
  });
}

void CompileService::RunJob(const std::shared_ptr<Job>& job, const driver::Prepared& prepared,
                            const driver::BuildOptions& options) {
  if (!job->Start("compiling")) return; // cancelled while queued
  absl::StatusOr<kiln::v1::ArtifactMetadata> hit = Lookup(prepared.key);
  if (hit.ok()) {
    job->Succeed(CompileJobResult{*std::move(hit), true}, "found in the cache");
    return;
  }
  if (job->cancel_requested()) {
    job->Fail(absl::CancelledError("cancelled before the compile started"));
    return;
  }
  // A full disk is found before the build, not after it. The store's
  // message names server paths: it goes to the log; the client is told
  // what happened without them.
  if (absl::Status room = store_->CheckRoom(); !room.ok()) {
    util::LogWarning("compile refused: no room to store its artifact",
                     {{"job_id", job->id()}, {"key", prepared.key}, {"error", room.message()}});
    if (room.code() == absl::StatusCode::kResourceExhausted) {
      job->Fail(absl::ResourceExhaustedError(kNoRoomMessage));
      return;
    }
  }
  job->SetProgress(0.1, absl::StrCat("compiling for ", options.target));
  const absl::Time t0 = absl::Now();
  absl::StatusOr<driver::Built> built = driver::Build(prepared, options);
  const double seconds = SecondsSince(t0);
  counters_.builds.fetch_add(1, std::memory_order_relaxed);
  if (on_build_) on_build_(options.target, seconds, built.ok());
  const std::string error = built.ok() ? "" : absl::StrCat(built.status().message());
  auto phase_ms = [&built](const char* phase) {
    if (!built.ok()) return 0.0;
    auto it = built->timings.find(phase);
    return it == built->timings.end() ? 0.0 : it->second * 1000;
  };
  util::LogInfo(built.ok() ? "compiled" : "compile failed",
                {{"job_id", job->id()},
                 {"key", prepared.key},
                 {"target", options.target},
                 {"ms", seconds * 1000},
                 {"lower_emit_ms", phase_ms("lower_emit")},
                 {"toolchain_ms", phase_ms("toolchain")},
                 {"error", error}});
  if (!built.ok()) {
    counters_.build_failures.fetch_add(1, std::memory_order_relaxed);
    job->Fail(built.status());
    return;
  }
  job->SetProgress(0.9, "storing the artifact");
  kiln::v1::ArtifactMetadata metadata =
      MakeArtifactMetadata(prepared.key, options, prepared, *built);
  if (absl::Status s = store_->Put(prepared.key, MakeCacheArtifact(metadata, *built)); !s.ok()) {
    // The store's message may name server paths: the log has it.
    util::LogWarning("compiled, but the cache could not store the artifact",
                     {{"job_id", job->id()}, {"key", prepared.key}, {"error", s.message()}});
    job->Fail(absl::Status(s.code(),
                           absl::StrCat("compiled, but the cache could not store the artifact (",
                                        absl::StatusCodeToString(s.code()), "); retry later")));
    return;
  }
  job->Succeed(CompileJobResult{std::move(metadata), false}, "compiled");
}

absl::StatusOr<CompileReply> CompileService::CompileSync(const CompileCall& call,
                                                         absl::Time deadline) {
  struct Slot {
    absl::Notification done;
    absl::StatusOr<CompileReply> reply = absl::UnknownError("no reply");
  };
  auto slot = std::make_shared<Slot>();
  std::shared_ptr<Pending> pending = Start(call, [slot](absl::StatusOr<CompileReply> r) {
    slot->reply = std::move(r);
    slot->done.Notify();
  });
  if (!slot->done.WaitForNotificationWithDeadline(deadline)) {
    pending->Cancel();
    slot->done.WaitForNotification();
    return absl::DeadlineExceededError("the compile did not finish before the deadline");
  }
  return slot->reply;
}

} // namespace kiln::server
