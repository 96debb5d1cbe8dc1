#include <filesystem>
#include <string>

#include "cache/cache.h"
#include "cache/job_log.h"
#include "gtest/gtest.h"

namespace kiln::cache {
namespace {

std::string FreshDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "job_log_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(JobLogTest, RecordsRoundTripAndSurviveReopening) {
  const std::string dir = FreshDir("roundtrip");
  const std::string payload("\x00\x01\xff binary", 10); // opaque bytes, NULs included
  {
    absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir);
    ASSERT_TRUE(c.ok()) << c.status();
    JobRecord a{"j-a", "compile", "running", "k1", 100, 0, payload};
    JobRecord b{"j-b", "benchmark", "succeeded", "k2", 200, 250, "b"};
    ASSERT_TRUE((*c)->jobs().Put(a).ok());
    ASSERT_TRUE((*c)->jobs().Put(b).ok());
    a.state = "failed";
    a.finished_unix_ms = 300;
    ASSERT_TRUE((*c)->jobs().Put(a).ok()); // replaces
  }
  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir);
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<JobRecord> a = (*c)->jobs().Get("j-a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->state, "failed");
  EXPECT_EQ(a->finished_unix_ms, 300);
  EXPECT_EQ(a->record, payload);
  EXPECT_EQ((*c)->jobs().Get("j-none").status().code(), absl::StatusCode::kNotFound);

  absl::StatusOr<std::vector<JobRecord>> all = (*c)->jobs().List(0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, "j-b"); // newest first
  absl::StatusOr<std::vector<JobRecord>> one = (*c)->jobs().List(1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1u);
  EXPECT_EQ((*c)->jobs().Put(JobRecord{}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(JobLogTest, UnfinishedOnlyAndPrune) {
  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(FreshDir("prune"));
  ASSERT_TRUE(c.ok()) << c.status();
  JobLog& log = (*c)->jobs();
  ASSERT_TRUE(log.Put({"j-old-done", "compile", "succeeded", "k", 10, 20, ""}).ok());
  ASSERT_TRUE(log.Put({"j-old-open", "compile", "running", "k", 11, 0, ""}).ok());
  ASSERT_TRUE(log.Put({"j-new-done", "compile", "succeeded", "k", 1000, 1001, ""}).ok());
  absl::StatusOr<std::vector<JobRecord>> open = log.List(0, /*unfinished_only=*/true);
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ((*open)[0].id, "j-old-open");
  absl::StatusOr<int64_t> pruned = log.Prune(500);
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 1); // only finished jobs go
  EXPECT_TRUE(log.Get("j-old-open").ok());
  EXPECT_TRUE(log.Get("j-new-done").ok());
  EXPECT_EQ(log.Get("j-old-done").status().code(), absl::StatusCode::kNotFound);
}

// Issue 27: kilnd wrote a record per job and never deleted one (the table
// grew with every request served, and counts against the cache's size).
TEST(JobLogTest, PruneKeepNewestKeepsTheNewestFinishedAndEveryUnfinished) {
  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(FreshDir("keep_newest"));
  ASSERT_TRUE(c.ok()) << c.status();
  JobLog& log = (*c)->jobs();
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(log.Put({"j-done-" + std::to_string(i), "compile", "succeeded", "k", 1000 + i,
                         2000 + i, ""})
                    .ok());
  }
  ASSERT_TRUE(log.Put({"j-open", "compile", "running", "k", 1, 0, ""}).ok()); // the oldest
  absl::StatusOr<int64_t> pruned = log.PruneKeepNewest(10);
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  EXPECT_EQ(*pruned, 90);
  absl::StatusOr<std::vector<JobRecord>> left = log.List(0);
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 11u);
  EXPECT_EQ(left->front().id, "j-done-99");
  EXPECT_TRUE(log.Get("j-done-90").ok());
  EXPECT_EQ(log.Get("j-done-89").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(log.Get("j-open").ok());
  // ListJobs reads only the records that can make its page.
  absl::StatusOr<std::vector<JobRecord>> since = log.List(0, false, /*min_created_ms=*/1095);
  ASSERT_TRUE(since.ok());
  ASSERT_EQ(since->size(), 5u);
  EXPECT_EQ(since->back().id, "j-done-95");
  // Nothing past the newest `keep`: nothing to do.
  pruned = log.PruneKeepNewest(10);
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 0);
  pruned = log.PruneKeepNewest(0);
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 10);
  EXPECT_TRUE(log.Get("j-open").ok());
}

} // namespace
} // namespace kiln::cache
