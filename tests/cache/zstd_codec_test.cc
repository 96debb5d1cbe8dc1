#include "cache/zstd_codec.h"
#include "gtest/gtest.h"
#include "tests/cache/cache_test_util.h"

namespace kiln::cache {
namespace {

TEST(ZstdCodecTest, RoundTripsAndShrinksText) {
  const std::string text = testing::Text("ptx", 100000);
  absl::StatusOr<std::string> z = ZstdCompress(text, 3);
  ASSERT_TRUE(z.ok());
  EXPECT_LT(z->size(), text.size() / 4);
  absl::StatusOr<std::string> back = ZstdDecompress(*z, text.size());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, text);
}

TEST(ZstdCodecTest, WrongSizeOrGarbageIsDataLoss) {
  absl::StatusOr<std::string> z = ZstdCompress("hello hello hello hello", 3);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(ZstdDecompress(*z, 5).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ZstdDecompress("not a frame", 11).status().code(), absl::StatusCode::kDataLoss);
  std::string damaged = *z;
  damaged[damaged.size() / 2] ^= 0x55;
  absl::StatusOr<std::string> d = ZstdDecompress(damaged, 23);
  EXPECT_TRUE(!d.ok() || *d != "hello hello hello hello");
}

} // namespace
} // namespace kiln::cache
