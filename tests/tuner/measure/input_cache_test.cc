// The worker's cache of generated inputs (tuner/measure/input_cache.h): keys
// separate everything that changes the data, the bound holds with LRU
// eviction, and MakeHostParams gives the same bytes with or without it.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tuner/measure/input_cache.h"
#include "tuner/measure/tensor_data.h"

namespace kiln::measure {
namespace {

namespace pb = kiln::v1;

pb::TensorSpec Spec(pb::TensorSpec::Init init, const std::vector<int64_t>& shape,
                    uint64_t seed = 7) {
  pb::TensorSpec s;
  s.set_name("A");
  s.set_dtype(pb::DTYPE_FLOAT16);
  for (int64_t e : shape) s.add_shape(e);
  s.set_init(init);
  s.set_seed(seed);
  return s;
}

TEST(InputCache, KeysSeparateWhatChangesTheData) {
  const pb::TensorSpec base = Spec(pb::TensorSpec::INIT_RANDOM_UNIFORM, {64, 32});
  const std::string key = InputCache::KeyFor(base, 0);
  ASSERT_FALSE(key.empty());
  EXPECT_EQ(InputCache::KeyFor(base, 0), key);
  EXPECT_NE(InputCache::KeyFor(base, 1), key) << "the position picks the random stream";
  EXPECT_NE(InputCache::KeyFor(Spec(pb::TensorSpec::INIT_RANDOM_UNIFORM, {64, 32}, 8), 0), key);
  EXPECT_NE(InputCache::KeyFor(Spec(pb::TensorSpec::INIT_RANDOM_UNIFORM, {32, 64}), 0), key);
  EXPECT_NE(InputCache::KeyFor(Spec(pb::TensorSpec::INIT_RANDOM_NORMAL, {64, 32}), 0), key);
  pb::TensorSpec other_dtype = base;
  other_dtype.set_dtype(pb::DTYPE_FLOAT32);
  EXPECT_NE(InputCache::KeyFor(other_dtype, 0), key);
  pb::TensorSpec renamed = base;
  renamed.set_name("B");
  EXPECT_EQ(InputCache::KeyFor(renamed, 0), key) << "the name does not change the data";
  EXPECT_EQ(InputCache::KeyFor(Spec(pb::TensorSpec::INIT_ZEROS, {64, 32}), 0), "");
  EXPECT_EQ(InputCache::KeyFor(Spec(pb::TensorSpec::INIT_BYTES, {2}), 0), "");
  pb::TensorSpec scalar = base;
  scalar.mutable_scalar()->set_int_value(3);
  EXPECT_EQ(InputCache::KeyFor(scalar, 0), "");
}

TEST(InputCache, BoundedWithLeastRecentlyUsedEviction) {
  InputCache cache(10);
  cache.Insert("a", "aaaa");
  cache.Insert("b", "bbbb");
  ASSERT_NE(cache.Find("a"), nullptr); // a is now the most recent
  cache.Insert("c", "cccc");           // 12 bytes > 10: b goes
  EXPECT_EQ(cache.Find("b"), nullptr);
  ASSERT_NE(cache.Find("a"), nullptr);
  EXPECT_EQ(*cache.Find("c"), "cccc");
  EXPECT_EQ(cache.bytes(), 8u);
  cache.Insert("big", std::string(11, 'x')); // larger than the bound: not kept
  EXPECT_EQ(cache.Find("big"), nullptr);
  EXPECT_EQ(cache.entries(), 2u);
  cache.Insert("a", "A"); // replacing keeps the byte count exact
  EXPECT_EQ(*cache.Find("a"), "A");
  EXPECT_EQ(cache.bytes(), 5u);
  EXPECT_EQ(cache.hits(), 4u);
  EXPECT_EQ(cache.misses(), 2u);
}

TEST(InputCache, MakeHostParamsGivesTheSameBytesWithTheCache) {
  google::protobuf::RepeatedPtrField<pb::TensorSpec> specs;
  *specs.Add() = Spec(pb::TensorSpec::INIT_RANDOM_UNIFORM, {33, 17});
  *specs.Add() = Spec(pb::TensorSpec::INIT_RANDOM_NORMAL, {5, 9});
  *specs.Add() = Spec(pb::TensorSpec::INIT_ZEROS, {4});
  absl::StatusOr<std::vector<tools::HostParam>> plain = MakeHostParams(specs, 1 << 20);
  ASSERT_TRUE(plain.ok()) << plain.status();
  InputCache cache(1 << 20);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    absl::StatusOr<std::vector<tools::HostParam>> cached = MakeHostParams(specs, 1 << 20, &cache);
    ASSERT_TRUE(cached.ok()) << cached.status();
    ASSERT_EQ(cached->size(), plain->size());
    for (size_t i = 0; i < plain->size(); ++i) {
      EXPECT_EQ((*cached)[i].before.data, (*plain)[i].before.data) << i;
    }
  }
  EXPECT_EQ(cache.entries(), 2u); // zeros are not cached
  EXPECT_EQ(cache.misses(), 2u);
  EXPECT_EQ(cache.hits(), 2u);
}

} // namespace
} // namespace kiln::measure
