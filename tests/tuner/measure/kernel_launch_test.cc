// tuner/measure/kernel_launch.h: EvalGrid turns the launch's extents into
// numbers for the sizes of a launch, and refuses extents CUDA does not
// launch (constant ones the compiler folds first: compiler/passes/fold_grid.h;
// symbolic ones only the launch knows) with a message naming the dimension.
#include <array>
#include <cstdint>

#include "compiler/ir/builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tuner/measure/kernel_launch.h"

namespace kiln::measure {
namespace {

using ::testing::HasSubstr;

codegen::LaunchSpec Spec() {
  codegen::LaunchSpec spec;
  spec.grid = {ir::IntImm(3), ir::VarRef("M"), ir::IntImm(2)};
  return spec;
}

TEST(EvalGrid, EvaluatesTheExtentsForTheLaunchSizes) {
  absl::StatusOr<std::array<int64_t, 3>> g = EvalGrid(Spec(), {{"M", 65535}});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)[0], 3);
  EXPECT_EQ((*g)[1], 65535);
  EXPECT_EQ((*g)[2], 2);
}

TEST(EvalGrid, RefusesExtentsCudaDoesNotLaunch) {
  absl::StatusOr<std::array<int64_t, 3>> tall = EvalGrid(Spec(), {{"M", 65536}});
  ASSERT_FALSE(tall.ok());
  EXPECT_THAT(tall.status().message(),
              HasSubstr("grid extent 1 is 65536 for these sizes; CUDA launches at most 65535 "
                        "blocks along y"));
  codegen::LaunchSpec wide;
  wide.grid = {ir::VarRef("M", ir::DType::kInt64)};
  absl::StatusOr<std::array<int64_t, 3>> w = EvalGrid(wide, {{"M", int64_t{1} << 31}});
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("at most 2147483647 blocks along x"));
  EXPECT_FALSE(EvalGrid(Spec(), {{"M", 0}}).ok());
}

} // namespace
} // namespace kiln::measure
