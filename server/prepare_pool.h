// The prepare pool: threads that run the frontend of compile requests
// (driver::Prepare: parse, compile-time evaluation, lowering, hashing) off
// the gRPC threads.
//
// Why a pool of its own: the frontend runs the client's Python at compile
// time. It is bounded by the evaluation budget (compiler/frontend/
// eval_budget.h), but a bounded evaluation can still take seconds, and on
// a gRPC thread it would hold the thread that also answers cache hits,
// Lookup and health checks. Here it holds one of a few pool threads; the
// gRPC threads only queue it and answer hits (which never come here: a
// memoized request's key is known without the frontend).
//
// Fairness and bounds: clients take turns (round robin over clients with
// waiting tasks, FIFO per client), so eight slow programs from one client
// delay another client's program by at most one evaluation per thread. At
// most `max_queued` tasks wait in all, `max_queued_per_client` per client:
// Submit beyond that is ResourceExhausted with IsQueueFull() true (retry
// later), at once.
//
// Cancellation: every task has a flag the task's code gives to the
// evaluator (EvalLimits::cancelled), so it stops within a few thousand
// steps. Task::Cancel() sets it (the RPC was cancelled); a task still
// queued is then dropped instead of run. A task whose deadline passed
// while it waited is dropped with DeadlineExceeded. Shutdown() drops what
// waits (Unavailable), sets the flag of every running task and waits for
// them to return, which the flag makes prompt.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kiln::server {

struct PreparePoolOptions {
  int threads = 2; // at least 1
  // Bounds on waiting tasks. Identical requests share one task
  // (CompileService, 1a), so these count distinct programs.
  int64_t max_queued = 1024;
  int64_t max_queued_per_client = 256; // 0: only max_queued
};

class PreparePool {
 public:
  // Runs with the task's cancellation flag (set by Cancel or Shutdown).
  using Run = std::function<void(const std::atomic<bool>* cancelled)>;
  // Runs instead of Run when the task is not run: why (Cancelled,
  // DeadlineExceeded, Unavailable at shutdown).
  using Drop = std::function<void(absl::Status why)>;

  class Task {
   public:
    // Asks the task to stop: dropped if it has not started, else its flag
    // is set. Idempotent; any thread.
    void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
    bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

   private:
    friend class PreparePool;
    // Once run or dropped, the task lets go of its functions: whoever keeps
    // the Task (to Cancel it) must not keep what they captured alive (issue
    // 27: a compile's request held its Task and the Task's functions held
    // the request, a cycle that leaked every compile request, 400 MB after
    // 110,000 rpc_fuzz calls).
    void Release() {
      run_ = nullptr;
      drop_ = nullptr;
    }
    std::atomic<bool> cancelled_{false};
    std::string client_;
    absl::Time deadline_ = absl::InfiniteFuture();
    Run run_;
    Drop drop_;
  };

  explicit PreparePool(PreparePoolOptions options);
  ~PreparePool(); // Shutdown()
  PreparePool(const PreparePool&) = delete;
  PreparePool& operator=(const PreparePool&) = delete;

  // Queues `run` for `client`, to start before `deadline`. Errors (nothing
  // queued, neither function called): ResourceExhausted with IsQueueFull()
  // when the pool's or the client's queue is full; Unavailable after
  // Shutdown.
  absl::StatusOr<std::shared_ptr<Task>> Submit(const std::string& client, absl::Time deadline,
                                               Run run, Drop drop);

  int64_t Queued() const;
  int64_t Running() const;
  int threads() const { return static_cast<int>(threads_.size()); }

  // Idempotent; returns once no task runs.
  void Shutdown();

 private:
  bool PopLocked(std::shared_ptr<Task>* task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop();

  const PreparePoolOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::deque<std::shared_ptr<Task>>> by_client_ ABSL_GUARDED_BY(mu_);
  std::string last_client_ ABSL_GUARDED_BY(mu_); // the client served last
  int64_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::shared_ptr<Task>> running_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

} // namespace kiln::server
