#include "cache/access_batcher.h"
#include "gtest/gtest.h"

namespace kiln::cache {
namespace {

TEST(AccessBatcherTest, DueBySizeKeepsNewestTimeAndCounts) {
  AccessBatcher b(3, std::chrono::hours(1));
  EXPECT_FALSE(b.RecordHit("a", 10));
  EXPECT_FALSE(b.RecordHit("a", 5)); // older: ignored
  EXPECT_FALSE(b.RecordHit("b", 7));
  EXPECT_FALSE(b.RecordMiss());
  EXPECT_TRUE(b.RecordHit("c", 8)); // third key
  AccessBatch batch = b.Take();
  EXPECT_EQ(batch.last_access_ms.at("a"), 10);
  EXPECT_EQ(batch.last_access_ms.size(), 3U);
  EXPECT_EQ(batch.hits, 4);
  EXPECT_EQ(batch.misses, 1);
  EXPECT_TRUE(b.Take().empty());
}

TEST(AccessBatcherTest, DueByAgeAndRestoreMerges) {
  AccessBatcher b(1000, std::chrono::milliseconds(50));
  EXPECT_FALSE(b.Due(AccessBatcher::Clock::now()));
  b.RecordHit("k", 1);
  EXPECT_FALSE(b.Due(AccessBatcher::Clock::now()));
  EXPECT_TRUE(b.Due(AccessBatcher::Clock::now() + std::chrono::milliseconds(60)));
  AccessBatch batch = b.Take();
  b.RecordHit("k", 3);
  b.Restore(batch);
  AccessBatch merged = b.Take();
  EXPECT_EQ(merged.last_access_ms.at("k"), 3);
  EXPECT_EQ(merged.hits, 2);
}

} // namespace
} // namespace kiln::cache
