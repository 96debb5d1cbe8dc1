#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/job_manager.h"

namespace kiln::server {
namespace {

using kiln::v1::JOB_KIND_BENCHMARK;
using kiln::v1::JOB_KIND_COMPILE;

TEST(Job, StatesAreFinalOnceFinished) {
  Job job("j-1", JOB_KIND_COMPILE, "k", /*held=*/false);
  EXPECT_EQ(job.Snapshot().state(), kiln::v1::JOB_STATE_QUEUED);
  const uint64_t v0 = job.version();
  EXPECT_TRUE(job.Start("compiling"));
  EXPECT_FALSE(job.Start("again"));
  EXPECT_GT(job.version(), v0);
  job.SetProgress(1.5, "half");
  EXPECT_EQ(job.Snapshot().progress(), 1.0); // clamped
  job.Succeed(42, "ok");
  ASSERT_NE(job.result<int>(), nullptr);
  EXPECT_EQ(*job.result<int>(), 42);
  EXPECT_EQ(job.result<std::string>(), nullptr); // another type
  job.Fail(absl::InternalError("late"));         // ignored: already final
  EXPECT_EQ(job.Snapshot().state(), kiln::v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(job.status().ok());
  EXPECT_GT(job.Snapshot().finished_unix_ms(), 0);
}

TEST(Job, CancelWhileQueuedNeverStarts) {
  Job job("j-2", JOB_KIND_COMPILE, "k", false);
  job.RequestCancel();
  EXPECT_EQ(job.Snapshot().state(), kiln::v1::JOB_STATE_CANCELLED);
  EXPECT_FALSE(job.Start("compiling"));
  EXPECT_EQ(job.status().code(), absl::StatusCode::kCancelled);
}

TEST(Job, LastWaiterLeavingCancelsUnlessHeld) {
  Job lone("j-3", JOB_KIND_COMPILE, "k", false);
  lone.Attach();
  lone.Attach();
  EXPECT_FALSE(lone.Detach()); // one waiter left
  EXPECT_FALSE(lone.cancel_requested());
  EXPECT_TRUE(lone.Detach());
  EXPECT_TRUE(lone.cancel_requested());

  Job held("j-4", JOB_KIND_COMPILE, "k", /*held=*/true);
  held.Attach();
  EXPECT_FALSE(held.Detach());
  EXPECT_FALSE(held.cancel_requested());
}

TEST(Job, ListenersAndWatchersRun) {
  Job job("j-5", JOB_KIND_COMPILE, "k", false);
  std::atomic<int> changes{0}, done{0};
  const uint64_t w = job.AddWatcher([&] { ++changes; });
  job.OnDone([&](const Job& j) {
    EXPECT_EQ(j.Snapshot().state(), kiln::v1::JOB_STATE_FAILED);
    ++done;
  });
  job.Start("x");
  job.SetProgress(0.5, "y");
  job.Fail(absl::InvalidArgumentError("bad"));
  EXPECT_EQ(done.load(), 1);
  EXPECT_EQ(changes.load(), 3);
  job.RemoveWatcher(w);
  job.SetProgress(0.7, "ignored");
  EXPECT_EQ(changes.load(), 3);
  // A listener added after the end runs at once.
  job.OnDone([&](const Job&) { ++done; });
  EXPECT_EQ(done.load(), 2);
}

TEST(JobManager, IdenticalRequestsJoinOneJob) {
  MemoryJobStore store;
  JobManager jobs(&store);
  constexpr int kThreads = 32;
  std::vector<std::shared_ptr<Job>> got(kThreads);
  std::atomic<int> created{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      JobManager::Joined j = jobs.JoinOrCreate(JOB_KIND_COMPILE, "same-key", false);
      if (j.created) ++created;
      got[i] = j.job;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 1);
  for (const auto& j : got) EXPECT_EQ(j.get(), got[0].get());
  // Another kind or key is another job.
  EXPECT_NE(jobs.JoinOrCreate(JOB_KIND_BENCHMARK, "same-key", false).job.get(), got[0].get());
  EXPECT_NE(jobs.JoinOrCreate(JOB_KIND_COMPILE, "other", false).job.get(), got[0].get());
  // Once final, the next request starts afresh.
  got[0]->Fail(absl::InternalError("x"));
  JobManager::Joined next = jobs.JoinOrCreate(JOB_KIND_COMPILE, "same-key", false);
  EXPECT_TRUE(next.created);
  EXPECT_NE(next.job.get(), got[0].get());
}

TEST(JobManager, RecordsSurviveInTheStore) {
  MemoryJobStore store;
  std::string done_id, running_id;
  {
    JobManager jobs(&store);
    auto done = jobs.Create(JOB_KIND_COMPILE, "k1", false);
    done->Start("s");
    done->Succeed(1);
    done_id = done->id();
    auto running = jobs.Create(JOB_KIND_COMPILE, "k2", true);
    running->Start("s");
    running_id = running->id();
    // Simulate a crash: the record stays RUNNING in the store.
    kiln::v1::Job rec = running->Snapshot();
    ASSERT_TRUE(store.Save(rec).ok());
    EXPECT_EQ(jobs.Find(done_id).get(), done.get());
  }
  // The destructor cancelled `running`; make the store look like a crash.
  absl::StatusOr<kiln::v1::Job> rec = store.Load(running_id);
  ASSERT_TRUE(rec.ok());
  kiln::v1::Job r = *rec;
  r.set_state(kiln::v1::JOB_STATE_RUNNING);
  ASSERT_TRUE(store.Save(r).ok());

  JobManager restarted(&store);
  absl::StatusOr<int64_t> recovered = restarted.RecoverInterrupted();
  ASSERT_TRUE(recovered.ok());
  EXPECT_EQ(*recovered, 1);
  absl::StatusOr<kiln::v1::Job> old = restarted.Get(done_id);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->state(), kiln::v1::JOB_STATE_SUCCEEDED);
  absl::StatusOr<kiln::v1::Job> interrupted = restarted.Get(running_id);
  ASSERT_TRUE(interrupted.ok());
  EXPECT_EQ(interrupted->state(), kiln::v1::JOB_STATE_FAILED);
  EXPECT_NE(interrupted->message().find("interrupted"), std::string::npos);
  EXPECT_EQ(restarted.Get("j-missing").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(restarted.List(10).size(), 2u);
}

TEST(JobManager, KeepsABoundedNumberOfFinishedJobsInMemory) {
  MemoryJobStore store;
  JobManager jobs(&store, /*keep_finished=*/3);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto j = jobs.Create(JOB_KIND_COMPILE, "k", false);
    j->Succeed(i);
    ids.push_back(j->id());
  }
  EXPECT_EQ(jobs.Find(ids[0]), nullptr);
  EXPECT_NE(jobs.Find(ids[4]), nullptr);
  // Still answered from the store.
  EXPECT_TRUE(jobs.Get(ids[0]).ok());
}

// Issue 27, item 5: with two tokens, B could cancel A's queued job and every
// client saw every job. A job is its owner's (and its joiners'); others get
// NOT_FOUND exactly as for a job that does not exist; an admin sees all.
TEST(JobManager, JobsAreSeenAndCancelledOnlyByTheirOwnerOrAnAdmin) {
  MemoryJobStore store;
  JobManager jobs(&store);
  const JobViewer alice{"alice", false}, bob{"bob", false}, admin{"ops", true};
  std::shared_ptr<Job> a = jobs.JoinOrCreate(JOB_KIND_COMPILE, "ka", /*held=*/true, "alice").job;
  std::shared_ptr<Job> b = jobs.Create(JOB_KIND_BENCHMARK, "kb", /*held=*/false, "bob");
  EXPECT_EQ(a->owner(), "alice");
  EXPECT_EQ(a->Snapshot().owner(), "alice");

  EXPECT_EQ(jobs.FindFor(a->id(), alice), a);
  EXPECT_EQ(jobs.FindFor(a->id(), bob), nullptr);
  EXPECT_EQ(jobs.FindFor(a->id(), admin), a);
  absl::StatusOr<kiln::v1::Job> hidden = jobs.GetFor(a->id(), bob);
  absl::StatusOr<kiln::v1::Job> missing = jobs.GetFor("j-0000000000000000", bob);
  EXPECT_EQ(hidden.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(hidden.status().message(), "no job '" + a->id() + "'"); // as for a missing one
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(jobs.GetFor(a->id(), admin).ok());

  // Bob cannot cancel Alice's queued job; it stays queued.
  EXPECT_EQ(jobs.CancelFor(a->id(), bob).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(a->cancel_requested());
  EXPECT_EQ(a->Snapshot().state(), kiln::v1::JOB_STATE_QUEUED);

  auto ids = [](const std::vector<kiln::v1::Job>& list) {
    std::vector<std::string> out;
    for (const kiln::v1::Job& j : list) out.push_back(j.id());
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(ids(jobs.ListFor(50, alice)), std::vector<std::string>{a->id()});
  EXPECT_EQ(ids(jobs.ListFor(50, bob)), std::vector<std::string>{b->id()});
  EXPECT_EQ(jobs.ListFor(50, admin).size(), 2u);
  EXPECT_TRUE(jobs.ListFor(50, JobViewer{"carol", false}).empty());

  // The owner cancels; so may an admin.
  absl::StatusOr<kiln::v1::Job> cancelled = jobs.CancelFor(a->id(), alice);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), kiln::v1::JOB_STATE_CANCELLED);
  ASSERT_TRUE(jobs.CancelFor(b->id(), admin).ok());
  EXPECT_EQ(b->Snapshot().state(), kiln::v1::JOB_STATE_CANCELLED);
}

TEST(JobManager, ListingLooksPastOtherTenantsJobs) {
  MemoryJobStore store;
  JobManager jobs(&store);
  std::shared_ptr<Job> mine = jobs.Create(JOB_KIND_COMPILE, "k", false, "alice");
  mine->Succeed(0);
  // Newer jobs of another tenant fill more than the first page.
  for (int i = 0; i < 30; ++i) jobs.Create(JOB_KIND_COMPILE, "k", true, "bob")->Succeed(i);
  std::vector<kiln::v1::Job> list = jobs.ListFor(2, JobViewer{"alice", false});
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].id(), mine->id());
  EXPECT_EQ(jobs.ListFor(2, JobViewer{"bob", false}).size(), 2u);
}

// Two identities compiling the same key share one job: each sees it, a
// joiner's cancel withdraws only that joiner, and the job is cancelled when
// the last party withdraws. Records keep the parties across a restart.
TEST(JobManager, AJoinedJobIsEveryJoinersAndCancelledWhenNoneWantsIt) {
  MemoryJobStore store;
  std::string id;
  {
    JobManager jobs(&store);
    JobManager::Joined first = jobs.JoinOrCreate(JOB_KIND_COMPILE, "same", true, "alice");
    JobManager::Joined second = jobs.JoinOrCreate(JOB_KIND_COMPILE, "same", true, "bob");
    ASSERT_FALSE(second.created);
    std::shared_ptr<Job> job = first.job;
    id = job->id();
    ASSERT_TRUE(job->Start("compiling"));
    const JobViewer alice{"alice", false}, bob{"bob", false}, carol{"carol", false};
    EXPECT_NE(jobs.FindFor(id, alice), nullptr);
    EXPECT_NE(jobs.FindFor(id, bob), nullptr);
    EXPECT_EQ(jobs.FindFor(id, carol), nullptr);
    // Names of other tenants are an admin's to see.
    absl::StatusOr<kiln::v1::Job> as_bob = jobs.GetFor(id, bob);
    ASSERT_TRUE(as_bob.ok());
    EXPECT_EQ(as_bob->owner(), "");
    EXPECT_EQ(as_bob->joined_by_size(), 0);
    absl::StatusOr<kiln::v1::Job> as_admin = jobs.GetFor(id, JobViewer{"ops", true});
    ASSERT_TRUE(as_admin.ok());
    EXPECT_EQ(as_admin->owner(), "alice");
    ASSERT_EQ(as_admin->joined_by_size(), 1);
    EXPECT_EQ(as_admin->joined_by(0), "bob");

    // The creator's cancel does not take the work from Bob, who still wants it.
    absl::StatusOr<kiln::v1::Job> after = jobs.CancelFor(id, alice);
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(after->state(), kiln::v1::JOB_STATE_RUNNING);
    EXPECT_FALSE(job->cancel_requested());
    EXPECT_NE(jobs.FindFor(id, alice), nullptr); // still visible to the one who withdrew
    EXPECT_EQ(jobs.CancelFor(id, carol).status().code(), absl::StatusCode::kNotFound);
    EXPECT_FALSE(job->cancel_requested());
    // The last party's cancel stops it.
    ASSERT_TRUE(jobs.CancelFor(id, bob).ok());
    EXPECT_TRUE(job->cancel_requested());
    job->Fail(absl::CancelledError("stopped"));
  }
  JobManager restarted(&store);
  EXPECT_TRUE(restarted.GetFor(id, JobViewer{"alice", false}).ok());
  EXPECT_TRUE(restarted.GetFor(id, JobViewer{"bob", false}).ok());
  EXPECT_EQ(restarted.GetFor(id, JobViewer{"carol", false}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(Job, WithdrawingTwiceOrAsAStrangerCountsOnce) {
  Job job("j-9", JOB_KIND_COMPILE, "k", /*held=*/true, "alice");
  job.Join("bob");
  job.Join("alice"); // the owner joining again is not a second party
  EXPECT_FALSE(job.Withdraw("carol"));
  EXPECT_FALSE(job.Withdraw("bob"));
  EXPECT_FALSE(job.Withdraw("bob"));
  EXPECT_FALSE(job.cancel_requested());
  job.Join("bob"); // wants it again
  EXPECT_FALSE(job.Withdraw("alice"));
  EXPECT_FALSE(job.cancel_requested());
  EXPECT_TRUE(job.Withdraw("bob"));
  EXPECT_TRUE(job.cancel_requested());
}

} // namespace
} // namespace kiln::server
