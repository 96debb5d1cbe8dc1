// Compile, cache-or-compile: the business logic behind the Compile RPC,
// callable without gRPC.
//
//  1. Key. A memo from the request's bytes (program, bindings, entry,
//     target, canonical options) to its cache key skips the frontend for a
//     repeated request; otherwise driver::Prepare parses and specializes
//     the program (a bad program fails here with its located diagnostic).
//  2. Hit. The artifact's metadata file is read from the store: HIT.
//  3. Miss. Singleflight: the unfinished compile job for the key is joined
//     (JOINED), or a new one is queued on the pool (MISS). The job re-checks
//     the store before building (a compile that finished between this
//     request's miss and its job counts as a HIT), builds, publishes the
//     artifact, and only then leaves the singleflight table, so a later
//     request either joins it or hits.
//     A request seen before takes a shorter path still (TryRequestHit): a
//     128-bit digest of the request message's own fields (XXH3-128, no
//     conversion and no copy of the source) maps to the key an earlier,
//     fully converted request of the same digest found. The gRPC adapter
//     goes one step further (TryRequestHitEncoded): a digest of the request's
//     serialized bytes, before any parse, answered with the stored
//     metadata's own bytes.
//  1a. The frontend runs the client's program at compile time, bounded by
//     the evaluation budget; it runs on the prepare pool (never on the
//     caller's thread, which is a gRPC thread that also answers hits), with
//     the call's deadline, and Cancel() stops it. Identical requests (same
//     memo key) share one run: the first starts it, the others wait for its
//     result without taking a prepare slot, so a fan-out of hundreds of
//     identical cold calls is one frontend run and one compile. When the
//     run fails for a reason of its starter's own (its cancel, its
//     deadline, its client's full queue), the waiters start again.
//  4. Waiting. Start() never blocks a caller's thread: `done` runs once,
//     at once for hits and errors, else in the pool thread that finishes the
//     job. Cancel() (the RPC was cancelled or timed out) detaches the caller;
//     a job that no caller waits for and nobody holds (async requests) is
//     cancelled, one others share goes on.
//
// Thread-safe. The store, job manager and pools must outlive the service;
// the prepare pool is shut down before the service goes (its tasks call
// back into it).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "compiler/driver/compile_driver.h"
#include "kiln/v1/service.pb.h"
#include "server/artifact_store.h"
#include "server/compile_pool.h"
#include "server/job_manager.h"
#include "server/prepare_pool.h"

namespace kiln::server {

struct CompileCall {
  driver::ProgramInput program;
  driver::BuildOptions options;
  std::string client = "anonymous"; // fair share between clients
  std::string identity; // owns, or joins, the call's job (Caller::identity; "": anonymous)
  Priority priority = Priority::kInteractive;
  // Return once the job is queued; the job runs without waiters.
  bool async = false;
  // The caller's deadline (the RPC's): the frontend's evaluation stops
  // with DeadlineExceeded past it.
  absl::Time deadline = absl::InfiniteFuture();
};

struct CompileReply {
  kiln::v1::ArtifactMetadata metadata; // empty for an async reply
  kiln::v1::CacheOutcome outcome = kiln::v1::CACHE_OUTCOME_UNSPECIFIED;
  std::string job_id; // empty for a hit
  double server_seconds = 0;
};

// Counters the service keeps (metrics read them).
struct CompileCounters {
  std::atomic<int64_t> hits{0}, misses{0}, joined{0}, builds{0}, build_failures{0};
  std::atomic<int64_t> memo_hits{0};
  // Frontend runs started, and identical requests that waited for one
  // already running instead of starting their own.
  std::atomic<int64_t> prepares{0}, prepares_joined{0};
};

class CompileService {
 public:
  using Done = std::function<void(absl::StatusOr<CompileReply>)>;

  // `prepare`: where the frontend of requests runs (prepare_pool.h);
  // null: on the caller's thread (tests, tools).
  CompileService(ArtifactStore* store, JobManager* jobs, CompilePool* pool,
                 PreparePool* prepare = nullptr);

  // The budget of each request's compile-time evaluation (the request's
  // deadline is added per call). Set before the first Start.
  void set_eval_limits(const frontend::EvalLimits& limits) { eval_limits_ = limits; }
  // Those limits, for the evaluations other services run themselves (a
  // tune's planner).
  const frontend::EvalLimits& eval_limits() const { return eval_limits_; }

  // A caller's interest in one compile.
  class Pending {
   public:
    // Detaches the caller (if still waiting) and calls done(Cancelled).
    void Cancel();

   private:
    friend class CompileService;
    bool Complete(absl::StatusOr<CompileReply> reply);
    std::atomic<bool> completed_{false};
    Done done_;
    std::shared_ptr<Job> job_; // set once the caller waits on a job
    // The frontend's task while it is queued or runs: Cancel stops it.
    std::shared_ptr<PreparePool::Task> prepare_;
    absl::Mutex mu_;
  };

  std::shared_ptr<Pending> Start(const CompileCall& call, Done done);
  // Start + wait (tests, in-process callers). DeadlineExceeded past
  // `deadline`, after detaching.
  absl::StatusOr<CompileReply> CompileSync(const CompileCall& call,
                                           absl::Time deadline = absl::InfiniteFuture());

  // The key of a request (memo, else Prepare on the prepare pool, waited
  // for) without compiling.
  absl::StatusOr<std::string> KeyOf(const CompileCall& call);

  // The request fast path (step 1 above). `digest` is DigestOf(request).
  // On true, `*metadata` is the stored artifact's and the hit is counted;
  // false (never seen, evicted, or the artifact is gone) means: take Start.
  using RequestDigest = std::pair<uint64_t, uint64_t>;
  // Nullopt for requests the fast path does not take (IR messages, best
  // configs, async): their key depends on more than the request's bytes.
  static std::optional<RequestDigest> DigestOf(const kiln::v1::CompileRequest& request);
  bool TryRequestHit(const RequestDigest& digest, kiln::v1::ArtifactMetadata* metadata);
  // The same keyed by a serialized request's own bytes (a repeated request
  // arrives as the same bytes; the gRPC adapter looks it up before parsing):
  // on true, `*encoded` is the stored artifact's metadata message, already
  // in wire form. Learn such a digest only for a request DigestOf takes.
  static RequestDigest DigestOfBytes(absl::string_view request_bytes);
  bool TryRequestHitEncoded(const RequestDigest& digest, std::string* encoded);
  // Records that requests with `digest` have cache key `key`.
  void LearnRequest(const RequestDigest& digest, const std::string& key);

  const CompileCounters& counters() const { return counters_; }
  // Observes each build's wall time (metrics: the compile latency histogram).
  void set_on_build(std::function<void(const std::string& target, double seconds, bool ok)> fn) {
    on_build_ = std::move(fn);
  }

 private:
  // The memo's key for a request: everything that determines the program
  // and the options, length-prefixed (its SHA-256 when large).
  static std::string MemoKey(const CompileCall& call);
  std::optional<std::string> MemoGet(const std::string& memo_key);
  void MemoPut(const std::string& memo_key, const std::string& key);

  struct HitEntry;
  // Reads the metadata of a stored artifact; NotFound on a miss.
  absl::StatusOr<kiln::v1::ArtifactMetadata> Lookup(const std::string& key);
  // The same into `*metadata` and/or `*encoded` (its wire form), either may
  // be null (one copy each; Lookup is this).
  absl::Status LookupInto(const std::string& key, kiln::v1::ArtifactMetadata* metadata,
                          std::string* encoded);
  absl::Status LookupStore(const std::string& key, HitEntry* entry);
  std::optional<std::string> LearnedKey(const RequestDigest& digest);
  // The two fast paths: a learned digest whose artifact is stored, counted.
  bool LearnedHit(const RequestDigest& digest, kiln::v1::ArtifactMetadata* metadata,
                  std::string* encoded);
  // The service's evaluation budget with the call's deadline (the
  // cancellation flag is the prepare task's).
  frontend::EvalLimits LimitsFor(const CompileCall& call) const;
  // Start after the frontend (on a prepare thread, or the caller's): the
  // store (unless `looked_up`: the memo's key was looked up already), then
  // the job.
  void Continue(const std::shared_ptr<Pending>& pending, const CompileCall& call,
                std::shared_ptr<const driver::Prepared> prepared, bool looked_up, absl::Time start);
  // A request waiting for its frontend run (1a).
  struct PrepareWaiter {
    std::shared_ptr<Pending> pending;
    std::shared_ptr<CompileCall> call; // its limits carry the call's deadline
    bool looked_up = false;            // Continue's
    absl::Time start;
  };
  // Starts the frontend run for `w`, or joins the one running for `memo`
  // (empty: not memoizable, never shared).
  void StartPrepare(PrepareWaiter w, const std::string& memo);
  // The run for `memo` that `leader` started ended: `leader` and every
  // request that joined it go on (Continue) or fail.
  void FinishPrepare(const PrepareWaiter& leader, const std::string& memo,
                     absl::StatusOr<driver::Prepared> prepared);
  void RunJob(const std::shared_ptr<Job>& job, const driver::Prepared& prepared,
              const driver::BuildOptions& options);
  void Wait(const std::shared_ptr<Pending>& pending, const std::shared_ptr<Job>& job,
            kiln::v1::CacheOutcome outcome, absl::Time start);

  ArtifactStore* const store_;
  JobManager* const jobs_;
  CompilePool* const pool_;
  PreparePool* const prepare_;
  frontend::EvalLimits eval_limits_;
  CompileCounters counters_;
  std::function<void(const std::string&, double, bool)> on_build_;

  // Frontend runs in progress by memo key, with the requests that joined
  // each (1a). A leaf lock: nothing is called while it is held.
  absl::Mutex prepare_mu_;
  absl::flat_hash_map<std::string, std::vector<PrepareWaiter>>
      preparing_ ABSL_GUARDED_BY(prepare_mu_);

  // Two generations: lookups see both, inserts go to `memo_`; when it is
  // full it becomes `memo_old_` (bounded memory, recent keys kept).
  absl::Mutex memo_mu_;
  absl::flat_hash_map<std::string, std::string> memo_ ABSL_GUARDED_BY(memo_mu_);
  absl::flat_hash_map<std::string, std::string> memo_old_ ABSL_GUARDED_BY(memo_mu_);
  size_t memo_bytes_ ABSL_GUARDED_BY(memo_mu_) = 0; // in memo_
  // Request digest -> key, in two generations like memo_.
  absl::flat_hash_map<RequestDigest, std::string> requests_ ABSL_GUARDED_BY(memo_mu_);
  absl::flat_hash_map<RequestDigest, std::string> requests_old_ ABSL_GUARDED_BY(memo_mu_);

  // Hit memo: the metadata of recently served keys, for one second, so a
  // burst of hits on one kernel reads its metadata file once. An entry holds
  // what a verified read returned (the store proved the bytes against their
  // address and the key against the request) and is trusted only while the
  // store's Generation() is the one noted before that read: once this
  // process finds any artifact damaged, evicts or replaces one, every entry
  // is read again, so a damaged entry is never answered from here. Removals
  // by another process sharing the cache directory can go unseen for up to
  // the second (the cache's own index memo has the same window); the bytes
  // a client then fetches are verified again by GetArtifact.
  struct HitEntry {
    kiln::v1::ArtifactMetadata metadata;
    std::string encoded; // metadata's wire form, as stored
    absl::Time expires;
    uint64_t generation = 0; // the store's Generation() before the read
  };
  absl::Mutex hit_mu_;
  absl::flat_hash_map<std::string, HitEntry> hit_memo_ ABSL_GUARDED_BY(hit_mu_);
};

// The result a compile job stores (Job::result<CompileJobResult>()).
struct CompileJobResult {
  kiln::v1::ArtifactMetadata metadata;
  bool from_cache = false; // another compile stored it first
};

} // namespace kiln::server
