// Output validation (tuner/measure/output_compare.h): the tolerance rule of
// kiln-run --check, NaN/inf handling, the first-mismatch text and the
// accumulation over several outputs.
#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tuner/measure/output_compare.h"
#include "tuner/measure/tensor_data.h"

namespace kiln::measure {
namespace {

tools::NpyArray Array(ir::DType dtype, std::vector<int64_t> shape, std::vector<double> values) {
  tools::NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.data.assign(values.size() * static_cast<size_t>(tools::DTypeBytes(dtype)), '\0');
  for (size_t i = 0; i < values.size(); ++i) SetElement(a, static_cast<int64_t>(i), values[i]);
  return a;
}

TEST(OutputCompare, EqualOutputsPass) {
  tools::NpyArray got = Array(ir::DType::kFloat32, {2, 2}, {1, 2, 3, 4});
  kiln::v1::ValidateResponse r;
  ASSERT_TRUE(CompareOutput("C", got, got.data, 0, 0, &r).ok());
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.mismatches(), 0);
  EXPECT_EQ(r.max_abs_error(), 0);
  EXPECT_EQ(r.first_mismatch(), "");
}

TEST(OutputCompare, FirstMismatchNamesTheElement) {
  tools::NpyArray got = Array(ir::DType::kFloat32, {2, 3}, {1, 2, 3, 4, 1.5, 6});
  tools::NpyArray want = Array(ir::DType::kFloat32, {2, 3}, {1, 2, 3, 4, 1.25, 7});
  kiln::v1::ValidateResponse r;
  ASSERT_TRUE(CompareOutput("C", got, want.data, 0, 0, &r).ok());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.mismatches(), 2);
  EXPECT_EQ(r.first_mismatch(), "C[1, 1]: got 1.5 want 1.25");
  EXPECT_DOUBLE_EQ(r.max_abs_error(), 1.0);
  EXPECT_DOUBLE_EQ(r.max_rel_error(), 0.2);
}

TEST(OutputCompare, DefaultToleranceOfHalfAcceptsRounding) {
  tools::NpyArray got = Array(ir::DType::kFloat16, {3}, {1.0, 0.5, 100});
  tools::NpyArray want = Array(ir::DType::kFloat16, {3}, {1.0009765625, 0.5, 100.5});
  kiln::v1::ValidateResponse r;
  ASSERT_TRUE(CompareOutput("y", got, want.data, 0, 0, &r).ok());
  EXPECT_TRUE(r.ok()) << r.first_mismatch();
}

TEST(OutputCompare, ExplicitToleranceIsUsedAsGiven) {
  tools::NpyArray got = Array(ir::DType::kFloat32, {1}, {1.1});
  tools::NpyArray want = Array(ir::DType::kFloat32, {1}, {1.0});
  kiln::v1::ValidateResponse loose, strict;
  ASSERT_TRUE(CompareOutput("y", got, want.data, 0, 0.2, &loose).ok());
  ASSERT_TRUE(CompareOutput("y", got, want.data, 1e-6, 1e-6, &strict).ok());
  EXPECT_TRUE(loose.ok());
  EXPECT_FALSE(strict.ok());
}

TEST(OutputCompare, IntegersAreExactUnderTheDefaults) {
  tools::NpyArray got = Array(ir::DType::kInt32, {2}, {5, 7});
  tools::NpyArray want = Array(ir::DType::kInt32, {2}, {5, 8});
  kiln::v1::ValidateResponse r;
  ASSERT_TRUE(CompareOutput("n", got, want.data, 0, 0, &r).ok());
  EXPECT_EQ(r.first_mismatch(), "n[1]: got 7 want 8");
}

TEST(OutputCompare, NanAndInfinityMatchByKind) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  tools::NpyArray got = Array(ir::DType::kFloat32, {3}, {nan, inf, -inf});
  kiln::v1::ValidateResponse same, different;
  ASSERT_TRUE(CompareOutput("y", got, got.data, 0, 0, &same).ok());
  EXPECT_TRUE(same.ok());
  tools::NpyArray want = Array(ir::DType::kFloat32, {3}, {1, inf, inf});
  ASSERT_TRUE(CompareOutput("y", got, want.data, 0, 0, &different).ok());
  EXPECT_EQ(different.mismatches(), 2);
}

TEST(OutputCompare, AccumulatesOverOutputs) {
  tools::NpyArray a = Array(ir::DType::kFloat32, {1}, {1});
  tools::NpyArray b = Array(ir::DType::kFloat32, {1}, {2});
  kiln::v1::ValidateResponse r;
  r.set_ok(true);
  ASSERT_TRUE(CompareOutput("A", a, a.data, 0, 0, &r).ok());
  ASSERT_TRUE(CompareOutput("B", b, a.data, 0, 0, &r).ok());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.mismatches(), 1);
  EXPECT_EQ(r.first_mismatch(), "B[0]: got 2 want 1");
}

TEST(OutputCompare, WrongReferenceSizeIsAnError) {
  tools::NpyArray got = Array(ir::DType::kFloat32, {2}, {1, 2});
  kiln::v1::ValidateResponse r;
  absl::Status s = CompareOutput("C", got, "abc", 0, 0, &r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("holds 3 bytes, the output 8"));
}

TEST(OutputCompare, SplittingOverThreadsGivesTheSameResult) {
  // 5 Mi elements (several chunks): two mismatches in different chunks, a
  // NaN pair (equal), and the peak that scales atol in yet another chunk.
  const int64_t n = int64_t{5} << 20;
  tools::NpyArray got;
  got.dtype = ir::DType::kFloat16;
  got.shape = {n / 1024, 1024};
  got.data.assign(static_cast<size_t>(n) * 2, '\0');
  tools::NpyArray want = got;
  for (int64_t i = 0; i < n; i += 4099) SetElement(want, i, 0.25);
  got = want;
  SetElement(want, (int64_t{3} << 20) / 2 * 3 + 7, 0.75); // peak, kept equal
  SetElement(got, (int64_t{3} << 20) / 2 * 3 + 7, 0.75);
  const int64_t first_bad = (int64_t{5} << 19) + 3;
  SetElement(got, first_bad, 0.5);
  SetElement(got, n - 2, -1);
  SetElement(got, 12, std::nan(""));
  SetElement(want, 12, std::nan(""));
  kiln::v1::ValidateResponse one, many;
  ASSERT_TRUE(CompareOutput("P", got, want.data, 0, 0, &one, 1).ok());
  ASSERT_TRUE(CompareOutput("P", got, want.data, 0, 0, &many, 7).ok());
  EXPECT_FALSE(one.ok());
  EXPECT_EQ(one.mismatches(), 2);
  EXPECT_EQ(one.first_mismatch(), "P[2560, 3]: got 0.5 want 0");
  EXPECT_EQ(many.mismatches(), one.mismatches());
  EXPECT_EQ(many.first_mismatch(), one.first_mismatch());
  EXPECT_EQ(many.max_abs_error(), one.max_abs_error());
  EXPECT_EQ(many.max_rel_error(), one.max_rel_error());
  EXPECT_DOUBLE_EQ(one.max_abs_error(), 1.0);
}

} // namespace
} // namespace kiln::measure
