// Cache eviction: size-bounded LRU with soft and hard limits, pins, batched
// access times.
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "cache/cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/cache_test_util.h"
#include "util/temp_dir.h"

namespace kiln::cache {
namespace {

using ::testing::HasSubstr;
using testing::MakeArtifact;
using testing::MatchesKey;

// Each artifact is ~10 KiB on disk (10000-byte cubin, no PTX).
constexpr size_t kCubin = 10000;

class CacheEvictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-evict-test");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(*std::move(dir));
  }
  CacheOptions Options(uint64_t soft, uint64_t hard = 0) {
    CacheOptions o;
    o.background = false;
    o.sync = false;
    o.max_size_bytes = soft;
    o.hard_limit_bytes = hard;
    // Exact blob sizes (IndexFilesAndReserveCountAgainstTheLimit counts the
    // rest).
    o.limits_count_overhead = false;
    o.access_flush_interval = std::chrono::hours(1); // flushes only when asked
    o.access_flush_keys = 100000;
    o.on_warning = [](const std::string&) {};
    return o;
  }
  std::unique_ptr<Cache> Open(CacheOptions o) {
    absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir_->path(), std::move(o));
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  static absl::Status Put(Cache& c, int i) {
    const std::string k = "k" + std::to_string(i);
    return c.PutArtifact(k, MakeArtifact(k, kCubin, 0));
  }
  static bool Has(Cache& c, int i) { return *c.ContainsArtifact("k" + std::to_string(i)); }

  std::optional<util::TempDir> dir_;
};

TEST_F(CacheEvictionTest, SoftLimitEvictsLeastRecentlyUsedFirst) {
  std::unique_ptr<Cache> c = Open(Options(100000, 1000000));
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(Put(*c, i).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(2)); // distinct access times
  }
  ASSERT_TRUE(c->GetArtifact("k0").ok()); // k0 is now the most recent
  ASSERT_TRUE(c->FlushAccessTimes().ok());
  for (int i = 8; i < 12; ++i) ASSERT_TRUE(Put(*c, i).ok());
  absl::StatusOr<CacheStats> s = c->Stats();
  ASSERT_TRUE(s.ok());
  EXPECT_LE(s->blob_bytes, 100000U);
  EXPECT_GT(s->evictions, 0);
  EXPECT_TRUE(Has(*c, 0)) << "recently read, must survive";
  EXPECT_FALSE(Has(*c, 1)) << "least recently used, must go first";
  EXPECT_TRUE(Has(*c, 11));
  // Whatever is left reads back whole.
  absl::StatusOr<std::vector<ArtifactSummary>> left = c->ListArtifacts();
  ASSERT_TRUE(left.ok());
  for (const ArtifactSummary& a : *left) {
    EXPECT_TRUE(MatchesKey(*c->GetArtifact(a.key), a.key, kCubin, 0)) << a.key;
  }
  EXPECT_TRUE(c->Verify()->ok());
}

// Bytes of every file under `dir` (what the cache takes on disk).
uint64_t DiskBytes(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) total += e.file_size();
  }
  return total;
}

// Issue 27, item 6: the limit counted blob bytes only, so the SQLite index
// (its WAL above all, which keeps its largest size) and the reserve file
// came on top of it. The cache's files on disk now stay under the limit.
TEST_F(CacheEvictionTest, IndexFilesAndReserveCountAgainstTheLimit) {
  constexpr uint64_t kSoft = 1500000;
  CacheOptions o = Options(kSoft, 4000000);
  o.limits_count_overhead = true; // the default
  o.reserve_bytes = 1 << 20;
  std::unique_ptr<Cache> c = Open(o);
  for (int i = 0; i < 120; ++i) ASSERT_TRUE(Put(*c, i).ok()); // 1.2 MB of blobs
  absl::StatusOr<CacheStats> s = c->Stats();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GE(s->overhead_bytes, uint64_t{1} << 20); // the reserve at least
  EXPECT_LE(s->blob_bytes + s->overhead_bytes, kSoft);
  EXPECT_LE(DiskBytes(dir_->path()), kSoft);
  EXPECT_GT(s->evictions, 0);
  EXPECT_TRUE(Has(*c, 119)) << "the newest stays";
}

// A limit that the index and the reserve alone reach is told at open.
TEST_F(CacheEvictionTest, ALimitBelowTheOverheadIsAWarning) {
  CacheOptions o = Options(500000);
  o.limits_count_overhead = true;
  o.reserve_bytes = 1 << 20;
  std::vector<std::string> warnings;
  o.on_warning = [&warnings](const std::string& w) { warnings.push_back(w); };
  std::unique_ptr<Cache> c = Open(o);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("size limit of 500000 bytes is not above"));
  o.max_size_bytes = 16 << 20;
  warnings.clear();
  c = Open(o);
  EXPECT_TRUE(warnings.empty());
}

TEST_F(CacheEvictionTest, AccessTimesAreBatchedNotWrittenPerHit) {
  std::unique_ptr<Cache> reader = Open(Options(0));
  std::unique_ptr<Cache> observer = Open(Options(0));
  ASSERT_TRUE(Put(*reader, 1).ok());
  const int64_t stored = (*observer->ListArtifacts())[0].last_access_unix_ms;
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(reader->GetArtifact("k1").ok());
  // Not yet in the index: the observer (another connection) sees the old time.
  EXPECT_EQ((*observer->ListArtifacts())[0].last_access_unix_ms, stored);
  ASSERT_TRUE(reader->FlushAccessTimes().ok());
  EXPECT_GT((*observer->ListArtifacts())[0].last_access_unix_ms, stored);
  EXPECT_EQ(observer->Stats()->hits, 100);
}

TEST_F(CacheEvictionTest, BatchFlushesBySizeWithoutBackgroundThread) {
  CacheOptions o = Options(0);
  o.access_flush_keys = 2;
  std::unique_ptr<Cache> c = Open(o);
  std::unique_ptr<Cache> observer = Open(Options(0));
  ASSERT_TRUE(Put(*c, 1).ok());
  ASSERT_TRUE(Put(*c, 2).ok());
  ASSERT_TRUE(c->GetArtifact("k1").ok());
  EXPECT_EQ(observer->Stats()->hits, 0);
  ASSERT_TRUE(c->GetArtifact("k2").ok()); // second key: the batch is due
  EXPECT_EQ(observer->Stats()->hits, 2);
}

TEST_F(CacheEvictionTest, PinnedArtifactsAreNeverEvicted) {
  std::unique_ptr<Cache> c = Open(Options(0));
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Put(*c, i).ok());
  BestConfig best;
  best.config_json = "{}";
  best.artifact_key = "k0"; // the oldest
  ASSERT_TRUE(c->PutBest({"p", "s", "cpu", "x"}, best).ok());
  absl::StatusOr<GcReport> r = c->Gc(GcOptions{0, false});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->evicted_artifacts, 5);
  EXPECT_TRUE(Has(*c, 0));
  EXPECT_EQ(c->Stats()->artifacts, 1);
  EXPECT_EQ(c->Stats()->pinned_artifacts, 1);
  EXPECT_TRUE(MatchesKey(*c->GetArtifact("k0"), "k0", kCubin, 0));
  // Unpinned, it can go.
  ASSERT_TRUE(c->RemoveBest({"p", "s", "cpu", "x"}).ok());
  ASSERT_TRUE(c->Gc(GcOptions{0, false}).ok());
  EXPECT_FALSE(Has(*c, 0));
  EXPECT_EQ(c->Stats()->blob_bytes, 0U);
}

TEST_F(CacheEvictionTest, HardLimitRejectsWritesUntilEvictionCatchesUp) {
  // Everything stored is pinned, so eviction cannot make room: writes past
  // the hard limit fail with kExhausted and leave nothing behind.
  std::unique_ptr<Cache> c = Open(Options(30000, 50000));
  BestConfig best;
  best.config_json = "{}";
  int stored = 0;
  absl::Status s;
  for (int i = 0; i < 10; ++i) {
    // Pinned before it exists, so that no eviction can pick it.
    best.artifact_key = "k" + std::to_string(i);
    ASSERT_TRUE(c->PutBest({"p", std::to_string(i), "cpu", "x"}, best).ok());
    s = Put(*c, i);
    if (!s.ok()) break;
    ++stored;
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), HasSubstr("hard limit"));
  EXPECT_EQ(stored, 4);
  const uint64_t bytes = c->Stats()->blob_bytes;
  EXPECT_LE(bytes, 50000U);
  EXPECT_EQ(c->Verify()->orphan_files, 0) << "a rejected put must not leave blobs";
  for (int i = 0; i < stored; ++i) EXPECT_TRUE(c->GetArtifact("k" + std::to_string(i)).ok());
  // Unpin: eviction catches up, and writes are accepted again.
  for (int i = 0; i <= stored; ++i) {
    ASSERT_TRUE(c->RemoveBest({"p", std::to_string(i), "cpu", "x"}).ok());
  }
  ASSERT_TRUE(c->Gc().ok());
  EXPECT_TRUE(Put(*c, 100).ok());
}

TEST_F(CacheEvictionTest, BackgroundThreadEvictsPastTheSoftLimit) {
  CacheOptions o = Options(50000, 1000000);
  o.background = true;
  o.access_flush_interval = std::chrono::milliseconds(20);
  std::unique_ptr<Cache> c = Open(o);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Put(*c, i).ok());
  // The put returned before eviction; wait (bounded) for the thread.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c->Stats()->blob_bytes > 50000U && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_LE(c->Stats()->blob_bytes, 50000U);
  EXPECT_TRUE(Has(*c, 9));
  EXPECT_FALSE(Has(*c, 0));
}

TEST_F(CacheEvictionTest, LimitsAreRecordedForLaterOpens) {
  { std::unique_ptr<Cache> daemon = Open(Options(123456, 234567)); }
  std::unique_ptr<Cache> cli = Open(Options(0));
  absl::StatusOr<CacheStats> s = cli->Stats();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->soft_limit_bytes, 123456U);
  EXPECT_EQ(s->hard_limit_bytes, 234567U);
}

TEST_F(CacheEvictionTest, GcMaxSizeOverridesTheSoftLimit) {
  std::unique_ptr<Cache> c = Open(Options(0));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Put(*c, i).ok());
  absl::StatusOr<GcReport> r = c->Gc(GcOptions{25000, false});
  ASSERT_TRUE(r.ok());
  EXPECT_LE(r->bytes_after, 25000U);
  EXPECT_GT(r->bytes_before, r->bytes_after);
  EXPECT_EQ(r->evicted_artifacts, 3);
}

} // namespace
} // namespace kiln::cache
