// One unit of daemon work (a compile, a tuning sweep, a benchmark): its id,
// state, progress and result, shared by every request attached to it.
//
// Life cycle: QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED (QUEUED may
// go straight to a final state). A final state is never left. Every change
// bumps version(), so watchers (WatchJob) can wait for "anything newer than
// what I saw" without missing or repeating an update.
//
// Cancellation is cooperative: RequestCancel() sets a flag that the running
// work checks between steps (a queued job is cancelled before it starts).
// Attach()/Detach() count the requests waiting on the job (singleflight
// joiners); a job that nobody waits for and nobody holds (`held`, set for
// async requests and jobs re-attached by id) is cancelled when its last
// waiter leaves, so a client that gives up does not leave work behind that
// no one wants, while work someone else shares goes on.
//
// Ownership: a job belongs to the identity that created it (its owner: a
// token's client name, "" for the one anonymous identity of a daemon without
// tokens); an identity whose identical request joined it (singleflight) is a
// party to it too. Parties see the job; each may withdraw (CancelJob), and
// the job is cancelled when its last party withdraws, so that no identity
// can cancel work another still wants (an admin's cancel is RequestCancel).
//
// Size: what a job keeps of client-controlled text is bounded (issue 27: under
// rpc_fuzz, 1 MB keys and failure messages echoing 1 MB request fields made
// job records of up to 2 MB, kept in memory, in the store and in every
// ListJobs answer): a key past kMaxJobKeyBytes is kept as BoundJobKey's
// digest form, and messages (progress, the failure's status message, the
// errors of the tune progress' measurements) are cut to kMaxJobMessageBytes
// as gRPC status messages are.
//
// Thread-safe: all methods may be called from any thread.
#pragma once

#include <any>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kiln/v1/service.pb.h"

namespace kiln::server {

// The most bytes of a job's message (and of its failure's status message):
// the same as a gRPC status message's (server/grpc_status.h), so a client
// sees the same text from the call and from GetJob.
inline constexpr size_t kMaxJobMessageBytes = 4096;
// The most bytes of a job's key as kept and shown (Job.key).
inline constexpr size_t kMaxJobKeyBytes = 1024;

// `key` unchanged when it has at most kMaxJobKeyBytes, else its first 256
// bytes (cut on a UTF-8 boundary) followed by "...[sha256:HEX]", the SHA-256
// of the whole key: distinct keys stay distinct, so singleflight (which
// joins jobs by key) is unchanged.
std::string BoundJobKey(std::string key);

class Job {
 public:
  // `owner`: the identity that creates it ("": anonymous).
  Job(std::string id, kiln::v1::JobKind kind, std::string key, bool held, std::string owner = "");

  const std::string& id() const { return id_; }
  kiln::v1::JobKind kind() const { return kind_; }
  const std::string& key() const { return key_; }
  const std::string& owner() const { return owner_; }
  // When the job was made (fixed; the snapshot's created_unix_ms).
  int64_t created_unix_ms() const { return created_unix_ms_; }

  // Makes `identity` a party (it joined the job); the owner already is one.
  void Join(const std::string& identity);
  // Whether `identity` is the owner or joined.
  bool HasParty(const std::string& identity) const;
  // `identity` no longer wants the job: when no other party still does, the
  // job's cancellation is requested (returns true). A party that withdrew
  // still sees the job; joining again makes it want the job again.
  bool Withdraw(const std::string& identity);

  // The job as the API shows it (waiters, owner and joined_by filled in).
  kiln::v1::Job Snapshot() const;
  uint64_t version() const;
  bool done() const;

  // QUEUED -> RUNNING; false if the job is already final (cancelled while
  // queued): the caller must not start the work.
  bool Start(const std::string& message);
  // Progress 0..1 and the current step; ignored once final.
  void SetProgress(double fraction, const std::string& message);
  // Tuning progress (kept in the snapshot).
  void SetTuneProgress(const kiln::v1::TuneProgress& progress);
  // Final states. `result` is whatever the job's kind produces (read back
  // with result<T>()); `result_bytes`, its size in memory as far as known
  // (MemoryBytes). Fail with a cancelled status records CANCELLED. Messages
  // are cut to kMaxJobMessageBytes.
  void Succeed(std::any result, const std::string& message = "", size_t result_bytes = 0);
  void Fail(const absl::Status& status);

  // About the bytes this job holds (its record's text, tune progress, the
  // failure's payloads and the result's declared size): what JobManager
  // counts against its memory bound.
  size_t MemoryBytes() const;

  // The failure (OK unless FAILED/CANCELLED).
  absl::Status status() const;
  // The success value, or nullptr when not succeeded or of another type.
  template <typename T>
  const T* result() const {
    absl::MutexLock lock(&mu_);
    return state_ == kiln::v1::JOB_STATE_SUCCEEDED ? std::any_cast<T>(&result_) : nullptr;
  }

  // Blocks until the job is final or `deadline` passes or `cancelled()`
  // returns true (polled every 50 ms). Returns done().
  bool WaitDone(absl::Time deadline, const std::function<bool()>& cancelled = nullptr) const;
  // Blocks until version() > `seen` (or the deadline); returns the version.
  uint64_t WaitNewer(uint64_t seen, absl::Time deadline) const;

  // Runs `fn` once the job is final: at once (in this thread) if it already
  // is, else in the thread that finishes it. Listeners must not block.
  void OnDone(std::function<void(const Job&)> fn);

  // Runs `fn` after every change (in the changing thread, outside the job's
  // lock; it must not block), until RemoveWatcher(returned id).
  uint64_t AddWatcher(std::function<void()> fn);
  void RemoveWatcher(uint64_t id);

  void RequestCancel();
  bool cancel_requested() const { return cancel_.load(std::memory_order_acquire); }
  // The flag RequestCancel sets, for a compile-time evaluation the job runs
  // itself (frontend::EvalLimits::cancelled); lives as long as the job.
  const std::atomic<bool>* cancel_flag() const { return &cancel_; }
  // Stopped by RequestCancel (for work that waits: device queues, workers).
  std::stop_token stop_token() const { return stop_.get_token(); }

  void Attach();
  // Returns true when this detach left the job with no waiter and not held,
  // and so requested its cancellation.
  bool Detach();
  // Keeps the job running without waiters (async requests, re-attach).
  void Hold();

  // Called after every final transition (by the job manager, to persist and
  // to drop singleflight entries). Set once, before the job is shared.
  void set_on_final(std::function<void(const Job&)> fn) { on_final_ = std::move(fn); }
  // Called after every state change with (from, to). Set once, before the
  // job is shared.
  void set_on_transition(std::function<void(kiln::v1::JobState, kiln::v1::JobState)> fn) {
    on_transition_ = std::move(fn);
  }

 private:
  void Finish(kiln::v1::JobState state, const std::string& message, std::any result,
              absl::Status status, size_t result_bytes);
  // Calls the watchers (after a change, without mu_ held).
  void Notify();

  const std::string id_;
  const kiln::v1::JobKind kind_;
  const std::string key_;
  const std::string owner_;
  const int64_t created_unix_ms_;
  std::atomic<bool> cancel_{false};
  std::stop_source stop_;
  std::function<void(const Job&)> on_final_;
  std::function<void(kiln::v1::JobState, kiln::v1::JobState)> on_transition_;

  mutable absl::Mutex mu_;
  kiln::v1::JobState state_ ABSL_GUARDED_BY(mu_) = kiln::v1::JOB_STATE_QUEUED;
  double progress_ ABSL_GUARDED_BY(mu_) = 0;
  std::string message_ ABSL_GUARDED_BY(mu_);
  int64_t finished_unix_ms_ ABSL_GUARDED_BY(mu_) = 0;
  int waiters_ ABSL_GUARDED_BY(mu_) = 0;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 1;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::any result_ ABSL_GUARDED_BY(mu_);
  size_t result_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::function<void(const Job&)>> listeners_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<uint64_t, std::function<void()>>> watchers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_watcher_ ABSL_GUARDED_BY(mu_) = 1;
  // Identities other than the owner that joined, in joining order, and the
  // parties (owner included) that withdrew.
  std::vector<std::string> joined_by_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> withdrawn_ ABSL_GUARDED_BY(mu_);
  kiln::v1::TuneProgress tune_progress_ ABSL_GUARDED_BY(mu_);
  bool has_tune_progress_ ABSL_GUARDED_BY(mu_) = false;
};

bool IsFinal(kiln::v1::JobState state);

} // namespace kiln::server
