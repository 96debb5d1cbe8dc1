#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/compile_pool.h"

namespace kiln::server {
namespace {

// Waits until the pool has run everything it was given.
void Drain(CompilePool& pool) {
  for (;;) {
    auto d = pool.QueueDepths();
    if (d[0] + d[1] + d[2] == 0 && pool.Running() == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

CompilePoolOptions PoolOptions(int threads, int64_t queued) {
  CompilePoolOptions o;
  o.threads = threads;
  o.max_queued = {queued, queued, queued};
  return o;
}

// A pool of one thread, blocked on a gate, so that the order in which queued
// tasks then run is exactly the scheduling order.
struct GatedPool {
  CompilePool pool{PoolOptions(1, 8)};
  absl::Notification gate, started;
  GatedPool() {
    EXPECT_TRUE(pool.Submit(Priority::kInteractive, "gate",
                            [this] {
                              started.Notify();
                              gate.WaitForNotification();
                            })
                    .ok());
    started.WaitForNotification();
  }
};

TEST(CompilePool, HigherPriorityFirstThenRoundRobinAcrossClients) {
  GatedPool g;
  absl::Mutex mu;
  std::vector<std::string> order;
  auto task = [&](std::string name) {
    return [&, name] {
      absl::MutexLock lock(&mu);
      order.push_back(name);
    };
  };
  // Client "a" queues three tuning tasks, "b" one; then an interactive one.
  ASSERT_TRUE(g.pool.Submit(Priority::kTuning, "a", task("a1")).ok());
  ASSERT_TRUE(g.pool.Submit(Priority::kTuning, "a", task("a2")).ok());
  ASSERT_TRUE(g.pool.Submit(Priority::kTuning, "a", task("a3")).ok());
  ASSERT_TRUE(g.pool.Submit(Priority::kTuning, "b", task("b1")).ok());
  ASSERT_TRUE(g.pool.Submit(Priority::kBenchmark, "c", task("c1")).ok());
  ASSERT_TRUE(g.pool.Submit(Priority::kInteractive, "d", task("d1")).ok());
  EXPECT_EQ(g.pool.QueueDepths()[0], 1);
  EXPECT_EQ(g.pool.QueueDepths()[2], 4);
  g.gate.Notify();
  Drain(g.pool);
  g.pool.Shutdown();
  const std::vector<std::string> want = {"d1", "c1", "a1", "b1", "a2", "a3"};
  EXPECT_EQ(order, want);
}

TEST(CompilePool, FullQueueIsResourceExhausted) {
  GatedPool g;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(g.pool.Submit(Priority::kTuning, "x", [] {}).ok());
  absl::Status s = g.pool.Submit(Priority::kTuning, "x", [] {});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(s.message()).find("tuning queue is full"), std::string::npos);
  EXPECT_TRUE(IsQueueFull(s));
  EXPECT_FALSE(IsQueueFull(absl::ResourceExhaustedError("the kernel needs 300 registers")));
  EXPECT_FALSE(IsQueueFull(absl::OkStatus()));
  // Another priority still has room.
  EXPECT_TRUE(g.pool.Submit(Priority::kInteractive, "x", [] {}).ok());
  g.gate.Notify();
}

// Issue 27 (rpc_fuzz): 64 queued tunes of up to 64 MiB each were bounded in
// number only.
TEST(CompilePool, QueuedBytesAreBounded) {
  CompilePoolOptions o = PoolOptions(1, 100);
  o.max_queued_bytes = 100;
  CompilePool pool(o);
  absl::Notification gate, started;
  ASSERT_TRUE(pool.Submit(
                      Priority::kInteractive, "gate",
                      [&] {
                        started.Notify();
                        gate.WaitForNotification();
                      },
                      nullptr, 1000) // running: no longer counted
                  .ok());
  started.WaitForNotification();
  EXPECT_EQ(pool.QueuedBytes(), 0);
  // One task larger than the whole bound is taken while nothing waits.
  ASSERT_TRUE(pool.Submit(
                      Priority::kTuning, "a", [] {}, nullptr, 150)
                  .ok());
  absl::Status s = pool.Submit(
      Priority::kTuning, "b", [] {}, nullptr, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(IsQueueFull(s));
  EXPECT_NE(std::string(s.message()).find("would pass the limit of 100"), std::string::npos);
  EXPECT_EQ(pool.QueuedBytes(), 150);
  gate.Notify();
  Drain(pool);
  EXPECT_EQ(pool.QueuedBytes(), 0);
  absl::Notification gate2, started2;
  ASSERT_TRUE(pool.Submit(Priority::kInteractive, "gate",
                          [&] {
                            started2.Notify();
                            gate2.WaitForNotification();
                          })
                  .ok());
  started2.WaitForNotification();
  ASSERT_TRUE(pool.Submit(
                      Priority::kBenchmark, "a", [] {}, nullptr, 60)
                  .ok());
  ASSERT_TRUE(pool.Submit(
                      Priority::kTuning, "b", [] {}, nullptr, 40)
                  .ok()); // exactly 100
  EXPECT_FALSE(pool.Submit(
                       Priority::kInteractive, "c", [] {}, nullptr, 1)
                   .ok());
  EXPECT_TRUE(pool.Submit(
                      Priority::kInteractive, "c", [] {}, nullptr, 0)
                  .ok());
  gate2.Notify();
  Drain(pool);
  pool.Shutdown();
}

TEST(CompilePool, PerClientCapAndObserversSeeEveryChange) {
  CompilePoolOptions o = PoolOptions(1, 8);
  o.max_queued_per_client = 2;
  std::mutex mu;
  std::vector<int64_t> depths;
  int rejects = 0;
  o.on_depth = [&](Priority p, int64_t d) {
    std::lock_guard<std::mutex> lock(mu);
    if (p == Priority::kTuning) depths.push_back(d);
  };
  o.on_reject = [&](Priority) {
    std::lock_guard<std::mutex> lock(mu);
    ++rejects;
  };
  CompilePool pool(o);
  absl::Notification gate, started;
  ASSERT_TRUE(pool.Submit(Priority::kInteractive, "gate",
                          [&] {
                            started.Notify();
                            gate.WaitForNotification();
                          })
                  .ok());
  started.WaitForNotification();
  ASSERT_TRUE(pool.Submit(Priority::kTuning, "a", [] {}).ok());
  ASSERT_TRUE(pool.Submit(Priority::kTuning, "a", [] {}).ok());
  absl::Status third = pool.Submit(Priority::kTuning, "a", [] {});
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(third.message()).find("client 'a' already has 2"), std::string::npos);
  EXPECT_TRUE(IsQueueFull(third));
  EXPECT_TRUE(pool.Submit(Priority::kTuning, "b", [] {}).ok()); // another client has room
  gate.Notify();
  Drain(pool);
  pool.Shutdown();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(rejects, 1);
  // Up to 3 as tasks were queued, back down to 0 as they ran.
  const std::vector<int64_t> want = {1, 2, 3, 2, 1, 0};
  EXPECT_EQ(depths, want);
}

TEST(CompilePool, ShutdownDropsQueuedTasks) {
  GatedPool g;
  std::atomic<int> ran{0}, dropped{0};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(g.pool
                    .Submit(
                        Priority::kTuning, "x", [&] { ++ran; }, [&] { ++dropped; })
                    .ok());
  }
  std::thread stopper([&] { g.pool.Shutdown(); });
  // Shutdown drops the queue before it waits for the running task.
  while (dropped.load() < 3) std::this_thread::yield();
  g.gate.Notify();
  stopper.join();
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(dropped.load(), 3);
  EXPECT_EQ(g.pool.Submit(Priority::kTuning, "x", [] {}).code(),
            absl::StatusCode::kFailedPrecondition);
}

// Shutdown first waits (up to the grace period) for queued and running
// tasks: WaitIdle is false while any remain, true once all have run.
TEST(CompilePool, WaitIdleWaitsForQueuedAndRunningTasks) {
  GatedPool g;
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(g.pool.Submit(Priority::kTuning, "x", [&] { ++ran; }).ok());
  }
  EXPECT_FALSE(g.pool.WaitIdle(absl::Now() + absl::Milliseconds(50)));
  g.gate.Notify();
  EXPECT_TRUE(g.pool.WaitIdle(absl::Now() + absl::Seconds(30)));
  EXPECT_EQ(ran.load(), 3);
  EXPECT_TRUE(g.pool.WaitIdle(absl::Now())); // idle: at once
}

TEST(CompilePool, RunsTasksInParallel) {
  CompilePool pool(PoolOptions(4, 64));
  std::atomic<int> inside{0}, peak{0};
  absl::Notification release;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(pool.Submit(Priority::kInteractive, "x",
                            [&] {
                              int now = ++inside;
                              int p = peak.load();
                              while (now > p && !peak.compare_exchange_weak(p, now)) {
                              }
                              if (now == 4) release.Notify();
                              release.WaitForNotification();
                              --inside;
                            })
                    .ok());
  }
  release.WaitForNotification();
  pool.Shutdown();
  EXPECT_EQ(peak.load(), 4);
}

} // namespace
} // namespace kiln::server
