#include "server/job.h"

#include <algorithm>
#include <utility>

namespace kiln::server {
namespace {

int64_t NowUnixMs() { return absl::ToUnixMillis(absl::Now()); }

} // namespace

bool IsFinal(kiln::v1::JobState state) {
  return state == kiln::v1::JOB_STATE_SUCCEEDED || state == kiln::v1::JOB_STATE_FAILED ||
         state == kiln::v1::JOB_STATE_CANCELLED;
}

Job::Job(std::string id, kiln::v1::JobKind kind, std::string key, bool held, std::string owner)
    : id_(std::move(id)), kind_(kind), key_(std::move(key)), owner_(std::move(owner)),
      created_unix_ms_(NowUnixMs()) {
  held_ = held;
  message_ = "queued";
}

kiln::v1::Job Job::Snapshot() const {
  kiln::v1::Job out;
  out.set_id(id_);
  out.set_kind(kind_);
  out.set_key(key_);
  out.set_created_unix_ms(created_unix_ms_);
  out.set_owner(owner_);
  absl::MutexLock lock(&mu_);
  for (const std::string& identity : joined_by_) out.add_joined_by(identity);
  out.set_state(state_);
  out.set_progress(progress_);
  out.set_message(message_);
  out.set_finished_unix_ms(finished_unix_ms_);
  out.set_waiters(waiters_);
  if (has_tune_progress_) *out.mutable_tune_progress() = tune_progress_;
  return out;
}

uint64_t Job::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

bool Job::done() const {
  absl::MutexLock lock(&mu_);
  return IsFinal(state_);
}

bool Job::Start(const std::string& message) {
  {
    absl::MutexLock lock(&mu_);
    if (state_ != kiln::v1::JOB_STATE_QUEUED) return false;
    state_ = kiln::v1::JOB_STATE_RUNNING;
    message_ = message;
    ++version_;
  }
  if (on_transition_) on_transition_(kiln::v1::JOB_STATE_QUEUED, kiln::v1::JOB_STATE_RUNNING);
  Notify();
  return true;
}

void Job::SetProgress(double fraction, const std::string& message) {
  {
    absl::MutexLock lock(&mu_);
    if (IsFinal(state_)) return;
    progress_ = std::clamp(fraction, 0.0, 1.0);
    message_ = message;
    ++version_;
  }
  Notify();
}

void Job::SetTuneProgress(const kiln::v1::TuneProgress& progress) {
  {
    absl::MutexLock lock(&mu_);
    if (IsFinal(state_)) return;
    tune_progress_ = progress;
    has_tune_progress_ = true;
    ++version_;
  }
  Notify();
}

void Job::Notify() {
  std::vector<std::function<void()>> fns;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, fn] : watchers_) fns.push_back(fn);
  }
  for (const auto& fn : fns) fn();
}

uint64_t Job::AddWatcher(std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_watcher_++;
  watchers_.emplace_back(id, std::move(fn));
  return id;
}

void Job::RemoveWatcher(uint64_t id) {
  absl::MutexLock lock(&mu_);
  for (auto it = watchers_.begin(); it != watchers_.end(); ++it) {
    if (it->first == id) {
      watchers_.erase(it);
      return;
    }
  }
}

void Job::Finish(kiln::v1::JobState state, const std::string& message, std::any result,
                 absl::Status status) {
  std::vector<std::function<void(const Job&)>> listeners;
  kiln::v1::JobState from;
  {
    absl::MutexLock lock(&mu_);
    if (IsFinal(state_)) return;
    from = state_;
    state_ = state;
    message_ = message;
    result_ = std::move(result);
    status_ = std::move(status);
    if (state == kiln::v1::JOB_STATE_SUCCEEDED) progress_ = 1;
    finished_unix_ms_ = NowUnixMs();
    ++version_;
    listeners.swap(listeners_);
  }
  if (on_transition_) on_transition_(from, state);
  if (on_final_) on_final_(*this);
  Notify();
  for (auto& fn : listeners) fn(*this);
}

void Job::OnDone(std::function<void(const Job&)> fn) {
  {
    absl::MutexLock lock(&mu_);
    if (!IsFinal(state_)) {
      listeners_.push_back(std::move(fn));
      return;
    }
  }
  fn(*this);
}

void Job::Succeed(std::any result, const std::string& message) {
  Finish(kiln::v1::JOB_STATE_SUCCEEDED, message.empty() ? "done" : message, std::move(result),
         absl::OkStatus());
}

void Job::Fail(const absl::Status& status) {
  absl::Status why = status.ok() ? absl::InternalError("job failed without a reason") : status;
  const bool cancelled = why.code() == absl::StatusCode::kCancelled;
  const std::string message(why.message());
  Finish(cancelled ? kiln::v1::JOB_STATE_CANCELLED : kiln::v1::JOB_STATE_FAILED, message, {},
         std::move(why));
}

absl::Status Job::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

bool Job::WaitDone(absl::Time deadline, const std::function<bool()>& cancelled) const {
  absl::MutexLock lock(&mu_);
  auto final = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return IsFinal(state_); };
  while (!final()) {
    if (cancelled && cancelled()) break;
    const absl::Time step = std::min(deadline, absl::Now() + absl::Milliseconds(50));
    if (step <= absl::Now()) break;
    mu_.AwaitWithDeadline(absl::Condition(&final), step);
  }
  return final();
}

uint64_t Job::WaitNewer(uint64_t seen, absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto newer = [this, seen]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return version_ > seen; };
  mu_.AwaitWithDeadline(absl::Condition(&newer), deadline);
  return version_;
}

void Job::RequestCancel() {
  cancel_.store(true, std::memory_order_release);
  stop_.request_stop();
  bool queued;
  {
    absl::MutexLock lock(&mu_);
    queued = state_ == kiln::v1::JOB_STATE_QUEUED;
  }
  // Queued work never starts; running work stops at its next check.
  if (queued) Fail(absl::CancelledError("cancelled before it started"));
}

void Job::Attach() {
  {
    absl::MutexLock lock(&mu_);
    ++waiters_;
    ++version_;
  }
  Notify();
}

bool Job::Detach() {
  bool cancel = false;
  {
    absl::MutexLock lock(&mu_);
    waiters_ = std::max(0, waiters_ - 1);
    ++version_;
    cancel = waiters_ == 0 && !held_ && !IsFinal(state_);
  }
  Notify();
  if (cancel) RequestCancel();
  return cancel;
}

void Job::Join(const std::string& identity) {
  absl::MutexLock lock(&mu_);
  std::erase(withdrawn_, identity);
  if (identity != owner_ &&
      std::find(joined_by_.begin(), joined_by_.end(), identity) == joined_by_.end()) {
    joined_by_.push_back(identity);
  }
}

bool Job::HasParty(const std::string& identity) const {
  if (identity == owner_) return true;
  absl::MutexLock lock(&mu_);
  return std::find(joined_by_.begin(), joined_by_.end(), identity) != joined_by_.end();
}

bool Job::Withdraw(const std::string& identity) {
  bool cancel = false;
  {
    absl::MutexLock lock(&mu_);
    const bool party = identity == owner_ || std::find(joined_by_.begin(), joined_by_.end(),
                                                       identity) != joined_by_.end();
    if (IsFinal(state_) || !party) return false;
    if (std::find(withdrawn_.begin(), withdrawn_.end(), identity) == withdrawn_.end()) {
      withdrawn_.push_back(identity);
    }
    // Every party (the owner and each joiner) has withdrawn.
    cancel = withdrawn_.size() >= joined_by_.size() + 1;
  }
  if (cancel) RequestCancel();
  return cancel;
}

void Job::Hold() {
  absl::MutexLock lock(&mu_);
  held_ = true;
}

} // namespace kiln::server
