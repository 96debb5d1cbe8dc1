// Launch plans from artifact metadata (server/launch_plan.h): extent
// expressions in the IR text syntax, tensor and scalar arguments, dynamic
// symbols appended, and located errors for what cannot be launched.
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/launch_plan.h"

namespace kiln::server {
namespace {

namespace pb = kiln::v1;
using ::testing::HasSubstr;

absl::StatusOr<int64_t> Eval(const std::string& text, std::map<std::string, int64_t> s = {}) {
  return EvalExtent(text, s);
}

TEST(EvalExtent, NumbersSymbolsAndOperatorsWithIrPrecedence) {
  EXPECT_EQ(*Eval("128"), 128);
  EXPECT_EQ(*Eval("(M + 63) // 64", {{"M", 130}}), 3);
  EXPECT_EQ(*Eval("M + 63 // 64", {{"M", 130}}), 130); // // binds tighter
  EXPECT_EQ(*Eval("2 * 3 + 4 * 5"), 26);
  EXPECT_EQ(*Eval("10 - 3 - 2"), 5); // left-associative
  EXPECT_EQ(*Eval("min(N, 256)", {{"N", 300}}), 256);
  EXPECT_EQ(*Eval("max(N, 256)", {{"N", 300}}), 300);
  EXPECT_EQ(*Eval("int64(4) * K", {{"K", 3}}), 12);
  EXPECT_EQ(*Eval("cast<int64>(K) + 1", {{"K", 3}}), 4);
  EXPECT_EQ(*Eval("select(M < 10, 1, 2)", {{"M", 12}}), 2);
  EXPECT_EQ(*Eval("-(7) // 2"), -4); // floor division
  EXPECT_EQ(*Eval("-(7) % 2"), 1);   // floor modulo
  EXPECT_EQ(*Eval("ceildiv(N, 64)", {{"N", 65}}), 2);
}

// Launch metadata shows the user's names, which may be words the syntax
// uses: a name is a function only when `(` follows (or `<` right after
// `cast`), and a bound symbol wins over a literal.
TEST(EvalExtent, SymbolsMayBeCalledLikeTheSyntaxWords) {
  EXPECT_EQ(*Eval("(in + 63) // 64", {{"in", 130}}), 3);
  EXPECT_EQ(*Eval("max(max, 4) * min", {{"max", 3}, {"min", 5}}), 20);
  EXPECT_EQ(*Eval("cast * 2 + cast<int64>(select)", {{"cast", 3}, {"select", 1}}), 7);
  EXPECT_EQ(*Eval("cast < 4", {{"cast", 3}}), 1);
  EXPECT_EQ(*Eval("true + int64", {{"true", 5}, {"int64", 2}}), 7);
  EXPECT_EQ(*Eval("true + 1"), 2); // no symbol of that name: the literal
}

TEST(EvalExtent, ErrorsNameTheExtent) {
  absl::StatusOr<int64_t> r = Eval("(M + 63) // 64");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("symbol M has no value"));
  EXPECT_THAT(r.status().message(), HasSubstr("(M + 63) // 64"));
  EXPECT_THAT(Eval("4 // 0").status().message(), HasSubstr("division by zero"));
  EXPECT_THAT(Eval("4 +").status().message(), HasSubstr("ends early"));
  EXPECT_THAT(Eval("4 4").status().message(), HasSubstr("unexpected"));
  EXPECT_THAT(Eval("9223372036854775807 + 1").status().message(), HasSubstr("overflows"));
  EXPECT_THAT(Eval("exp(2)").status().message(), HasSubstr("cannot evaluate exp()"));
}

pb::LaunchInfo GemmLaunch() {
  pb::LaunchInfo l;
  l.set_kernel_symbol("kiln_kernel");
  l.add_grid("(N + 127) // 128");
  l.add_grid("(M + 127) // 128");
  l.add_grid("1");
  l.add_block(128);
  l.add_block(1);
  l.add_block(1);
  l.set_dynamic_shared_bytes(32768);
  for (const char* name : {"A", "B", "C"}) {
    pb::ParamInfo* p = l.add_params();
    p->set_name(name);
    p->set_dtype(pb::DTYPE_FLOAT16);
    p->set_is_output(std::string(name) == "C");
    p->add_shape("M");
    p->add_shape("64");
  }
  pb::ParamInfo* alpha = l.add_params();
  alpha->set_name("alpha");
  alpha->set_dtype(pb::DTYPE_FLOAT32);
  alpha->set_is_scalar(true);
  l.add_symbols("M");
  l.add_symbols("N");
  return l;
}

pb::BindingValue Int(int64_t v) {
  pb::BindingValue b;
  b.set_int_value(v);
  return b;
}

TEST(MakeLaunchPlan, GridTensorsScalarsAndSymbolsInKernelOrder) {
  pb::BindingValue alpha;
  alpha.set_float_value(0.5);
  LaunchPlanOptions o;
  o.module_id = "m1";
  o.seed = 9;
  absl::StatusOr<pb::LaunchSpec> plan =
      MakeLaunchPlan(GemmLaunch(), {{"M", Int(300)}, {"N", Int(129)}, {"alpha", alpha}}, o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->module_id(), "m1");
  EXPECT_THAT(plan->grid(), ::testing::ElementsAre(2, 3, 1));
  EXPECT_THAT(plan->block(), ::testing::ElementsAre(128, 1, 1));
  EXPECT_EQ(plan->dynamic_shared_bytes(), 32768);
  ASSERT_EQ(plan->args_size(), 6);
  EXPECT_EQ(plan->args(0).name(), "A");
  EXPECT_THAT(plan->args(0).shape(), ::testing::ElementsAre(300, 64));
  EXPECT_EQ(plan->args(0).init(), pb::TensorSpec::INIT_RANDOM_UNIFORM);
  EXPECT_EQ(plan->args(0).seed(), 9u);
  EXPECT_FALSE(plan->args(0).is_output());
  EXPECT_EQ(plan->args(2).init(), pb::TensorSpec::INIT_ZEROS);
  EXPECT_TRUE(plan->args(2).is_output());
  EXPECT_DOUBLE_EQ(plan->args(3).scalar().float_value(), 0.5);
  EXPECT_EQ(plan->args(4).name(), "M");
  EXPECT_EQ(plan->args(4).scalar().int_value(), 300);
  EXPECT_EQ(plan->args(4).dtype(), pb::DTYPE_INT32);
  EXPECT_EQ(plan->args(5).scalar().int_value(), 129);
}

// The worker encodes CUDA tensor maps (TMA) from the plan: they go along
// unchanged, after the args.
TEST(MakeLaunchPlan, CarriesTheTensorMaps) {
  pb::LaunchInfo launch = GemmLaunch();
  pb::TensorMap* map = launch.add_tensor_maps();
  map->set_param("B");
  map->add_box(32);
  map->add_box(64);
  map->set_swizzle_bytes(128);
  pb::BindingValue alpha;
  alpha.set_float_value(1);
  absl::StatusOr<pb::LaunchSpec> plan =
      MakeLaunchPlan(launch, {{"M", Int(30)}, {"N", Int(12)}, {"alpha", alpha}}, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->tensor_maps_size(), 1);
  EXPECT_EQ(plan->tensor_maps(0).param(), "B");
  EXPECT_THAT(plan->tensor_maps(0).box(), ::testing::ElementsAre(32, 64));
  EXPECT_EQ(plan->tensor_maps(0).swizzle_bytes(), 128);
}

// A launch sequence (several kernels, global workspaces) becomes one worker
// launch of the whole sequence: each further kernel's grid evaluated, the
// workspaces' sizes in bytes.
TEST(MakeLaunchPlan, CarriesALaunchSequence) {
  pb::LaunchInfo launch = GemmLaunch();
  pb::KernelLaunchInfo* next = launch.add_next_kernels();
  next->set_kernel_symbol("kiln_kernel_1");
  next->add_grid("(M + 31) // 32");
  next->add_block(32);
  next->set_dynamic_shared_bytes(64);
  pb::WorkspaceInfo* w = launch.add_workspaces();
  w->set_name("partial");
  w->set_dtype(pb::DTYPE_FLOAT16);
  w->add_shape("M");
  w->add_shape("4");
  pb::BindingValue alpha;
  alpha.set_float_value(1);
  absl::StatusOr<pb::LaunchSpec> plan =
      MakeLaunchPlan(launch, {{"M", Int(300)}, {"N", Int(12)}, {"alpha", alpha}}, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->next_kernels_size(), 1);
  EXPECT_THAT(plan->next_kernels(0).grid(), ::testing::ElementsAre(10));
  EXPECT_THAT(plan->next_kernels(0).block(), ::testing::ElementsAre(32));
  EXPECT_EQ(plan->next_kernels(0).dynamic_shared_bytes(), 64);
  EXPECT_THAT(plan->workspace_bytes(), ::testing::ElementsAre(300 * 4 * 2));

  next->set_grid(0, "Q");
  absl::StatusOr<pb::LaunchSpec> bad =
      MakeLaunchPlan(launch, {{"M", Int(300)}, {"N", Int(12)}, {"alpha", alpha}}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("kernel 2 grid[0]"));
}

TEST(MakeLaunchPlan, MissingValuesAndHugeTensorsAreClearErrors) {
  pb::BindingValue alpha;
  alpha.set_float_value(1);
  absl::StatusOr<pb::LaunchSpec> no_n = MakeLaunchPlan(GemmLaunch(), {{"M", Int(3)}}, {});
  ASSERT_FALSE(no_n.ok());
  EXPECT_THAT(no_n.status().message(), HasSubstr("grid[0]"));
  EXPECT_THAT(no_n.status().message(), HasSubstr("symbol N has no value"));

  absl::StatusOr<pb::LaunchSpec> no_alpha =
      MakeLaunchPlan(GemmLaunch(), {{"M", Int(3)}, {"N", Int(3)}}, {});
  ASSERT_FALSE(no_alpha.ok());
  EXPECT_THAT(no_alpha.status().message(), HasSubstr("scalar parameter alpha"));

  LaunchPlanOptions small;
  small.max_tensor_bytes = 1 << 20;
  absl::StatusOr<pb::LaunchSpec> huge = MakeLaunchPlan(
      GemmLaunch(), {{"M", Int(int64_t{1} << 40)}, {"N", Int(3)}, {"alpha", alpha}}, small);
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.status().message(), HasSubstr("parameter A needs more than 1048576 bytes"));

  pb::LaunchInfo zero_grid = GemmLaunch();
  zero_grid.set_grid(0, "N // 256");
  absl::StatusOr<pb::LaunchSpec> zero =
      MakeLaunchPlan(zero_grid, {{"M", Int(3)}, {"N", Int(3)}, {"alpha", alpha}}, {});
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.status().message(), HasSubstr("not positive"));
}

} // namespace
} // namespace kiln::server
