// Tests of LowerAndEmit's launch metadata (codegen.cc, kernel_spec.h,
// launch_json.cc): launchers see the user's names, never the IR's.
#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/launch_json.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::codegen {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// Parameters and a symbol named with words the IR text reserves: `in` (a
// T.const symbol: Python does not allow it as a parameter), `max`, `exp`
// (a scalar) and `out` (the T.empty output).
constexpr char kReservedNames[] = R"(import tilelang
import tilelang.language as T

@tilelang.jit
def scale(x, max, exp, block=64):
    n = T.const("in")
    x: T.Tensor((n,), "float32")
    max: T.Tensor((n,), "float32")
    exp: T.float32
    out = T.empty((n,), "float32")
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                out[bx * block + i] = x[bx * block + i] * exp + max[bx * block + i]
    return out
)";

TEST(CodegenTest, LaunchMetadataCarriesTheUsersNames) {
  frontend::FrontendOptions options;
  options.file_name = "scale.py";
  absl::StatusOr<ir::Program> program = frontend::CompileSource(kReservedNames, options);
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<EmittedKernel> kernel = LowerAndEmit(*program, "cpu");
  ASSERT_TRUE(kernel.ok()) << kernel.status();

  std::vector<std::string> names, ir_names, shapes;
  for (const KernelArg& a : kernel->launch.args) {
    names.push_back(a.name);
    ir_names.push_back(a.ir_name);
    for (const ir::Expr& e : a.shape) shapes.push_back(ir::PrintExpr(e));
  }
  EXPECT_THAT(names, ElementsAre("x", "max", "exp", "out", "in"));
  EXPECT_THAT(ir_names, ElementsAre("x", "max_", "exp_", "out_", "in_"));
  // Extents are over the symbols' user names, as a launcher binds them.
  EXPECT_THAT(shapes, ElementsAre("in", "in", "in"));
  EXPECT_EQ(ir::PrintExpr(kernel->launch.grid[0]), "(in + 63) // 64");
  EXPECT_TRUE(kernel->launch.args[2].is_scalar);
  EXPECT_TRUE(kernel->launch.args[3].is_output);
  EXPECT_TRUE(kernel->launch.args[4].is_symbol);

  const std::string json = LaunchJson(*kernel);
  for (const char* name : {"x", "max", "exp", "out", "in"}) {
    EXPECT_THAT(json, HasSubstr(std::string("{\"name\": \"") + name + "\""));
  }
  EXPECT_THAT(json, HasSubstr("\"grid\": [\"(in + 63) // 64\", 1, 1]"));
  EXPECT_THAT(json, HasSubstr("\"shape\": [\"in\"]"));
  for (const char* internal : {"out_", "max_", "exp_", "in_"}) {
    EXPECT_THAT(json, Not(HasSubstr(internal)));
  }
  // The generated code itself uses the IR's safe names.
  EXPECT_THAT(kernel->source, HasSubstr("out_"));
}

} // namespace
} // namespace kiln::codegen
