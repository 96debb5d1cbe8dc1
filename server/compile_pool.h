// The daemon's work pool: a fixed set of threads (one per core by default)
// running tasks by priority, with bounded queues and fair share between
// clients.
//
// Priorities: interactive compiles first, then CI benchmarks, then tuning
// sweeps; a thread always takes the highest-priority task waiting. Within a
// priority, clients take turns (round robin over the clients with queued
// tasks, FIFO per client), so one client's thousand-candidate sweep does not
// starve another's single compile of the same priority.
//
// Bounds: each priority queue holds at most `max_queued[p]` tasks; Submit
// beyond that returns ResourceExhausted at once (the caller answers the RPC
// with RESOURCE_EXHAUSTED) instead of letting the queue grow without limit.
// The requests the queued tasks hold are bounded too: at most
// `max_queued_bytes` in all (as the submitters declare them; issue 27: 64
// queued tunes of up to 64 MiB each held most of kilnd's memory under
// rpc_fuzz); past it Submit refuses the same way.
//
// Thread-safe. Shutdown() (also run by the destructor) stops taking tasks,
// runs every queued task's `on_drop` (so its job can be cancelled) and waits
// for running tasks to return; a daemon that drains first calls WaitIdle.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kiln::server {

enum class Priority : uint8_t { kInteractive = 0, kBenchmark = 1, kTuning = 2 };
inline constexpr int kPriorities = 3;
const char* PriorityName(Priority p);

struct CompilePoolOptions {
  int threads = 0; // 0: std::thread::hardware_concurrency()
  std::array<int64_t, kPriorities> max_queued = {1024, 1024, 4096};
  // Tasks one client may have queued per priority; 0: only max_queued.
  int64_t max_queued_per_client = 0;
  // Bytes the queued tasks hold in all (Submit's `bytes`); 0: no bound.
  int64_t max_queued_bytes = 0;
  // Told of each queue's new depth after a change, and of each refusal
  // (metrics). Called with the pool's lock held: must not block or call
  // back into the pool.
  std::function<void(Priority, int64_t depth)> on_depth;
  std::function<void(Priority)> on_reject;
};

class CompilePool {
 public:
  explicit CompilePool(CompilePoolOptions options);
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Queues `run` (called on a pool thread). `on_drop` runs instead if the
  // pool shuts down before the task starts. `bytes`: what the task holds
  // while it waits (its request), counted against max_queued_bytes (a task
  // larger than the whole bound is still taken when nothing else waits).
  // ResourceExhausted when the priority's queue is full or the queued bytes
  // would pass the bound; FailedPrecondition after Shutdown.
  absl::Status Submit(Priority priority, const std::string& client, std::function<void()> run,
                      std::function<void()> on_drop = nullptr, int64_t bytes = 0);
  // Bytes the queued tasks hold (tests, metrics).
  int64_t QueuedBytes() const;

  // Tasks waiting per priority (for metrics and tests).
  std::array<int64_t, kPriorities> QueueDepths() const;
  int64_t Running() const;
  // Waits until no task is queued or running, or until `deadline`; true
  // when idle. Running tasks may submit more meanwhile (they are waited
  // for too). Shutdown uses it to give queued work the grace period.
  bool WaitIdle(absl::Time deadline) const;
  int threads() const { return static_cast<int>(threads_.size()); }

  // Idempotent; not to be called from two threads at once.
  void Shutdown();

 private:
  struct Task {
    std::function<void()> run, on_drop;
    int64_t bytes = 0;
  };
  // One priority's queue: FIFO per client, clients served round robin.
  struct Lane {
    std::map<std::string, std::deque<Task>> by_client;
    std::string last_client; // the client served last
    int64_t size = 0;
  };
  bool PopLocked(Task* task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop();

  const CompilePoolOptions options_;
  mutable absl::Mutex mu_;
  std::array<Lane, kPriorities> lanes_ ABSL_GUARDED_BY(mu_);
  int64_t running_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

// Whether `status` is Submit's refusal because a queue is full (the pool's
// bound or a client's fair share): the work was not looked at, and may be
// submitted again once the queue drains.
bool IsQueueFull(const absl::Status& status);
// ResourceExhausted(message) that IsQueueFull recognizes (the prepare pool's
// refusals are these too).
absl::Status QueueFullError(const std::string& message);

} // namespace kiln::server
