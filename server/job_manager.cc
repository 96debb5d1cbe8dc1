#include "server/job_manager.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <random>

#include "absl/strings/str_format.h"

namespace kiln::server {

std::string NewJobId() {
  thread_local std::mt19937_64 rng(std::random_device{}() ^
                                   static_cast<uint64_t>(absl::GetCurrentTimeNanos()));
  return absl::StrFormat("j-%016x", rng());
}

// --- MemoryJobStore --------------------------------------------------------

absl::Status MemoryJobStore::Save(const kiln::v1::Job& job) {
  absl::MutexLock lock(&mu_);
  jobs_[job.id()] = job;
  return absl::OkStatus();
}

absl::StatusOr<kiln::v1::Job> MemoryJobStore::Load(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return absl::NotFoundError("no job '" + id + "'");
  return it->second;
}

absl::StatusOr<int64_t> MemoryJobStore::PruneFinished(int64_t keep) {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<int64_t, std::string>> finished; // (created, id)
  for (const auto& [id, job] : jobs_) {
    if (IsFinal(job.state())) finished.emplace_back(job.created_unix_ms(), id);
  }
  if (static_cast<int64_t>(finished.size()) <= keep) return 0;
  // Newest first, ties by id (as the cache's job log).
  std::sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  int64_t n = 0;
  for (size_t i = static_cast<size_t>(std::max<int64_t>(keep, 0)); i < finished.size(); ++i) {
    n += static_cast<int64_t>(jobs_.erase(finished[i].second));
  }
  return n;
}

absl::StatusOr<std::vector<kiln::v1::Job>> MemoryJobStore::List(int64_t limit) {
  return ListSince(limit, std::numeric_limits<int64_t>::min());
}

absl::StatusOr<std::vector<kiln::v1::Job>> MemoryJobStore::ListSince(int64_t limit,
                                                                     int64_t min_created_unix_ms) {
  absl::MutexLock lock(&mu_);
  std::vector<kiln::v1::Job> out;
  for (const auto& [id, job] : jobs_) {
    if (job.created_unix_ms() >= min_created_unix_ms) out.push_back(job);
  }
  // Ties by id, as the cache's job log orders them: a list's limit must cut
  // the same records every time.
  std::sort(out.begin(), out.end(), [](const kiln::v1::Job& a, const kiln::v1::Job& b) {
    return a.created_unix_ms() != b.created_unix_ms() ? a.created_unix_ms() > b.created_unix_ms()
                                                      : a.id() < b.id();
  });
  if (limit > 0 && out.size() > static_cast<size_t>(limit)) out.resize(limit);
  return out;
}

JobManager::JobManager(JobStore* store, size_t keep_finished, size_t keep_finished_bytes,
                       int64_t keep_records)
    : store_(store), keep_finished_(std::max<size_t>(keep_finished, 1)),
      keep_finished_bytes_(keep_finished_bytes), keep_records_(keep_records) {}

JobManager::~JobManager() { CancelAll(); }

// --- JobViewer -------------------------------------------------------------

bool JobViewer::Sees(const kiln::v1::Job& record) const {
  return admin || record.owner() == identity ||
         std::find(record.joined_by().begin(), record.joined_by().end(), identity) !=
             record.joined_by().end();
}

void JobViewer::Redact(kiln::v1::Job* record) const {
  if (admin) return;
  record->clear_joined_by();
  if (record->owner() != identity) record->clear_owner();
}

// --- JobManager ------------------------------------------------------------

std::shared_ptr<Job> JobManager::NewJob(kiln::v1::JobKind kind, const std::string& key, bool held,
                                        const std::string& identity) {
  std::string id = NewJobId();
  while (by_id_.count(id)) id = NewJobId();
  auto job = std::make_shared<Job>(id, kind, key, held, identity);
  job->set_on_final([this](const Job& j) { OnFinal(j); });
  if (observer_) {
    job->set_on_transition([obs = observer_, kind](kiln::v1::JobState from, kiln::v1::JobState to) {
      obs(kind, from, to);
    });
    observer_(kind, std::nullopt, kiln::v1::JOB_STATE_QUEUED);
  }
  by_id_[id] = job;
  const OrderKey order = KeyOf(*job);
  newest_.insert(order);
  by_party_[identity].insert(order);
  parties_[id].push_back(identity);
  return job;
}

JobManager::Joined JobManager::JoinOrCreate(kiln::v1::JobKind kind, const std::string& key,
                                            bool held, const std::string& identity) {
  Joined out;
  {
    absl::MutexLock lock(&mu_);
    auto it = inflight_.find({static_cast<int>(kind), key});
    // A job that just finished may still be listed (its final callback
    // has not run yet); a request after its end starts afresh.
    if (it != inflight_.end() && !it->second->done()) {
      out.job = it->second;
      // Indexed for the joiner's lists now; Join below makes it a party.
      std::vector<std::string>& parties = parties_[out.job->id()];
      if (std::find(parties.begin(), parties.end(), identity) == parties.end()) {
        parties.push_back(identity);
        by_party_[identity].insert(KeyOf(*out.job));
      }
    } else {
      out.job = NewJob(kind, key, held, identity);
      out.created = true;
      inflight_[{static_cast<int>(kind), key}] = out.job;
    }
  }
  if (out.created) {
    Persist(*out.job);
  } else {
    out.job->Join(identity);
    if (held) out.job->Hold();
  }
  return out;
}

std::shared_ptr<Job> JobManager::Create(kiln::v1::JobKind kind, const std::string& key, bool held,
                                        const std::string& identity) {
  std::shared_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    job = NewJob(kind, key, held, identity);
  }
  Persist(*job);
  return job;
}

void JobManager::Persist(const Job& job) {
  if (store_ == nullptr) return;
  // Best effort: a full disk must not fail the work itself; the snapshot in
  // memory stays authoritative for this process.
  (void)store_->Save(job.Snapshot());
}

absl::StatusOr<int64_t> JobManager::PruneStore() {
  if (store_ == nullptr || keep_records_ <= 0) return 0;
  return store_->PruneFinished(keep_records_);
}

size_t JobManager::finished_in_memory() {
  absl::MutexLock lock(&mu_);
  return finished_.size();
}

size_t JobManager::finished_bytes_in_memory() {
  absl::MutexLock lock(&mu_);
  return finished_bytes_;
}

void JobManager::OnFinal(const Job& job) {
  Persist(job);
  if (finals_.fetch_add(1, std::memory_order_relaxed) % kPruneEvery == kPruneEvery - 1) {
    // Best effort, as Persist: the next round tries again.
    (void)PruneStore();
  }
  const size_t bytes = job.MemoryBytes();
  absl::MutexLock lock(&mu_);
  auto it = inflight_.find({static_cast<int>(job.kind()), job.key()});
  if (it != inflight_.end() && it->second.get() == &job) inflight_.erase(it);
  finished_.emplace_back(job.id(), bytes);
  finished_bytes_ += bytes;
  // The newest finished job always stays (a waiter may still read it).
  while (finished_.size() > 1 &&
         (finished_.size() > keep_finished_ || finished_bytes_ > keep_finished_bytes_)) {
    finished_bytes_ -= finished_.front().second;
    if (auto old = by_id_.find(finished_.front().first); old != by_id_.end()) {
      const OrderKey key = KeyOf(*old->second);
      newest_.erase(key);
      if (auto p = parties_.find(old->first); p != parties_.end()) {
        for (const std::string& identity : p->second) {
          auto order = by_party_.find(identity);
          if (order == by_party_.end()) continue;
          order->second.erase(key);
          if (order->second.empty()) by_party_.erase(order);
        }
        parties_.erase(p);
      }
      by_id_.erase(old);
    }
    finished_.pop_front();
  }
}

std::shared_ptr<Job> JobManager::Find(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

absl::StatusOr<kiln::v1::Job> JobManager::Get(const std::string& id) {
  if (std::shared_ptr<Job> job = Find(id)) return job->Snapshot();
  if (store_ != nullptr) {
    absl::StatusOr<kiln::v1::Job> stored = store_->Load(id);
    if (stored.ok() || stored.status().code() != absl::StatusCode::kNotFound) return stored;
  }
  return absl::NotFoundError("no job '" + id + "'");
}

namespace {

bool NewerRecord(const kiln::v1::Job& a, const kiln::v1::Job& b) {
  return a.created_unix_ms() != b.created_unix_ms() ? a.created_unix_ms() > b.created_unix_ms()
                                                    : a.id() < b.id();
}

// `mine` (this process's, in order) and `stored` merged in order, the first
// `limit` (<= 0: all).
std::vector<kiln::v1::Job> Merge(std::vector<kiln::v1::Job> mine, std::vector<kiln::v1::Job> stored,
                                 int64_t limit) {
  // A store need not break ties by id (MemoryJobStore does not).
  std::sort(stored.begin(), stored.end(), NewerRecord);
  std::vector<kiln::v1::Job> out;
  out.reserve(mine.size() + stored.size());
  std::merge(std::make_move_iterator(mine.begin()), std::make_move_iterator(mine.end()),
             std::make_move_iterator(stored.begin()), std::make_move_iterator(stored.end()),
             std::back_inserter(out), NewerRecord);
  if (limit > 0 && out.size() > static_cast<size_t>(limit)) out.resize(limit);
  return out;
}

} // namespace

std::vector<std::shared_ptr<Job>>
JobManager::Newest(const std::string* identity, const std::optional<OrderKey>& after, int64_t n) {
  std::vector<std::shared_ptr<Job>> out;
  absl::MutexLock lock(&mu_);
  const Order* order = &newest_;
  if (identity != nullptr) {
    auto mine = by_party_.find(*identity);
    if (mine == by_party_.end()) return out;
    order = &mine->second;
  }
  for (auto it = after ? order->upper_bound(*after) : order->begin();
       it != order->end() && (n <= 0 || out.size() < static_cast<size_t>(n)); ++it) {
    if (auto job = by_id_.find(it->second); job != by_id_.end()) out.push_back(job->second);
  }
  return out;
}

std::vector<kiln::v1::Job> JobManager::StoredFor(int64_t limit, const JobViewer* viewer,
                                                 const std::optional<OrderKey>& stop) {
  std::vector<kiln::v1::Job> out;
  if (store_ == nullptr) return out;
  // Every job: the newest `limit` records hold every stored one that can
  // make the list (each record before another one is either listed or a job
  // in memory, listed with its own snapshot). A tenant's: another tenant's
  // records may fill them, so look further back, doubling, until `limit`
  // are the viewer's, the store has no more, or they are past `stop`.
  for (int64_t look = limit > 0 ? (viewer != nullptr ? limit * 4 : limit) : 0;; look *= 2) {
    // Records older than `stop` cannot make the list: not read at all (with
    // a full page in memory, the list reads about `limit` rows however many
    // the store keeps).
    absl::StatusOr<std::vector<kiln::v1::Job>> rows =
        stop ? store_->ListSince(look, stop->first) : store_->List(look);
    // Best effort: the jobs in memory are listed without the store.
    if (!rows.ok()) return out;
    const bool everything = look <= 0 || rows->size() < static_cast<size_t>(look);
    bool past_stop = false;
    out.clear();
    {
      absl::MutexLock lock(&mu_);
      for (kiln::v1::Job& row : *rows) {
        if (stop && NewestFirst()(*stop, OrderKey(row.created_unix_ms(), row.id()))) {
          past_stop = true;
          break;
        }
        if (by_id_.contains(row.id())) continue; // listed from memory
        if (viewer != nullptr && !viewer->Sees(row)) continue;
        out.push_back(std::move(row));
        if (limit > 0 && out.size() == static_cast<size_t>(limit)) return out;
      }
    }
    if (everything || past_stop || viewer == nullptr) return out;
  }
}

std::vector<kiln::v1::Job> JobManager::List(int64_t limit) {
  std::vector<std::shared_ptr<Job>> live = Newest(nullptr, std::nullopt, limit);
  jobs_visited_.fetch_add(static_cast<int64_t>(live.size()), std::memory_order_relaxed);
  std::vector<kiln::v1::Job> mine;
  mine.reserve(live.size());
  for (const auto& job : live) mine.push_back(job->Snapshot());
  std::optional<OrderKey> stop;
  if (limit > 0 && live.size() == static_cast<size_t>(limit)) stop = KeyOf(*live.back());
  return Merge(std::move(mine), StoredFor(limit, nullptr, stop), limit);
}

std::shared_ptr<Job> JobManager::FindFor(const std::string& id, const JobViewer& viewer) {
  std::shared_ptr<Job> job = Find(id);
  return job != nullptr && viewer.Sees(*job) ? job : nullptr;
}

absl::StatusOr<kiln::v1::Job> JobManager::GetFor(const std::string& id, const JobViewer& viewer) {
  absl::StatusOr<kiln::v1::Job> job = Get(id);
  if (job.ok() && !viewer.Sees(*job)) return absl::NotFoundError("no job '" + id + "'");
  if (job.ok()) viewer.Redact(&*job);
  return job;
}

std::vector<kiln::v1::Job> JobManager::ListFor(int64_t limit, const JobViewer& viewer) {
  if (viewer.admin) return List(limit);
  // The viewer's jobs in memory from its own index; a job whose Join is
  // still under way is not yet its, so the walk may go on past it.
  std::vector<kiln::v1::Job> mine;
  std::optional<OrderKey> after;
  for (;;) {
    const int64_t want = limit > 0 ? limit - static_cast<int64_t>(mine.size()) : 0;
    std::vector<std::shared_ptr<Job>> batch = Newest(&viewer.identity, after, want);
    jobs_visited_.fetch_add(static_cast<int64_t>(batch.size()), std::memory_order_relaxed);
    for (const auto& job : batch) {
      after = KeyOf(*job);
      if (viewer.Sees(*job)) mine.push_back(job->Snapshot());
    }
    if (want <= 0 || batch.size() < static_cast<size_t>(want) ||
        mine.size() == static_cast<size_t>(limit)) {
      break;
    }
  }
  std::optional<OrderKey> stop;
  if (limit > 0 && mine.size() == static_cast<size_t>(limit)) {
    stop = OrderKey(mine.back().created_unix_ms(), mine.back().id());
  }
  std::vector<kiln::v1::Job> out = Merge(std::move(mine), StoredFor(limit, &viewer, stop), limit);
  for (kiln::v1::Job& j : out) viewer.Redact(&j);
  return out;
}

absl::StatusOr<kiln::v1::Job> JobManager::CancelFor(const std::string& id,
                                                    const JobViewer& viewer) {
  if (std::shared_ptr<Job> job = FindFor(id, viewer)) {
    if (viewer.admin) {
      job->RequestCancel();
    } else {
      job->Withdraw(viewer.identity);
    }
    kiln::v1::Job record = job->Snapshot();
    viewer.Redact(&record);
    return record;
  }
  return GetFor(id, viewer); // a stored record is final already
}

std::map<kiln::v1::JobState, int64_t> JobManager::CountByState() {
  std::vector<std::shared_ptr<Job>> live;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, job] : by_id_) live.push_back(job);
  }
  std::map<kiln::v1::JobState, int64_t> out;
  for (const auto& job : live) ++out[job->Snapshot().state()];
  return out;
}

absl::StatusOr<int64_t> JobManager::RecoverInterrupted() {
  if (store_ == nullptr) return 0;
  // Records an earlier daemon (before keep_records existed) left: the list
  // below reads them all.
  if (absl::StatusOr<int64_t> pruned = PruneStore(); !pruned.ok()) return pruned.status();
  absl::StatusOr<std::vector<kiln::v1::Job>> stored = store_->List(0);
  if (!stored.ok()) return stored.status();
  int64_t n = 0;
  for (kiln::v1::Job& j : *stored) {
    if (IsFinal(j.state())) continue;
    if (Find(j.id()) != nullptr) continue; // this process's own
    j.set_state(kiln::v1::JOB_STATE_FAILED);
    j.set_message("interrupted: the daemon stopped before the job finished");
    j.set_finished_unix_ms(absl::ToUnixMillis(absl::Now()));
    if (absl::Status s = store_->Save(j); !s.ok()) return s;
    ++n;
  }
  return n;
}

void JobManager::FailUnfinished(const absl::Status& why) {
  std::vector<std::shared_ptr<Job>> live;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, job] : inflight_) live.push_back(job);
    for (const auto& [id, job] : by_id_) live.push_back(job);
  }
  for (const auto& job : live) {
    if (job->done()) continue;
    job->Fail(why);       // first, so the saved record says why
    job->RequestCancel(); // then the work stops at its next check
  }
}

void JobManager::CancelAll() {
  std::vector<std::shared_ptr<Job>> live;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, job] : inflight_) live.push_back(job);
    for (const auto& [id, job] : by_id_) live.push_back(job);
  }
  for (const auto& job : live) {
    if (!job->done()) job->RequestCancel();
  }
}

} // namespace kiln::server
