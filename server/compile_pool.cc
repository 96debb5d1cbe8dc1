#include "server/compile_pool.h"

#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace kiln::server {

const char* PriorityName(Priority p) {
  switch (p) {
  case Priority::kInteractive:
    return "interactive";
  case Priority::kBenchmark:
    return "benchmark";
  case Priority::kTuning:
    return "tuning";
  }
  return "unknown";
}

CompilePool::CompilePool(CompilePoolOptions options) : options_(std::move(options)) {
  int n = options_.threads > 0 ? options_.threads
                               : static_cast<int>(std::thread::hardware_concurrency());
  if (n <= 0) n = 1;
  threads_.reserve(n);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
}

CompilePool::~CompilePool() { Shutdown(); }

namespace {

constexpr char kQueueFullPayload[] = "type.googleapis.com/kiln.v1.CompileQueueFull";

absl::Status QueueFull(const std::string& message) {
  absl::Status s = absl::ResourceExhaustedError(message);
  s.SetPayload(kQueueFullPayload, absl::Cord("1"));
  return s;
}

} // namespace

absl::Status QueueFullError(const std::string& message) { return QueueFull(message); }

bool IsQueueFull(const absl::Status& status) {
  return status.code() == absl::StatusCode::kResourceExhausted &&
         status.GetPayload(kQueueFullPayload).has_value();
}

absl::Status CompilePool::Submit(Priority priority, const std::string& client,
                                 std::function<void()> run, std::function<void()> on_drop,
                                 int64_t bytes) {
  const int p = static_cast<int>(priority);
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::FailedPreconditionError("the daemon is shutting down");
  Lane& lane = lanes_[p];
  if (lane.size >= options_.max_queued[p]) {
    if (options_.on_reject) options_.on_reject(priority);
    return QueueFull(absl::StrCat("the ", PriorityName(priority), " queue is full (", lane.size,
                                  " tasks waiting); retry later"));
  }
  bytes = std::max<int64_t>(bytes, 0);
  if (options_.max_queued_bytes > 0 && queued_bytes_ > 0 &&
      queued_bytes_ + bytes > options_.max_queued_bytes) {
    if (options_.on_reject) options_.on_reject(priority);
    return QueueFull(absl::StrCat("the queued requests hold ", queued_bytes_, " bytes; this one (",
                                  bytes, " bytes) would pass the limit of ",
                                  options_.max_queued_bytes, "; retry later"));
  }
  auto mine = lane.by_client.find(client);
  if (options_.max_queued_per_client > 0 && mine != lane.by_client.end() &&
      static_cast<int64_t>(mine->second.size()) >= options_.max_queued_per_client) {
    if (options_.on_reject) options_.on_reject(priority);
    return QueueFull(absl::StrCat("client '", client, "' already has ",
                                  options_.max_queued_per_client, " tasks waiting in the ",
                                  PriorityName(priority), " queue; retry later"));
  }
  lane.by_client[client].push_back(Task{std::move(run), std::move(on_drop), bytes});
  ++lane.size;
  queued_bytes_ += bytes;
  if (options_.on_depth) options_.on_depth(priority, lane.size);
  return absl::OkStatus();
}

bool CompilePool::PopLocked(Task* task) {
  for (Lane& lane : lanes_) {
    if (lane.size == 0) continue;
    // The next client after the one served last (wrapping around).
    auto it = lane.by_client.upper_bound(lane.last_client);
    if (it == lane.by_client.end()) it = lane.by_client.begin();
    *task = std::move(it->second.front());
    it->second.pop_front();
    queued_bytes_ -= task->bytes;
    lane.last_client = it->first;
    if (it->second.empty()) lane.by_client.erase(it);
    --lane.size;
    if (options_.on_depth) {
      options_.on_depth(static_cast<Priority>(&lane - lanes_.data()), lane.size);
    }
    return true;
  }
  return false;
}

void CompilePool::Loop() {
  for (;;) {
    Task task;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        if (stopping_) return true;
        for (const Lane& lane : lanes_) {
          if (lane.size > 0) return true;
        }
        return false;
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      PopLocked(&task);
      ++running_;
    }
    task.run();
    absl::MutexLock lock(&mu_);
    --running_;
  }
}

int64_t CompilePool::QueuedBytes() const {
  absl::MutexLock lock(&mu_);
  return queued_bytes_;
}

std::array<int64_t, kPriorities> CompilePool::QueueDepths() const {
  absl::MutexLock lock(&mu_);
  std::array<int64_t, kPriorities> out{};
  for (int p = 0; p < kPriorities; ++p) out[p] = lanes_[p].size;
  return out;
}

int64_t CompilePool::Running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

bool CompilePool::WaitIdle(absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (running_ > 0) return false;
    for (const Lane& lane : lanes_) {
      if (lane.size > 0) return false;
    }
    return true;
  };
  return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

void CompilePool::Shutdown() {
  std::vector<Task> dropped;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (Lane& lane : lanes_) {
      for (auto& [client, tasks] : lane.by_client) {
        for (Task& t : tasks) dropped.push_back(std::move(t));
      }
      lane.by_client.clear();
      lane.size = 0;
    }
    queued_bytes_ = 0;
  }
  for (Task& t : dropped) {
    if (t.on_drop) t.on_drop();
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

} // namespace kiln::server
