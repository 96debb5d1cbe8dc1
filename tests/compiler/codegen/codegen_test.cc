// Tests of LowerAndEmit's launch metadata (codegen.cc, kernel_spec.h,
// launch_json.cc): launchers see the user's names, never the IR's; and of
// the runtime headers a CUDA source includes for the wgmma it calls.
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/launch_json.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/text_parser.h"
#include "compiler/passes/target.h"
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

// A thread program with one wgmma call, $CALL, on $DTYPE operands: A and B
// of 64 rows, K-major, in 32-byte swizzled shared memory.
constexpr char kOneWgmma[] = R"(program @one_wgmma {
  attr kiln.level = "thread"
  param C: global float32[4096] out
  kernel grid(1) threads(128) as (bx) {
    alloc a: shared.dyn $DTYPE[2048]
    alloc b: shared.dyn $DTYPE[2048]
    alloc acc: local float32[32]
    call wgmma_fence()
    call $CALL(&acc[0], &a[0], &b[0], 0, 0, 16, 256, 3, 16, 256, 3)
    call wgmma_commit()
    call wgmma_wait(0)
    C[thread_idx(0) * 32] = acc[0]
  }
}
)";

// fp8 wgmma lives in kiln/cuda/wgmma_fp8.h, which a CUDA source includes
// after wgmma.h only when it calls one (f16 kernels do not pay NVRTC's
// parse of it); the CPU runtime has every form in runtime.h.
TEST(CodegenTest, Fp8WgmmaIncludesItsOwnHeader) {
  absl::StatusOr<passes::Target> sm90a = passes::ParseTarget("cuda:sm_90a");
  ASSERT_TRUE(sm90a.ok()) << sm90a.status();
  struct Case {
    const char* dtype;
    const char* call;
    bool fp8;
  };
  for (const Case& c : {Case{"float8_e4m3", "wgmma_m64n64k32_e4m3", true},
                        Case{"float8_e5m2", "wgmma_m64n64k32_e5m2", true},
                        Case{"float16", "wgmma_m64n64k16_f16", false}}) {
    SCOPED_TRACE(c.call);
    absl::StatusOr<ir::Program> program = ir::ParseProgramText(
        absl::StrReplaceAll(kOneWgmma, {{"$DTYPE", c.dtype}, {"$CALL", c.call}}), "one_wgmma.kir");
    ASSERT_TRUE(program.ok()) << program.status();
    absl::StatusOr<EmittedKernel> cuda = EmitLowered(*program, *sm90a);
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    EXPECT_EQ(cuda->arch, "sm_90a");
    EXPECT_THAT(cuda->source, HasSubstr("#include \"kiln/cuda/runtime.h\"\n"
                                        "#include \"kiln/cuda/wgmma.h\"\n"));
    EXPECT_THAT(cuda->source,
                HasSubstr(std::string("kiln::rt::") + c.call + "<0, 0, 16, 256, 3, 16, 256, 3>("));
    if (c.fp8) {
      EXPECT_THAT(cuda->source, HasSubstr("#include \"kiln/cuda/wgmma.h\"\n"
                                          "#include \"kiln/cuda/wgmma_fp8.h\"\n"));
    } else {
      EXPECT_THAT(cuda->source, Not(HasSubstr("wgmma_fp8.h")));
    }
    EXPECT_THAT(cuda->source, Not(HasSubstr("wgmma_rs.h")));
    absl::StatusOr<passes::Target> cpu = passes::ParseTarget("cpu");
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    absl::StatusOr<EmittedKernel> host = EmitLowered(*program, *cpu);
    ASSERT_TRUE(host.ok()) << host.status();
    EXPECT_THAT(host->source, Not(HasSubstr("wgmma_fp8.h")));
    EXPECT_THAT(host->source, HasSubstr(std::string("kiln::rt::") + c.call + "<0, 0, 16, 256"));
  }
}

} // namespace
} // namespace kiln::codegen
