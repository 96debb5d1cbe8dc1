#include <algorithm>
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
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

// Issue 27 (rpc_fuzz: kilnd grew to 2.2 GB): a 1 MB key or a failure
// message echoing a 1 MB request field was kept whole in every job record.
TEST(Job, KeysAndMessagesAreBoundedAndDistinctKeysStayDistinct) {
  const std::string big(1 << 20, 'k');
  std::string other = big;
  other.back() = 'x';
  Job job("j-1", JOB_KIND_COMPILE, big, /*held=*/false);
  EXPECT_LE(job.key().size(), kMaxJobKeyBytes);
  EXPECT_EQ(job.key().substr(0, 256), big.substr(0, 256));
  EXPECT_NE(BoundJobKey(big), BoundJobKey(other));
  EXPECT_EQ(BoundJobKey("short"), "short");
  job.SetProgress(0.5, std::string(1 << 20, 'p'));
  EXPECT_LE(job.Snapshot().message().size(), kMaxJobMessageBytes);
  kiln::v1::TuneProgress progress;
  progress.mutable_latest()->set_error(std::string(1 << 20, 'e'));
  progress.set_candidates_total(3);
  job.SetTuneProgress(progress);
  EXPECT_LE(job.Snapshot().tune_progress().latest().error().size(), kMaxJobMessageBytes);
  EXPECT_FALSE(job.Snapshot().tune_progress().has_best_so_far());
  EXPECT_EQ(job.Snapshot().tune_progress().candidates_total(), 3);
  job.Fail(absl::InvalidArgumentError(std::string(1 << 20, 'm')));
  EXPECT_LE(job.Snapshot().message().size(), kMaxJobMessageBytes);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LE(job.status().message().size(), kMaxJobMessageBytes);
  EXPECT_LT(job.MemoryBytes(), size_t{16} << 10);
  // Payloads (a compile error's diagnostics) count against the bound.
  Job payload("j-2", JOB_KIND_COMPILE, "k", /*held=*/false);
  absl::Status with = absl::InvalidArgumentError("x");
  with.SetPayload("kiln/diagnostics", absl::Cord(std::string(300 << 10, 'd')));
  payload.Fail(with);
  EXPECT_GT(payload.MemoryBytes(), size_t{300} << 10);

  // Singleflight still joins identical long keys and tells different ones apart.
  JobManager jobs(nullptr);
  JobManager::Joined a = jobs.JoinOrCreate(JOB_KIND_COMPILE, big, false);
  JobManager::Joined b = jobs.JoinOrCreate(JOB_KIND_COMPILE, big, false);
  JobManager::Joined c = jobs.JoinOrCreate(JOB_KIND_COMPILE, other, false);
  EXPECT_EQ(a.job, b.job);
  EXPECT_FALSE(b.created);
  EXPECT_NE(a.job, c.job);
  a.job->Succeed(1);
  EXPECT_TRUE(jobs.JoinOrCreate(JOB_KIND_COMPILE, big, false).created); // not left in flight
}

TEST(JobManager, KeepsABoundedNumberOfBytesOfFinishedJobsInMemory) {
  MemoryJobStore store;
  JobManager jobs(&store, /*keep_finished=*/1000, /*keep_finished_bytes=*/size_t{1} << 20);
  std::vector<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    auto j = jobs.Create(JOB_KIND_BENCHMARK, "k", false);
    j->Succeed(i, "", /*result_bytes=*/100 << 10); // e.g. 12,800 samples
    ids.push_back(j->id());
  }
  EXPECT_LE(jobs.finished_bytes_in_memory(), size_t{1} << 20);
  EXPECT_GE(jobs.finished_in_memory(), 5u);
  EXPECT_LE(jobs.finished_in_memory(), 10u);
  EXPECT_EQ(jobs.Find(ids[0]), nullptr);
  EXPECT_NE(jobs.Find(ids[99]), nullptr);
  EXPECT_TRUE(jobs.Get(ids[0]).ok()); // from the store
  // One job larger than the whole bound still stays while it is the newest.
  auto huge = jobs.Create(JOB_KIND_BENCHMARK, "k", false);
  huge->Succeed(0, "", size_t{4} << 20);
  EXPECT_NE(jobs.Find(huge->id()), nullptr);
  EXPECT_EQ(jobs.finished_in_memory(), 1u);
}

TEST(JobManager, TheStoreKeepsTheNewestFinishedRecords) {
  MemoryJobStore store;
  std::string open_id;
  {
    JobManager jobs(&store, /*keep_finished=*/10, size_t{64} << 20, /*keep_records=*/50);
    auto open = jobs.Create(JOB_KIND_COMPILE, "open", /*held=*/true);
    open_id = open->id();
    std::vector<std::string> ids;
    for (int64_t i = 0; i < 2 * JobManager::kPruneEvery; ++i) {
      auto j = jobs.Create(JOB_KIND_COMPILE, "k", false);
      j->Succeed(1);
      ids.push_back(j->id());
    }
    absl::StatusOr<std::vector<kiln::v1::Job>> all = store.List(0);
    ASSERT_TRUE(all.ok());
    EXPECT_LE(all->size(), 51u); // pruned at the last kPruneEvery-th finish
    EXPECT_TRUE(jobs.Get(ids.back()).ok());
    EXPECT_EQ(jobs.Get(ids.front()).status().code(), absl::StatusCode::kNotFound);
    EXPECT_TRUE(store.Load(open_id).ok());   // unfinished: never pruned
    EXPECT_LE(jobs.List(10000).size(), 61u); // the store's 50, the 10 in memory, the open one
  }
  // keep_records 0: every record stays.
  MemoryJobStore all_store;
  JobManager keep_all(&all_store, 10, size_t{64} << 20, /*keep_records=*/0);
  for (int64_t i = 0; i < JobManager::kPruneEvery + 5; ++i) {
    keep_all.Create(JOB_KIND_COMPILE, "k", false)->Succeed(1);
  }
  absl::StatusOr<std::vector<kiln::v1::Job>> every = all_store.List(0);
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(every->size(), static_cast<size_t>(JobManager::kPruneEvery + 5));
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

// Issue 27: ListJobs cost time in every job kept in memory (a snapshot of each
// of up to 10,000) whatever its limit. The index in ListJobs' order must list
// exactly what the full sort did: every job of this process (its snapshot)
// and every stored record of a job not in memory (an earlier process's, one
// evicted from memory), newest first then by id, only the viewer's, redacted,
// the first `limit`.
TEST(JobManager, ListsWhatAFullSortOfEveryJobWouldForEveryViewerAndLimit) {
  MemoryJobStore store;
  const std::vector<std::string> identities = {"", "alice", "bob", "carol"};
  // An earlier process's records: older, newer (a clock set back since) and
  // tied with this process's jobs; some joined by another identity.
  const int64_t now = absl::ToUnixMillis(absl::Now());
  for (int i = 0; i < 40; ++i) {
    kiln::v1::Job old;
    old.set_id(absl::StrFormat("j-%016x", 1000 + i));
    old.set_kind(JOB_KIND_COMPILE);
    old.set_state(kiln::v1::JOB_STATE_SUCCEEDED);
    old.set_owner(identities[i % 3]);
    if (i % 5 == 0) old.add_joined_by("carol");
    old.set_created_unix_ms(i % 4 == 0 ? now + 60000 : (i % 4 == 1 ? now : now - 60000 - i / 3));
    ASSERT_TRUE(store.Save(old).ok());
  }
  JobManager jobs(&store, /*keep_finished=*/25); // older finished ones: the store's only
  std::vector<std::shared_ptr<Job>> live;
  for (int i = 0; i < 120; ++i) {
    const std::string& owner = identities[(i * 7) % 3];
    std::shared_ptr<Job> job =
        jobs.JoinOrCreate(JOB_KIND_COMPILE, "k" + std::to_string(i), /*held=*/true, owner).job;
    if (i % 9 == 0) jobs.JoinOrCreate(JOB_KIND_COMPILE, "k" + std::to_string(i), true, "carol");
    if (i % 3 != 0) {
      job->Succeed(i); // finished: kept (the newest 25) or evicted
    } else {
      live.push_back(job);
    }
    if (i % 10 == 0) absl::SleepFor(absl::Milliseconds(2)); // several ties per millisecond
  }

  // The reference: every record, this process's snapshots first.
  std::vector<kiln::v1::Job> every;
  std::set<std::string> in_memory;
  absl::StatusOr<std::vector<kiln::v1::Job>> stored = store.List(0);
  ASSERT_TRUE(stored.ok());
  for (const kiln::v1::Job& j : *stored) {
    if (std::shared_ptr<Job> mine = jobs.Find(j.id())) {
      every.push_back(mine->Snapshot());
      in_memory.insert(j.id());
    } else {
      every.push_back(j);
    }
  }
  EXPECT_GT(in_memory.size(), 60u);
  EXPECT_LT(in_memory.size(), every.size() - 40); // evicted ones are stored only
  std::sort(every.begin(), every.end(), [](const kiln::v1::Job& a, const kiln::v1::Job& b) {
    return a.created_unix_ms() != b.created_unix_ms() ? a.created_unix_ms() > b.created_unix_ms()
                                                      : a.id() < b.id();
  });
  std::vector<JobViewer> viewers = {{"ops", true}, {"dave", false}};
  for (const std::string& id : identities) viewers.push_back({id, false});
  for (const JobViewer& viewer : viewers) {
    std::vector<std::string> want_all;
    for (kiln::v1::Job j : every) {
      if (!viewer.Sees(j)) continue;
      viewer.Redact(&j);
      want_all.push_back(j.id() + "/" + j.owner() + "/" + std::to_string(j.joined_by_size()) + "/" +
                         kiln::v1::JobState_Name(j.state()));
    }
    for (int64_t limit : {0, 1, 2, 3, 5, 8, 13, 24, 25, 26, 40, 50, 100, 159, 160, 161, 500}) {
      std::vector<std::string> want = want_all;
      if (limit > 0 && want.size() > static_cast<size_t>(limit)) want.resize(limit);
      std::vector<std::string> got;
      for (const kiln::v1::Job& j : jobs.ListFor(limit, viewer)) {
        got.push_back(j.id() + "/" + j.owner() + "/" + std::to_string(j.joined_by_size()) + "/" +
                      kiln::v1::JobState_Name(j.state()));
      }
      EXPECT_EQ(got, want) << "viewer '" << viewer.identity << "' admin " << viewer.admin
                           << " limit " << limit;
    }
  }
  for (const auto& job : live) job->Succeed(0);
}

// The work a list does is its limit's, not the number of jobs kept: 3,000
// jobs in memory, one in 16 Alice's; a list of 5 reads 5 of them.
TEST(JobManager, AListReadsAboutLimitJobsNotEveryJobKept) {
  MemoryJobStore store;
  JobManager jobs(&store);
  for (int i = 0; i < 3000; ++i) {
    jobs.Create(JOB_KIND_COMPILE, "k", false, i % 16 == 0 ? "alice" : "bob")->Succeed(i);
  }
  int64_t before = jobs.jobs_visited();
  EXPECT_EQ(jobs.ListFor(5, JobViewer{"ops", true}).size(), 5u);
  EXPECT_EQ(jobs.jobs_visited() - before, 5);
  before = jobs.jobs_visited();
  EXPECT_EQ(jobs.ListFor(5, JobViewer{"alice", false}).size(), 5u);
  EXPECT_EQ(jobs.jobs_visited() - before, 5); // not the 80 of Bob's before them
  before = jobs.jobs_visited();
  EXPECT_EQ(jobs.ListFor(10000, JobViewer{"alice", false}).size(), 188u);
  EXPECT_EQ(jobs.jobs_visited() - before, 188);
  before = jobs.jobs_visited();
  EXPECT_TRUE(jobs.ListFor(5, JobViewer{"carol", false}).empty());
  EXPECT_EQ(jobs.jobs_visited() - before, 0);
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
