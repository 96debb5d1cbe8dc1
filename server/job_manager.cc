#include "server/job_manager.h"

#include <algorithm>
#include <random>
#include <set>

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

absl::StatusOr<std::vector<kiln::v1::Job>> MemoryJobStore::List(int64_t limit) {
  absl::MutexLock lock(&mu_);
  std::vector<kiln::v1::Job> out;
  for (const auto& [id, job] : jobs_) out.push_back(job);
  std::sort(out.begin(), out.end(), [](const kiln::v1::Job& a, const kiln::v1::Job& b) {
    return a.created_unix_ms() > b.created_unix_ms();
  });
  if (limit > 0 && out.size() > static_cast<size_t>(limit)) out.resize(limit);
  return out;
}

JobManager::JobManager(JobStore* store, size_t keep_finished)
    : store_(store), keep_finished_(std::max<size_t>(keep_finished, 1)) {}

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

void JobManager::OnFinal(const Job& job) {
  Persist(job);
  absl::MutexLock lock(&mu_);
  auto it = inflight_.find({static_cast<int>(job.kind()), job.key()});
  if (it != inflight_.end() && it->second.get() == &job) inflight_.erase(it);
  finished_.push_back(job.id());
  while (finished_.size() > keep_finished_) {
    by_id_.erase(finished_.front());
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

std::vector<kiln::v1::Job> JobManager::List(int64_t limit) {
  std::vector<std::shared_ptr<Job>> live;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, job] : by_id_) live.push_back(job);
  }
  std::vector<kiln::v1::Job> out;
  std::set<std::string> seen;
  for (const auto& job : live) {
    out.push_back(job->Snapshot());
    seen.insert(job->id());
  }
  if (store_ != nullptr) {
    absl::StatusOr<std::vector<kiln::v1::Job>> stored = store_->List(limit);
    if (stored.ok()) {
      for (kiln::v1::Job& j : *stored) {
        if (!seen.count(j.id())) out.push_back(std::move(j));
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const kiln::v1::Job& a, const kiln::v1::Job& b) {
    return a.created_unix_ms() != b.created_unix_ms() ? a.created_unix_ms() > b.created_unix_ms()
                                                      : a.id() < b.id();
  });
  if (limit > 0 && out.size() > static_cast<size_t>(limit)) out.resize(limit);
  return out;
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
  // Another tenant's jobs may fill the newest `limit`: look further back,
  // doubling, until enough are this viewer's or there are no more.
  for (int64_t look = limit > 0 ? limit * 4 : 0;; look *= 2) {
    std::vector<kiln::v1::Job> all = List(look);
    const bool everything = look <= 0 || all.size() < static_cast<size_t>(look);
    std::vector<kiln::v1::Job> out;
    for (kiln::v1::Job& j : all) {
      if (!viewer.Sees(j)) continue;
      viewer.Redact(&j);
      out.push_back(std::move(j));
      if (limit > 0 && out.size() == static_cast<size_t>(limit)) return out;
    }
    if (everything) return out;
  }
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
