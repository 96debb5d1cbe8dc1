#include "server/job.h"

#include <algorithm>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"
#include "util/sha256.h"

namespace kiln::server {
namespace {

int64_t NowUnixMs() { return absl::ToUnixMillis(absl::Now()); }

static_assert(kMaxJobMessageBytes == kMaxStatusMessageBytes);

// The first `n` bytes of `s` or fewer, not ending inside a UTF-8 character.
std::string Utf8Prefix(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

std::string BoundMessage(const std::string& message) {
  return message.size() <= kMaxJobMessageBytes ? message : BoundStatusMessage(message);
}

// `status` with its message bounded (code and payloads kept).
absl::Status BoundStatus(absl::Status status) {
  if (status.message().size() <= kMaxJobMessageBytes) return status;
  absl::Status out(status.code(), BoundStatusMessage(absl::StrCat(status.message())));
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

} // namespace

std::string BoundJobKey(std::string key) {
  if (key.size() <= kMaxJobKeyBytes) return key;
  return absl::StrCat(Utf8Prefix(key, 256), "...[sha256:", util::Sha256Hex(key), "]");
}

bool IsFinal(kiln::v1::JobState state) {
  return state == kiln::v1::JOB_STATE_SUCCEEDED || state == kiln::v1::JOB_STATE_FAILED ||
         state == kiln::v1::JOB_STATE_CANCELLED;
}

Job::Job(std::string id, kiln::v1::JobKind kind, std::string key, bool held, std::string owner)
    : id_(std::move(id)), kind_(kind), key_(BoundJobKey(std::move(key))), owner_(std::move(owner)),
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
    message_ = BoundMessage(message);
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
    message_ = BoundMessage(message);
    ++version_;
  }
  Notify();
}

void Job::SetTuneProgress(const kiln::v1::TuneProgress& progress) {
  {
    absl::MutexLock lock(&mu_);
    if (IsFinal(state_)) return;
    tune_progress_ = progress;
    // A candidate's compile error may echo a 1 MB request field.
    for (kiln::v1::Measurement* m :
         {tune_progress_.mutable_latest(), tune_progress_.mutable_best_so_far()}) {
      if (m->error().size() > kMaxJobMessageBytes) m->set_error(BoundMessage(m->error()));
    }
    if (!progress.has_latest()) tune_progress_.clear_latest();
    if (!progress.has_best_so_far()) tune_progress_.clear_best_so_far();
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
                 absl::Status status, size_t result_bytes) {
  std::vector<std::function<void(const Job&)>> listeners;
  kiln::v1::JobState from;
  {
    absl::MutexLock lock(&mu_);
    if (IsFinal(state_)) return;
    from = state_;
    state_ = state;
    message_ = BoundMessage(message);
    result_ = std::move(result);
    result_bytes_ = result_bytes;
    status_ = BoundStatus(std::move(status));
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

void Job::Succeed(std::any result, const std::string& message, size_t result_bytes) {
  Finish(kiln::v1::JOB_STATE_SUCCEEDED, message.empty() ? "done" : message, std::move(result),
         absl::OkStatus(), result_bytes);
}

size_t Job::MemoryBytes() const {
  absl::MutexLock lock(&mu_);
  size_t n = sizeof(Job) + id_.size() + key_.size() + owner_.size() + message_.size() +
             status_.message().size() + result_bytes_;
  for (const std::string& s : joined_by_) n += s.size();
  for (const std::string& s : withdrawn_) n += s.size();
  if (has_tune_progress_) n += tune_progress_.ByteSizeLong();
  // A failure's payloads (e.g. a compile error's diagnostics).
  status_.ForEachPayload(
      [&n](absl::string_view url, const absl::Cord& payload) { n += url.size() + payload.size(); });
  return n;
}

void Job::Fail(const absl::Status& status) {
  absl::Status why = status.ok() ? absl::InternalError("job failed without a reason") : status;
  const bool cancelled = why.code() == absl::StatusCode::kCancelled;
  const std::string message(why.message());
  Finish(cancelled ? kiln::v1::JOB_STATE_CANCELLED : kiln::v1::JOB_STATE_FAILED, message, {},
         std::move(why), 0);
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
