// The tensor-map plan (tuner/measure/tensor_map.h): the arguments of
// cuTensorMapEncodeTiled from a TensorMapSpec, a tensor's shape and its
// element size, innermost first, and every shape the TMA cannot take as a
// clear error naming the tensor. No GPU needed.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tuner/measure/tensor_map.h"

namespace kiln::measure {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint64_t kAddress = 0x7f0000001000;

TEST(PlanTensorMap, Rank2Fp16With128ByteSwizzle) {
  // A (300 x 72) fp16 matrix, loaded in 128 x 64 boxes.
  absl::StatusOr<TensorMapEncoding> e = PlanTensorMap("A", kAddress, {300, 72}, 2, {128, 64}, 128);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->data_type, kTensorMapUint16);
  EXPECT_EQ(e->rank, 2u);
  EXPECT_EQ(e->global_address, kAddress);
  EXPECT_THAT(e->global_dim, ElementsAre(72, 300, 0, 0, 0));
  EXPECT_THAT(e->global_strides, ElementsAre(144, 0, 0, 0));
  EXPECT_THAT(e->box_dim, ElementsAre(64, 128, 0, 0, 0));
  EXPECT_THAT(e->element_strides, ElementsAre(1, 1, 0, 0, 0));
  EXPECT_EQ(e->swizzle, 3); // CU_TENSOR_MAP_SWIZZLE_128B
  EXPECT_EQ(e->interleave, kTensorMapInterleaveNone);
  EXPECT_EQ(e->l2_promotion, kTensorMapL2Promotion128B);
  EXPECT_EQ(e->oob_fill, kTensorMapOobFillNone);
}

TEST(PlanTensorMap, Rank3Fp32) {
  // A batch of 3 (20 x 12) fp32 matrices, one 1 x 16 x 8 box, no swizzle.
  absl::StatusOr<TensorMapEncoding> e = PlanTensorMap("B", kAddress, {3, 20, 12}, 4, {1, 16, 8}, 0);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->data_type, kTensorMapUint32);
  EXPECT_EQ(e->rank, 3u);
  EXPECT_THAT(e->global_dim, ElementsAre(12, 20, 3, 0, 0));
  EXPECT_THAT(e->global_strides, ElementsAre(48, 960, 0, 0));
  EXPECT_THAT(e->box_dim, ElementsAre(8, 16, 1, 0, 0));
  EXPECT_THAT(e->element_strides, ElementsAre(1, 1, 1, 0, 0));
  EXPECT_EQ(e->swizzle, kTensorMapSwizzleNone);
}

TEST(PlanTensorMap, DataTypeAndSwizzleByElementSizeAndBytes) {
  struct Case {
    int64_t element_bytes;
    int swizzle_bytes;
    int data_type;
    int swizzle;
  };
  for (const Case& c : {Case{1, 32, kTensorMapUint8, 1}, Case{2, 64, kTensorMapUint16, 2},
                        Case{4, 128, kTensorMapUint32, 3}, Case{8, 0, kTensorMapUint64, 0}}) {
    SCOPED_TRACE(testing::Message()
                 << c.element_bytes << "-byte elements, swizzle " << c.swizzle_bytes);
    // The innermost box row is 32 bytes: within every swizzle.
    absl::StatusOr<TensorMapEncoding> e = PlanTensorMap("T", kAddress, {64, 64}, c.element_bytes,
                                                        {8, 32 / c.element_bytes}, c.swizzle_bytes);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->data_type, c.data_type);
    EXPECT_EQ(e->swizzle, c.swizzle);
  }
}

TEST(PlanTensorMap, RankOneAndFive) {
  absl::StatusOr<TensorMapEncoding> one = PlanTensorMap("v", kAddress, {1000}, 4, {256}, 0);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(one->global_dim, ElementsAre(1000, 0, 0, 0, 0));
  EXPECT_THAT(one->global_strides, ElementsAre(0, 0, 0, 0));
  absl::StatusOr<TensorMapEncoding> five =
      PlanTensorMap("t", kAddress, {2, 3, 4, 5, 8}, 2, {1, 1, 2, 5, 8}, 0);
  ASSERT_TRUE(five.ok()) << five.status();
  EXPECT_THAT(five->global_dim, ElementsAre(8, 5, 4, 3, 2));
  EXPECT_THAT(five->global_strides, ElementsAre(16, 80, 320, 960));
  EXPECT_THAT(five->box_dim, ElementsAre(8, 5, 2, 1, 1));
}

TEST(PlanTensorMap, RefusesWhatTheTmaCannotTake) {
  struct Case {
    const char* what;
    uint64_t address;
    std::vector<int64_t> shape;
    int64_t element_bytes;
    std::vector<int64_t> box;
    int swizzle_bytes;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"unaligned pointer", kAddress + 8, {64, 64}, 2, {64, 64}, 0, "is not 16-byte aligned"},
      {"row stride of 70 bytes",
       kAddress,
       {64, 35},
       2,
       {64, 8},
       0,
       "the stride of dimension 0 is 70 bytes, not a multiple of 16"},
      {"rank 0", kAddress, {}, 2, {}, 0, "rank 0 is outside 1..5"},
      {"rank 6", kAddress, {1, 1, 1, 1, 1, 8}, 2, {1, 1, 1, 1, 1, 8}, 0, "rank 6 is outside 1..5"},
      {"box of another rank",
       kAddress,
       {64, 64},
       2,
       {64},
       0,
       "the box has 1 dimensions for a tensor of rank 2"},
      {"box extent 0",
       kAddress,
       {64, 64},
       2,
       {0, 64},
       0,
       "box extent 0 of dimension 0 is outside 1..256"},
      {"box extent 257",
       kAddress,
       {512, 64},
       2,
       {257, 8},
       0,
       "box extent 257 of dimension 0 is outside 1..256"},
      {"empty tensor",
       kAddress,
       {0, 64},
       2,
       {8, 64},
       0,
       "extent 0 of dimension 0 is outside 1..2^32"},
      {"element size 3", kAddress, {64, 64}, 3, {8, 16}, 0, "element size is not 1, 2, 4 or 8"},
      {"swizzle 16", kAddress, {64, 64}, 2, {8, 64}, 16, "swizzle of 16 bytes"},
      {"box row of 24 bytes",
       kAddress,
       {64, 64},
       2,
       {8, 12},
       0,
       "the innermost box row is 24 bytes, not a multiple of 16"},
      {"box row wider than the swizzle",
       kAddress,
       {64, 128},
       2,
       {8, 128},
       128,
       "the innermost box row is 256 bytes, wider than the 128-byte swizzle"},
      {"stride of 2^40 bytes",
       kAddress,
       {2, int64_t{1} << 28, 1024},
       4,
       {1, 1, 8},
       0,
       "the stride of dimension 0 is 2^40 bytes or more"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    absl::StatusOr<TensorMapEncoding> e =
        PlanTensorMap("A", c.address, c.shape, c.element_bytes, c.box, c.swizzle_bytes);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(e.status().message(), HasSubstr("tensor map for 'A'"));
    EXPECT_THAT(e.status().message(), HasSubstr(c.message));
  }
}

TEST(PlanTensorMap, Rank3RowStrideNotAMultipleOf16) {
  // 3 one-byte columns make each row 3 bytes: the innermost stride (of
  // dimension 1, the rows) is what fails.
  absl::StatusOr<TensorMapEncoding> e = PlanTensorMap("C", kAddress, {2, 5, 3}, 1, {1, 1, 16}, 0);
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("'C'"));
  EXPECT_THAT(e.status().message(), HasSubstr("the stride of dimension 1 is 3 bytes"));
}

TEST(CuTensorMap, Is128BytesAnd64ByteAligned) {
  EXPECT_EQ(sizeof(CuTensorMap), 128u);
  EXPECT_EQ(alignof(CuTensorMap), 64u);
}

} // namespace
} // namespace kiln::measure
