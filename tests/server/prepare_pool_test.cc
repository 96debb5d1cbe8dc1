// The prepare pool (server/prepare_pool.h): clients take turns, queues are
// bounded, cancellation reaches a running task through its flag, a queued
// task past its deadline or cancelled is dropped, and Shutdown does not
// wait for an evaluation that would run on.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/compile_pool.h"
#include "server/prepare_pool.h"

namespace kiln::server {
namespace {

// Runs until its flag is set (an evaluation that would never end).
void UntilCancelled(const std::atomic<bool>* cancelled) {
  while (!cancelled->load()) absl::SleepFor(absl::Milliseconds(1));
}

TEST(PreparePoolTest, ClientsTakeTurns) {
  PreparePoolOptions o;
  o.threads = 1;
  PreparePool pool(o);
  absl::Notification gate, started;
  ASSERT_TRUE(pool.Submit(
                      "a", absl::InfiniteFuture(),
                      [&](const std::atomic<bool>*) {
                        started.Notify();
                        gate.WaitForNotification();
                      },
                      nullptr)
                  .ok());
  started.WaitForNotification();
  absl::Mutex mu;
  std::vector<std::string> order;
  absl::Notification all;
  auto record = [&](std::string name) {
    return [&, name](const std::atomic<bool>*) {
      absl::MutexLock lock(&mu);
      order.push_back(name);
      if (order.size() == 5) all.Notify();
    };
  };
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(pool.Submit("a", absl::InfiniteFuture(), record("a"), nullptr).ok());
  }
  ASSERT_TRUE(pool.Submit("b", absl::InfiniteFuture(), record("b"), nullptr).ok());
  gate.Notify();
  all.WaitForNotification();
  // a was served last (the gate), so b goes first, then a's four.
  EXPECT_EQ(order, (std::vector<std::string>{"b", "a", "a", "a", "a"}));
}

TEST(PreparePoolTest, QueuesAreBounded) {
  PreparePoolOptions o;
  o.threads = 1;
  o.max_queued = 3;
  o.max_queued_per_client = 2;
  PreparePool pool(o);
  absl::Notification started;
  std::atomic<int> dropped{0};
  auto count_drop = [&](absl::Status) { ++dropped; };
  ASSERT_TRUE(pool.Submit(
                      "a", absl::InfiniteFuture(),
                      [&](const std::atomic<bool>* c) {
                        started.Notify();
                        UntilCancelled(c);
                      },
                      count_drop)
                  .ok());
  started.WaitForNotification();
  auto noop = [](const std::atomic<bool>*) {};
  EXPECT_TRUE(pool.Submit("a", absl::InfiniteFuture(), noop, count_drop).ok());
  EXPECT_TRUE(pool.Submit("a", absl::InfiniteFuture(), noop, count_drop).ok());
  absl::StatusOr<std::shared_ptr<PreparePool::Task>> refused =
      pool.Submit("a", absl::InfiniteFuture(), noop, count_drop);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(IsQueueFull(refused.status())) << refused.status();
  EXPECT_TRUE(pool.Submit("b", absl::InfiniteFuture(), noop, count_drop).ok());
  refused = pool.Submit("c", absl::InfiniteFuture(), noop, count_drop);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(IsQueueFull(refused.status())) << refused.status();
  EXPECT_EQ(pool.Queued(), 3);
  EXPECT_EQ(pool.Running(), 1);
  pool.Shutdown(); // drops the three waiting, stops the running one
  EXPECT_EQ(dropped.load(), 3);
  EXPECT_FALSE(pool.Submit("a", absl::InfiniteFuture(), noop, count_drop).ok());
}

TEST(PreparePoolTest, CancelStopsARunningTaskAndDropsAQueuedOne) {
  PreparePoolOptions o;
  o.threads = 1;
  PreparePool pool(o);
  absl::Notification started, finished;
  absl::StatusOr<std::shared_ptr<PreparePool::Task>> running = pool.Submit(
      "a", absl::InfiniteFuture(),
      [&](const std::atomic<bool>* c) {
        started.Notify();
        UntilCancelled(c);
        finished.Notify();
      },
      nullptr);
  ASSERT_TRUE(running.ok());
  started.WaitForNotification();
  std::atomic<bool> ran{false};
  absl::Status why;
  absl::Notification dropped;
  absl::StatusOr<std::shared_ptr<PreparePool::Task>> queued = pool.Submit(
      "a", absl::InfiniteFuture(), [&](const std::atomic<bool>*) { ran = true; },
      [&](absl::Status s) {
        why = s;
        dropped.Notify();
      });
  ASSERT_TRUE(queued.ok());
  (*queued)->Cancel();
  (*running)->Cancel();
  EXPECT_TRUE(finished.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(dropped.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(why.code(), absl::StatusCode::kCancelled);
}

// Issue 27 (rpc_fuzz growth): CompileService keeps the Task (to cancel it)
// in what the task's functions capture; a Task that kept its functions after
// running made a cycle, and every compile request stayed in memory.
TEST(PreparePoolTest, ATaskLetsGoOfItsFunctionsOnceRunOrDropped) {
  PreparePoolOptions o;
  o.threads = 1;
  PreparePool pool(o);
  auto captured = std::make_shared<int>(1);
  std::weak_ptr<int> watch = captured;
  absl::Notification ran;
  absl::StatusOr<std::shared_ptr<PreparePool::Task>> task = pool.Submit(
      "a", absl::InfiniteFuture(), [captured, &ran](const std::atomic<bool>*) { ran.Notify(); },
      [captured](absl::Status) {});
  ASSERT_TRUE(task.ok());
  captured.reset();
  ASSERT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!watch.expired() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_TRUE(watch.expired()) << "the Task still holds what its functions captured";

  // The same for a task dropped (cancelled while queued), with a task
  // blocking the only thread meanwhile.
  absl::Notification release, started;
  ASSERT_TRUE(pool.Submit(
                      "b", absl::InfiniteFuture(),
                      [&](const std::atomic<bool>*) {
                        started.Notify();
                        release.WaitForNotification();
                      },
                      nullptr)
                  .ok());
  started.WaitForNotification();
  auto held = std::make_shared<int>(2);
  std::weak_ptr<int> watch2 = held;
  absl::StatusOr<std::shared_ptr<PreparePool::Task>> queued = pool.Submit(
      "c", absl::InfiniteFuture(), [held](const std::atomic<bool>*) {}, [held](absl::Status) {});
  ASSERT_TRUE(queued.ok());
  held.reset();
  (*queued)->Cancel();
  release.Notify();
  const absl::Time deadline2 = absl::Now() + absl::Seconds(10);
  while (!watch2.expired() && absl::Now() < deadline2) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_TRUE(watch2.expired());
}

TEST(PreparePoolTest, ATaskPastItsDeadlineIsDropped) {
  PreparePoolOptions o;
  o.threads = 1;
  PreparePool pool(o);
  absl::Notification gate, started;
  ASSERT_TRUE(pool.Submit(
                      "a", absl::InfiniteFuture(),
                      [&](const std::atomic<bool>*) {
                        started.Notify();
                        gate.WaitForNotification();
                      },
                      nullptr)
                  .ok());
  started.WaitForNotification();
  absl::Status why;
  absl::Notification dropped;
  bool ran = false;
  ASSERT_TRUE(pool.Submit(
                      "b", absl::Now() + absl::Milliseconds(20),
                      [&](const std::atomic<bool>*) { ran = true; },
                      [&](absl::Status s) {
                        why = s;
                        dropped.Notify();
                      })
                  .ok());
  absl::SleepFor(absl::Milliseconds(50));
  gate.Notify();
  ASSERT_TRUE(dropped.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(ran);
  EXPECT_EQ(why.code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(PreparePoolTest, ShutdownStopsRunningTasksPromptly) {
  PreparePoolOptions o;
  o.threads = 2;
  PreparePool pool(o);
  std::atomic<int> started{0};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(pool.Submit(
                        "a", absl::InfiniteFuture(),
                        [&](const std::atomic<bool>* c) {
                          ++started;
                          UntilCancelled(c);
                        },
                        nullptr)
                    .ok());
  }
  while (started.load() < 2) absl::SleepFor(absl::Milliseconds(1));
  const absl::Time t0 = absl::Now();
  pool.Shutdown();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(2));
  EXPECT_EQ(pool.Running(), 0);
}

} // namespace
} // namespace kiln::server
