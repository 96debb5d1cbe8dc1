// The daemon's jobs: creation with ids, singleflight (identical requests of
// one kind share the unfinished job for their key), lookup by id for
// GetJob/WatchJob/CancelJob and re-attachment, and persistence of every job's
// record (the cache's SQLite in kilnd) so that results survive a restart.
//
// Records are written when a job is created, starts and finishes (not on
// every progress step). A job that a previous process left QUEUED or RUNNING
// is marked FAILED ("interrupted: the daemon stopped") by
// RecoverInterrupted() at start-up, so no client waits on it forever.
//
// Memory: live jobs, plus the most recent finished ones, at most
// `keep_finished` of them and `keep_finished_bytes` of their Job::MemoryBytes
// (issue 27: under rpc_fuzz the 10,000 kept held up to 2 MB each); older ones
// are answered from the store. The store keeps the newest `keep_records`
// finished records (older ones are pruned as jobs finish: GetJob answers
// NOT_FOUND for them), so the job table does not grow with every request
// served either; unfinished records are never pruned.
//
// Listing costs O(limit log n), not O(jobs kept): the jobs in memory are also
// indexed in ListJobs' order (newest first, then by id), all of them and per
// party (owner or joiner), and a list walks the index only as far as its
// limit; the store is asked for `limit` records (a tenant's list asks for
// more only while the store's records can still be among its newest).
//
// Thread-safe. Lock order: JobManager::mu_ before Job::mu_ is never taken
// (the manager reads jobs only through their own thread-safe methods, after
// releasing mu_), so job callbacks may call back into the manager.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "kiln/v1/service.pb.h"
#include "server/job.h"

namespace kiln::server {

// Where job records live. Implementations are thread-safe.
class JobStore {
 public:
  virtual ~JobStore() = default;
  // Inserts or replaces the record with job.id().
  virtual absl::Status Save(const kiln::v1::Job& job) = 0;
  // NotFound when there is no such job.
  virtual absl::StatusOr<kiln::v1::Job> Load(const std::string& id) = 0;
  // Newest first (created_unix_ms), ties by id; limit <= 0: all.
  virtual absl::StatusOr<std::vector<kiln::v1::Job>> List(int64_t limit) = 0;
  // The same, only records created at or after `min_created_unix_ms`.
  virtual absl::StatusOr<std::vector<kiln::v1::Job>> ListSince(int64_t limit,
                                                               int64_t min_created_unix_ms) = 0;
  // Deletes finished records but the newest `keep` (by created_unix_ms);
  // unfinished ones stay. Returns how many were deleted.
  virtual absl::StatusOr<int64_t> PruneFinished(int64_t keep) = 0;
};

// A JobStore in memory (tests, and a daemon run without persistence).
class MemoryJobStore final : public JobStore {
 public:
  absl::Status Save(const kiln::v1::Job& job) override;
  absl::StatusOr<kiln::v1::Job> Load(const std::string& id) override;
  absl::StatusOr<std::vector<kiln::v1::Job>> List(int64_t limit) override;
  absl::StatusOr<std::vector<kiln::v1::Job>> ListSince(int64_t limit,
                                                       int64_t min_created_unix_ms) override;
  absl::StatusOr<int64_t> PruneFinished(int64_t keep) override;

 private:
  absl::Mutex mu_;
  std::map<std::string, kiln::v1::Job> jobs_ ABSL_GUARDED_BY(mu_);
};

// Whose jobs a request may see, watch and cancel: those its identity owns
// or joined, or every job (an admin). See Job for ownership.
struct JobViewer {
  std::string identity; // "": the anonymous identity of a daemon without tokens
  bool admin = false;

  bool Sees(const Job& job) const { return admin || job.HasParty(identity); }
  bool Sees(const kiln::v1::Job& record) const;
  // The record as this viewer may read it: other identities' names (the
  // owner, when not the viewer, and joined_by) are an admin's to see.
  void Redact(kiln::v1::Job* record) const;
};

class JobManager {
 public:
  // `store` must outlive the manager; nullptr: records are not persisted.
  // keep_records <= 0: the store keeps every record.
  explicit JobManager(JobStore* store, size_t keep_finished = kDefaultKeepFinished,
                      size_t keep_finished_bytes = kDefaultKeepFinishedBytes,
                      int64_t keep_records = kDefaultKeepRecords);
  static constexpr size_t kDefaultKeepFinished = 10000;
  static constexpr size_t kDefaultKeepFinishedBytes = size_t{64} << 20;
  static constexpr int64_t kDefaultKeepRecords = 100000;
  // The store is pruned once per this many finished jobs (and when the
  // manager starts: RecoverInterrupted).
  static constexpr int64_t kPruneEvery = 1000;
  ~JobManager();
  JobManager(const JobManager&) = delete;
  JobManager& operator=(const JobManager&) = delete;

  struct Joined {
    std::shared_ptr<Job> job;
    bool created = false; // false: joined an unfinished job
  };
  // The unfinished job of `kind` for `key`, or a new QUEUED one (created).
  // `held`: a new job keeps running without waiters (async requests).
  // `identity` owns a new job, or becomes a party to the joined one.
  Joined JoinOrCreate(kiln::v1::JobKind kind, const std::string& key, bool held,
                      const std::string& identity = "");
  // Always a new job (work that is not shared, e.g. a benchmark), owned by
  // `identity`.
  std::shared_ptr<Job> Create(kiln::v1::JobKind kind, const std::string& key, bool held,
                              const std::string& identity = "");

  // A job of this process (live or recently finished), or nullptr.
  std::shared_ptr<Job> Find(const std::string& id);
  // Its snapshot, or the stored record of an older one; NotFound otherwise.
  absl::StatusOr<kiln::v1::Job> Get(const std::string& id);
  // Recent jobs, newest first: this process's, then stored ones.
  std::vector<kiln::v1::Job> List(int64_t limit);
  // The same for one viewer (GetJob, WatchJob, ListJobs, CancelJob): a job
  // it may not see is answered exactly like one that does not exist
  // (nullptr, NotFound "no job 'ID'"), so ids of other tenants' jobs leak
  // nothing. Records are redacted (JobViewer::Redact).
  std::shared_ptr<Job> FindFor(const std::string& id, const JobViewer& viewer);
  absl::StatusOr<kiln::v1::Job> GetFor(const std::string& id, const JobViewer& viewer);
  std::vector<kiln::v1::Job> ListFor(int64_t limit, const JobViewer& viewer);
  // CancelJob: an admin cancels the job; a party withdraws from it (the job
  // is cancelled when no party wants it any more, see Job::Withdraw). The
  // job's record after that; NotFound as for GetFor. A finished job is
  // answered as it is.
  absl::StatusOr<kiln::v1::Job> CancelFor(const std::string& id, const JobViewer& viewer);

  // Live jobs by state (for metrics).
  std::map<kiln::v1::JobState, int64_t> CountByState();

  // Jobs of this process that List/ListFor have read (snapshotted or checked
  // against a viewer) since the manager was made: the work a list does, for
  // tests and benchmarks (a list reads at most about `limit` of them).
  int64_t jobs_visited() const { return jobs_visited_.load(std::memory_order_relaxed); }

  // Marks records left QUEUED/RUNNING by an earlier process as FAILED.
  // Returns how many.
  absl::StatusOr<int64_t> RecoverInterrupted();
  // Requests cancellation of every unfinished job (shutdown).
  void CancelAll();
  // Fails every unfinished job with `why` (FAILED, or CANCELLED for a
  // Cancelled status; the record is saved, so a client asking after a
  // restart learns what happened) and asks running work to stop. For
  // shutdown, once the grace period is over.
  void FailUnfinished(const absl::Status& why);

  // Told of every job's state changes (metrics): `from` is empty for a new
  // job. Set before the first job is created.
  using Observer = std::function<void(
      kiln::v1::JobKind kind, std::optional<kiln::v1::JobState> from, kiln::v1::JobState to)>;
  void set_observer(Observer observer) { observer_ = std::move(observer); }

  // Persists a job's current snapshot (also called on final transitions).
  void Persist(const Job& job);
  // Prunes the store to the newest keep_records finished records now
  // (also done every kPruneEvery finished jobs). Returns how many went.
  absl::StatusOr<int64_t> PruneStore();
  // Finished jobs in memory and their MemoryBytes (tests, metrics).
  size_t finished_in_memory();
  size_t finished_bytes_in_memory();

 private:
  std::shared_ptr<Job> NewJob(kiln::v1::JobKind kind, const std::string& key, bool held,
                              const std::string& identity) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnFinal(const Job& job);

  // ListJobs' order: newest first, then by id.
  using OrderKey = std::pair<int64_t, std::string>; // (created_unix_ms, id)
  struct NewestFirst {
    bool operator()(const OrderKey& a, const OrderKey& b) const {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    }
  };
  using Order = std::set<OrderKey, NewestFirst>;
  static OrderKey KeyOf(const Job& job) { return {job.created_unix_ms(), job.id()}; }
  // The jobs in memory (by_id_) that `identity` may be a party to, in order
  // (every job for nullptr), from the first after `after` (from the newest
  // when nullopt), at most `n` (n <= 0: all).
  std::vector<std::shared_ptr<Job>> Newest(const std::string* identity,
                                           const std::optional<OrderKey>& after, int64_t n);
  // The stored records of jobs not in memory that `viewer` sees, newest
  // first, at most `limit` (<= 0: all); none after `stop` when given (those
  // could not make the list).
  std::vector<kiln::v1::Job> StoredFor(int64_t limit, const JobViewer* viewer,
                                       const std::optional<OrderKey>& stop);

  JobStore* const store_;
  Observer observer_;
  const size_t keep_finished_;
  const size_t keep_finished_bytes_;
  const int64_t keep_records_;
  std::atomic<int64_t> finals_{0}; // jobs finished, for kPruneEvery

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Job>> by_id_ ABSL_GUARDED_BY(mu_);
  // (kind, key) -> the unfinished job that identical requests join.
  std::map<std::pair<int, std::string>, std::shared_ptr<Job>> inflight_ ABSL_GUARDED_BY(mu_);
  // Finished jobs in memory, oldest first, with their MemoryBytes, and the
  // sum of those.
  std::deque<std::pair<std::string, size_t>> finished_ ABSL_GUARDED_BY(mu_);
  size_t finished_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Every job of by_id_ in ListJobs' order, and per identity the jobs it
  // owns or joined (a superset of HasParty only while a Join is under way).
  Order newest_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Order> by_party_ ABSL_GUARDED_BY(mu_);
  // The identities of by_party_ that list each job (to unindex it).
  absl::flat_hash_map<std::string, std::vector<std::string>> parties_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> jobs_visited_{0};
};

// "j-" followed by 16 random hex digits.
std::string NewJobId();

} // namespace kiln::server
