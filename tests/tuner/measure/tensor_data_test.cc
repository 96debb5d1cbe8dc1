// Kernel arguments of worker requests (tuner/measure/tensor_data.h): every
// TensorSpec init, scalars, the uniform data kiln-run makes, and the errors
// for malformed specs.
#include <cmath>
#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tuner/measure/tensor_data.h"

namespace kiln::measure {
namespace {

namespace pb = kiln::v1;
namespace rt = kiln::rt;
using ::testing::HasSubstr;

pb::TensorSpec* Add(google::protobuf::RepeatedPtrField<pb::TensorSpec>* specs, pb::DType dtype,
                    const std::vector<int64_t>& shape, pb::TensorSpec::Init init) {
  pb::TensorSpec* t = specs->Add();
  t->set_name(absl::StrCat("t", specs->size() - 1));
  t->set_dtype(dtype);
  for (int64_t d : shape) t->add_shape(d);
  t->set_init(init);
  return t;
}

TEST(TensorData, InitKinds) {
  google::protobuf::RepeatedPtrField<pb::TensorSpec> specs;
  Add(&specs, pb::DTYPE_FLOAT32, {2, 3}, pb::TensorSpec::INIT_ZEROS);
  Add(&specs, pb::DTYPE_FLOAT16, {4}, pb::TensorSpec::INIT_ONES);
  Add(&specs, pb::DTYPE_INT8, {300}, pb::TensorSpec::INIT_ARANGE);
  pb::TensorSpec* bytes = Add(&specs, pb::DTYPE_UINT8, {3}, pb::TensorSpec::INIT_BYTES);
  bytes->set_data("abc");
  absl::StatusOr<std::vector<tools::HostParam>> params = MakeHostParams(specs, 1 << 20);
  ASSERT_TRUE(params.ok()) << params.status();
  ASSERT_EQ(params->size(), 4u);
  EXPECT_EQ((*params)[0].before.data, std::string(24, '\0'));
  EXPECT_EQ((*params)[0].before.shape, (std::vector<int64_t>{2, 3}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(GetElement((*params)[1].before, i), 1.0);
  EXPECT_EQ(GetElement((*params)[2].before, 5), 5.0);
  EXPECT_EQ(GetElement((*params)[2].before, 129), static_cast<int8_t>(129)); // wraps like a cast
  EXPECT_EQ((*params)[3].before.data, "abc");
}

TEST(TensorData, UniformIsKilnRunsData) {
  google::protobuf::RepeatedPtrField<pb::TensorSpec> specs;
  Add(&specs, pb::DTYPE_FLOAT32, {8}, pb::TensorSpec::INIT_ZEROS);
  Add(&specs, pb::DTYPE_BFLOAT16, {16}, pb::TensorSpec::INIT_RANDOM_UNIFORM)->set_seed(7);
  absl::StatusOr<std::vector<tools::HostParam>> params = MakeHostParams(specs, 1 << 20);
  ASSERT_TRUE(params.ok()) << params.status();
  tools::NpyArray want;
  want.dtype = ir::DType::kBFloat16;
  want.shape = {16};
  want.data.assign(32, '\0');
  tools::FillRandom(want, 7, 1); // the parameter at position 1
  EXPECT_EQ((*params)[1].before.data, want.data);
}

TEST(TensorData, NormalHasRoughlyZeroMeanAndUnitVariance) {
  google::protobuf::RepeatedPtrField<pb::TensorSpec> specs;
  Add(&specs, pb::DTYPE_FLOAT64, {20000}, pb::TensorSpec::INIT_RANDOM_NORMAL)->set_seed(3);
  absl::StatusOr<std::vector<tools::HostParam>> params = MakeHostParams(specs, 1 << 20);
  ASSERT_TRUE(params.ok()) << params.status();
  double sum = 0, sq = 0;
  for (int i = 0; i < 20000; ++i) {
    const double v = GetElement((*params)[0].before, i);
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sq += v * v;
  }
  const double mean = sum / 20000, var = sq / 20000 - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(var, 1.0, 0.05);
}

TEST(TensorData, Scalars) {
  google::protobuf::RepeatedPtrField<pb::TensorSpec> specs;
  pb::TensorSpec* n = Add(&specs, pb::DTYPE_INT32, {}, pb::TensorSpec::INIT_UNSPECIFIED);
  n->mutable_scalar()->set_int_value(77);
  pb::TensorSpec* alpha = Add(&specs, pb::DTYPE_FLOAT16, {}, pb::TensorSpec::INIT_UNSPECIFIED);
  alpha->mutable_scalar()->set_float_value(0.5);
  pb::TensorSpec* big = Add(&specs, pb::DTYPE_INT64, {}, pb::TensorSpec::INIT_UNSPECIFIED);
  big->mutable_scalar()->set_int_value((int64_t{1} << 62) + 1);
  absl::StatusOr<std::vector<tools::HostParam>> params = MakeHostParams(specs, 1 << 20);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_TRUE((*params)[0].is_scalar);
  EXPECT_FALSE((*params)[0].is_output);
  EXPECT_EQ(GetElement((*params)[0].before, 0), 77);
  EXPECT_EQ(GetElement((*params)[1].before, 0), 0.5);
  int64_t exact = 0;
  std::memcpy(&exact, (*params)[2].before.data.data(), 8);
  EXPECT_EQ(exact, (int64_t{1} << 62) + 1);
}

TEST(TensorData, SetElementRoundsLikeTheGpu) {
  tools::NpyArray a;
  a.dtype = ir::DType::kFloat16;
  a.shape = {1};
  a.data.assign(2, '\0');
  SetElement(a, 0, 1.0 + 1.0 / 4096); // halfway between two halves: ties to even
  EXPECT_EQ(GetElement(a, 0), 1.0);
  a.dtype = ir::DType::kFloat8E4M3;
  a.data.assign(1, '\0');
  SetElement(a, 0, 1e6); // saturates
  EXPECT_EQ(GetElement(a, 0), 448.0);
}

TEST(TensorData, Errors) {
  struct Case {
    const char* name;
    pb::DType dtype;
    std::vector<int64_t> shape;
    pb::TensorSpec::Init init;
    std::string data;
    size_t limit;
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"unspecified dtype",
       pb::DTYPE_UNSPECIFIED,
       {1},
       pb::TensorSpec::INIT_ZEROS,
       "",
       1 << 20,
       absl::StatusCode::kInvalidArgument,
       "unspecified or unknown"},
      {"negative extent",
       pb::DTYPE_FLOAT32,
       {-1},
       pb::TensorSpec::INIT_ZEROS,
       "",
       1 << 20,
       absl::StatusCode::kInvalidArgument,
       "negative extent"},
      {"bytes of the wrong size",
       pb::DTYPE_FLOAT32,
       {2},
       pb::TensorSpec::INIT_BYTES,
       "abc",
       1 << 20,
       absl::StatusCode::kInvalidArgument,
       "holds 3 bytes"},
      {"over the memory limit",
       pb::DTYPE_FLOAT32,
       {1000},
       pb::TensorSpec::INIT_ZEROS,
       "",
       100,
       absl::StatusCode::kResourceExhausted,
       "more than 100 bytes"},
      {"absurd shape",
       pb::DTYPE_FLOAT32,
       {int64_t{1} << 30, int64_t{1} << 30},
       pb::TensorSpec::INIT_ZEROS,
       "",
       1 << 20,
       absl::StatusCode::kResourceExhausted,
       "too large"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    google::protobuf::RepeatedPtrField<pb::TensorSpec> specs;
    Add(&specs, c.dtype, c.shape, c.init)->set_data(c.data);
    absl::StatusOr<std::vector<tools::HostParam>> params = MakeHostParams(specs, c.limit);
    EXPECT_EQ(params.status().code(), c.code) << params.status();
    EXPECT_THAT(params.status().message(), HasSubstr(c.message));
  }
}

TEST(TensorData, ElementReadersMatchTheConversions) {
  // The per-dtype readers (a table for float16) give what the scalar
  // conversions give, for every float16 and bfloat16 bit pattern.
  std::string bytes(2, '\0');
  for (uint32_t b = 0; b < (1u << 16); ++b) {
    const auto bits = static_cast<uint16_t>(b);
    std::memcpy(bytes.data(), &bits, 2);
    const double h =
        WithElementReader(ir::DType::kFloat16, [&](auto read) { return read(bytes.data(), 0); });
    const double want_h = rt::half_to_float(rt::half_t{bits});
    if (std::isnan(want_h)) {
      ASSERT_TRUE(std::isnan(h)) << b;
    } else {
      ASSERT_EQ(h, want_h) << b;
    }
    const double bf = GetElement(ir::DType::kBFloat16, bytes.data(), 0);
    const double want_bf = rt::bfloat16_to_float(rt::bfloat16_t{bits});
    if (std::isnan(want_bf)) {
      ASSERT_TRUE(std::isnan(bf)) << b;
    } else {
      ASSERT_EQ(bf, want_bf) << b;
    }
  }
  const int32_t i32 = -7;
  bytes.assign(reinterpret_cast<const char*>(&i32), 4);
  EXPECT_EQ(GetElement(ir::DType::kInt32, bytes.data(), 0), -7.0);
}

TEST(TensorData, FormatIndex) {
  EXPECT_EQ(FormatIndex({3, 4}, 7), "[1, 3]");
  EXPECT_EQ(FormatIndex({5}, 4), "[4]");
  EXPECT_EQ(FormatIndex({}, 0), "[]");
}

} // namespace
} // namespace kiln::measure
