#include "server/prepare_pool.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/compile_pool.h"

namespace kiln::server {

PreparePool::PreparePool(PreparePoolOptions options) : options_(options) {
  const int n = std::max(options_.threads, 1);
  threads_.reserve(n);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
}

PreparePool::~PreparePool() { Shutdown(); }

absl::StatusOr<std::shared_ptr<PreparePool::Task>>
PreparePool::Submit(const std::string& client, absl::Time deadline, Run run, Drop drop) {
  auto task = std::make_shared<Task>();
  task->client_ = client;
  task->deadline_ = deadline;
  task->run_ = std::move(run);
  task->drop_ = std::move(drop);
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the daemon is shutting down");
  if (queued_ >= options_.max_queued) {
    return QueueFullError(absl::StrCat("the prepare queue is full (", queued_,
                                       " programs waiting for the frontend); retry later"));
  }
  auto mine = by_client_.find(client);
  if (options_.max_queued_per_client > 0 && mine != by_client_.end() &&
      static_cast<int64_t>(mine->second.size()) >= options_.max_queued_per_client) {
    return QueueFullError(absl::StrCat("client '", client, "' already has ", mine->second.size(),
                                       " programs waiting for the frontend; retry later"));
  }
  by_client_[client].push_back(task);
  ++queued_;
  return task;
}

bool PreparePool::PopLocked(std::shared_ptr<Task>* task) {
  if (queued_ == 0) return false;
  // The next client after the one served last (wrapping around).
  auto it = by_client_.upper_bound(last_client_);
  if (it == by_client_.end()) it = by_client_.begin();
  *task = std::move(it->second.front());
  it->second.pop_front();
  last_client_ = it->first;
  if (it->second.empty()) by_client_.erase(it);
  --queued_;
  return true;
}

void PreparePool::Loop() {
  for (;;) {
    std::shared_ptr<Task> task;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || queued_ > 0; };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      PopLocked(&task);
      if (!task->cancelled() && absl::Now() < task->deadline_) running_.push_back(task);
    }
    if (task->cancelled()) {
      task->drop_(absl::CancelledError("the request was cancelled before its program was read"));
    } else if (absl::Now() >= task->deadline_) {
      task->drop_(absl::DeadlineExceededError(
          "the request's deadline passed while its program waited for the frontend"));
    } else {
      task->run_(&task->cancelled_);
      absl::MutexLock lock(&mu_);
      running_.erase(std::find(running_.begin(), running_.end(), task));
    }
    task->Release();
  }
}

int64_t PreparePool::Queued() const {
  absl::MutexLock lock(&mu_);
  return queued_;
}

int64_t PreparePool::Running() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(running_.size());
}

void PreparePool::Shutdown() {
  std::vector<std::shared_ptr<Task>> dropped;
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      stopping_ = true;
      for (auto& [client, tasks] : by_client_) {
        for (std::shared_ptr<Task>& t : tasks) dropped.push_back(std::move(t));
      }
      by_client_.clear();
      queued_ = 0;
      // Running evaluations stop at their next budget check.
      for (const std::shared_ptr<Task>& t : running_) t->Cancel();
    }
  }
  for (const std::shared_ptr<Task>& t : dropped) {
    t->drop_(absl::UnavailableError("the daemon shut down before the program was read"));
    t->Release();
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

} // namespace kiln::server
