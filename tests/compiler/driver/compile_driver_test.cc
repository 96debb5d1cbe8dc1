#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/driver/compile_driver.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/split_k.h"
#include "compiler/passes/target.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/compiler/toolchain/cuda_test_util.h"
#include "tests/support/example_loader.h"

namespace kiln::driver {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ProgramInput GemmInput(bool test_size = true) {
  testing::ExampleFile ex = testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/gemm/gemm.py");
  ProgramInput in;
  in.text = ex.source;
  in.file_name = ex.rel_path;
  in.bindings = test_size ? ex.test_bind : ex.bind;
  return in;
}

std::string KeyOf(const ProgramInput& in, const BuildOptions& o) {
  absl::StatusOr<Prepared> p = Prepare(in, o);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? p->key : "";
}

// The emitted source of `in` built with `o` and these pass options, or the
// error's text.
std::string SourceOf(const ProgramInput& in, BuildOptions o,
                     std::vector<std::string> pass_options) {
  o.emit_source = true;
  o.pass_options = std::move(pass_options);
  absl::StatusOr<Prepared> p = Prepare(in, o);
  if (!p.ok()) return p.status().ToString();
  absl::StatusOr<codegen::EmittedKernel> k = Emit(*p, o);
  return k.ok() ? k->source : k.status().ToString();
}

TEST(CompileDriver, KeyIsStableAndCoversTargetAndOptions) {
  BuildOptions cpu;
  const std::string k1 = KeyOf(GemmInput(), cpu);
  EXPECT_EQ(k1.size(), 64u);
  EXPECT_EQ(KeyOf(GemmInput(), cpu), k1);

  // A comment and a renamed local change nothing the key covers.
  ProgramInput edited = GemmInput();
  edited.text = "# a comment the key must ignore\n" + edited.text;
  EXPECT_EQ(KeyOf(edited, cpu), k1);

  BuildOptions cuda;
  cuda.target = "cuda:sm_90";
  BuildOptions cuda80 = cuda;
  cuda80.target = "cuda:sm_80";
  BuildOptions with_source = cpu;
  with_source.emit_source = true;
  BuildOptions o2 = cpu;
  o2.opt_level = 2;
  BuildOptions o1 = cpu;
  o1.opt_level = 1; // the CPU default spelled out: same configuration, same key
  const std::string kc = KeyOf(GemmInput(), cuda);
  EXPECT_NE(kc, k1);
  EXPECT_NE(KeyOf(GemmInput(), cuda80), kc);
  // Every artifact keeps its source: asking for it is the same build.
  EXPECT_EQ(KeyOf(GemmInput(), with_source), k1);
  EXPECT_NE(KeyOf(GemmInput(), o2), k1);
  EXPECT_EQ(KeyOf(GemmInput(), o1), k1);

  // wgmma is Hopper's default: saying so changes nothing; gemm=mma, the
  // older path, is another key.
  BuildOptions wgmma = cuda;
  wgmma.target = "cuda:sm_90a";
  const std::string k90a = KeyOf(GemmInput(), wgmma);
  wgmma.pass_options = {"gemm=wgmma"};
  EXPECT_EQ(KeyOf(GemmInput(), wgmma), k90a);
  wgmma.pass_options = {"gemm=mma"};
  EXPECT_NE(KeyOf(GemmInput(), wgmma), k90a);

  // Another binding is another program.
  ProgramInput bigger = GemmInput();
  bigger.bindings.emplace_back("M", frontend::ParseBindingText("101"));
  EXPECT_NE(KeyOf(bigger, cpu), k1);
}

TEST(CompileDriver, BadInputIsALocatedOrNamedError) {
  struct Case {
    const char* name;
    ProgramInput in;
    BuildOptions options;
    const char* expect;
  };
  ProgramInput broken = GemmInput();
  broken.text += "\ndef oops(:\n";
  ProgramInput ir_with_bindings;
  ir_with_bindings.kind = ProgramInput::Kind::kIrText;
  ir_with_bindings.text = "program @p {\n  kernel grid(1) threads(32) as (bx) {\n  }\n}\n";
  ir_with_bindings.file_name = "p.kir";
  ir_with_bindings.bindings.emplace_back("M", frontend::ParseBindingText("4"));
  BuildOptions bad_target;
  bad_target.target = "cuda:sm_70";
  BuildOptions bad_toolchain;
  bad_toolchain.toolchain = "nvcc"; // for the CPU target
  BuildOptions pass_option;
  pass_option.pass_options = {"unroll=4"};
  BuildOptions ptx_on_cpu;
  ptx_on_cpu.emit_ptx = true;
  BuildOptions hip;
  hip.target = "hip:gfx942";
  const Case cases[] = {
      {"syntax error", broken, {}, "examples/gemm/gemm.py:"},
      {"bindings on IR", ir_with_bindings, {}, "bindings apply to TileLang source"},
      {"unsupported arch", GemmInput(), bad_target, "sm_70"},
      {"wrong toolchain", GemmInput(), bad_toolchain, "toolchain 'nvcc' cannot compile"},
      {"pass option", GemmInput(), pass_option, "unknown pass option 'unroll=4'"},
      {"ptx on cpu", GemmInput(), ptx_on_cpu, "CUDA targets only"},
      {"hip", GemmInput(), hip, "HIP code generation is not available"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Prepared> p = Prepare(c.in, c.options);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(c.expect));
  }
}

TEST(CompileDriver, BuildsTheCpuTarget) {
  BuildOptions o; // no emit_source: the source is kept all the same
  absl::StatusOr<Built> b = CompileProgram(GemmInput(), o);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->files.size(), 3u);
  EXPECT_EQ(b->files[0].kind, kSharedObject);
  EXPECT_EQ(b->files[0].bytes.substr(0, 4), "\x7f"
                                            "ELF");
  EXPECT_EQ(b->files[1].kind, kCppSource);
  EXPECT_THAT(b->files[1].bytes, HasSubstr("kiln/cpu/runtime.h"));
  EXPECT_EQ(b->files[2].kind, kIrText);
  EXPECT_THAT(b->files[2].bytes, HasSubstr("program @"));
  EXPECT_THAT(b->launch_json, HasSubstr("\"symbol\": \"kiln_kernel\""));
  EXPECT_GT(b->timings.at("toolchain"), 0);
}

TEST(CompileDriver, ClientFileNamesCannotInjectCode) {
  // The file name comes from the client and appears in a comment of the
  // generated source: a newline or a line-splicing backslash must not turn
  // the rest of it into code.
  for (const char* name :
       {"evil.py\n#error injected\n", "evil.py\\", "a\r\n#include </etc/passwd>"}) {
    SCOPED_TRACE(name);
    ProgramInput in = GemmInput();
    in.file_name = name;
    BuildOptions o;
    o.emit_source = true;
    absl::StatusOr<Built> b = CompileProgram(in, o);
    ASSERT_TRUE(b.ok()) << b.status();
    const std::string& src = b->files[1].bytes;
    const std::string first_line = src.substr(0, src.find('\n'));
    EXPECT_THAT(first_line, HasSubstr("Generated by Kiln"));
    // The text stays on the comment's line (the build above would have
    // failed on a live #error).
    EXPECT_THAT(src, ::testing::Not(HasSubstr("\n#error")));
    EXPECT_THAT(src, ::testing::Not(HasSubstr("\n#include </etc")));
    EXPECT_EQ(first_line.find('\\'), std::string::npos);
  }
}

TEST(CompileDriver, BuildsCudaWithResources) {
  if (!toolchain::testing::CudaToolkitPresent()) GTEST_SKIP() << toolchain::testing::kNoToolkit;
  BuildOptions o;
  o.target = "cuda:sm_90";
  o.emit_ptx = true;
  absl::StatusOr<Built> b = CompileProgram(GemmInput(), o);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_GE(b->files.size(), 2u);
  EXPECT_EQ(b->files[0].kind, kCubin);
  EXPECT_EQ(b->files[0].bytes.substr(0, 4), "\x7f"
                                            "ELF");
  EXPECT_EQ(b->files[1].kind, kPtx);
  EXPECT_THAT(b->files[1].bytes, HasSubstr(".target sm_90"));
  ASSERT_TRUE(b->resources.has_value());
  EXPECT_GT(b->resources->registers, 0);
  EXPECT_THAT(b->launch_json, HasSubstr("\"resources\": {\"registers\": "));
}

// TileLang's pass configs decide fast math for the program (its attention
// examples ask for it): --use_fast_math turns exp2 and division into the
// approximate, flush-to-zero instructions; tl.disable_fast_math wins.
TEST(CompileDriver, PassConfigsAskingForFastMathCompileWithIt) {
  if (!toolchain::testing::CudaToolkitPresent()) GTEST_SKIP() << toolchain::testing::kNoToolkit;
  auto program = [](const std::string& configs) {
    ProgramInput in;
    in.file_name = "fast_math.py";
    in.text =
        "import tilelang\nimport tilelang.language as T\n\n\n@tilelang.jit(" + configs +
        ")\ndef k(N, block):\n    @T.prim_func\n    def main(X: T.Tensor((N,), T.float32), "
        "Y: T.Tensor((N,), T.float32)):\n        with T.Kernel(T.ceildiv(N, block), "
        "threads=block) as bx:\n            for i in T.Parallel(block):\n"
        "                Y[bx * block + i] = T.exp2(X[bx * block + i]) / (X[bx * block + i] + "
        "3.0)\n\n    return main\n";
    frontend::BindingValue n, block;
    n.ival = 256;
    block.ival = 128;
    in.bindings = {{"N", n}, {"block", block}};
    return in;
  };
  BuildOptions o;
  o.target = "cuda:sm_80";
  o.emit_ptx = true;
  auto ptx = [&](const std::string& configs) -> std::string {
    absl::StatusOr<Built> b = CompileProgram(program(configs), o);
    EXPECT_TRUE(b.ok()) << b.status();
    if (!b.ok() || b->files.size() < 2) return "";
    return b->files[1].bytes;
  };
  const std::string fast = ptx("pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True}");
  EXPECT_THAT(fast, HasSubstr("ex2.approx.ftz.f32"));
  EXPECT_THAT(fast, Not(HasSubstr("div.rn.f32")));
  for (const std::string& exact :
       {std::string(), std::string("pass_configs={\"tl.enable_fast_math\": False}"),
        std::string("pass_configs={\"tl.enable_fast_math\": True, \"tl.disable_fast_math\": "
                    "True}")}) {
    SCOPED_TRACE(exact);
    const std::string p = ptx(exact);
    EXPECT_THAT(p, Not(HasSubstr("ex2.approx.ftz.f32")));
    EXPECT_THAT(p, HasSubstr("div.rn.f32"));
  }
  // The build option still turns it on for any program.
  o.fast_math = true;
  EXPECT_THAT(ptx(""), HasSubstr("ex2.approx.ftz.f32"));
}

TEST(CompileDriver, HopperTakesWgmmaAndTmaByDefaultAndPassOptionsGiveTheOlderPaths) {
  if (!toolchain::testing::CudaToolkitPresent()) GTEST_SKIP() << toolchain::testing::kNoToolkit;
  ProgramInput in = GemmInput();
  for (const char* target : {"cuda:sm_90", "cuda:sm_90a"}) {
    SCOPED_TRACE(target);
    BuildOptions o;
    o.target = target;
    o.emit_source = true;
    absl::StatusOr<Built> fast = CompileProgram(in, o);
    ASSERT_TRUE(fast.ok()) << fast.status();
    EXPECT_THAT(fast->kernel.source, HasSubstr("wgmma_m64n"));
    // wgmma exists in sm_90a only: cuda:sm_90 builds for it too.
    EXPECT_EQ(fast->kernel.arch, "sm_90a");
    o.pass_options = {"pipeline=cp.async"};
    absl::StatusOr<Built> cp_async = CompileProgram(in, o);
    ASSERT_TRUE(cp_async.ok()) << cp_async.status();
    EXPECT_THAT(cp_async->kernel.source, HasSubstr("wgmma_m64n"));
    EXPECT_THAT(cp_async->kernel.source, Not(HasSubstr("tma_load")));
    o.pass_options = {"gemm=mma"};
    absl::StatusOr<Built> mma = CompileProgram(in, o);
    ASSERT_TRUE(mma.ok()) << mma.status();
    EXPECT_THAT(mma->kernel.source, Not(HasSubstr("wgmma_m64n")));
    EXPECT_THAT(mma->kernel.source, HasSubstr("mma_m16n8k16"));
    EXPECT_EQ(mma->kernel.arch, o.target.substr(5));
    // The older paths are other kernels: other cache keys and best-config
    // variants.
    const std::string mma_key = KeyOf(in, o);
    EXPECT_EQ(KernelVariant(o), ";gemm=mma");
    o.pass_options = {"pipeline=cp.async"};
    const std::string cp_async_key = KeyOf(in, o);
    EXPECT_EQ(KernelVariant(o), ";pipeline=cp.async");
    o.pass_options = {};
    EXPECT_EQ(KernelVariant(o), "");
    EXPECT_NE(KeyOf(in, o), mma_key);
    EXPECT_NE(KeyOf(in, o), cp_async_key);
  }
  BuildOptions ampere;
  ampere.target = "cuda:sm_80";
  ampere.emit_source = true;
  absl::StatusOr<Built> a = CompileProgram(in, ampere);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->kernel.source, Not(HasSubstr("wgmma")));
  EXPECT_EQ(KernelVariant(ampere), "");
}

TEST(CompileDriver, WsBlocksPlansTheWarpSpecializedLoopForThatManyBlocksPerSm) {
  // The example's own size and tile (64x128x64 would take two blocks by
  // Kiln's plan; ws-blocks=1 asks for one): __launch_bounds__'s minimum
  // follows, and the option is part of the key and the best-config variant.
  ProgramInput in = GemmInput(/*test_size=*/false);
  const std::map<std::string, int64_t> tile = {
      {"block_M", 64}, {"block_N", 128}, {"block_K", 64}, {"threads", 128}};
  for (auto& [name, value] : in.bindings) {
    if (auto t = tile.find(name); t != tile.end()) value.ival = t->second;
  }
  BuildOptions o;
  o.target = "cuda:sm_90";
  o.emit_source = true;
  auto source_of = [&](std::vector<std::string> pass_options) {
    return SourceOf(in, o, std::move(pass_options));
  };
  EXPECT_THAT(source_of({}), HasSubstr("__launch_bounds__(256, 2)"));
  // One consumer warpgroup keeps a wgmma group in flight across iterations,
  // where the grid has more blocks than the SMs (4096^3: 2048).
  EXPECT_THAT(source_of({}), HasSubstr("wgmma_wait<1>"));
  {
    // 128 x 4096 x 4096: 64 blocks, each streaming its weights; every group
    // is waited for, so no stage is held back from the loads.
    ProgramInput saved = in;
    for (auto& [name, value] : in.bindings) {
      if (name == "M") value.ival = 128;
    }
    const std::string streaming = source_of({});
    EXPECT_THAT(streaming, HasSubstr("wgmma_wait<0>"));
    EXPECT_THAT(streaming, Not(HasSubstr("wgmma_wait<1>")));
    in = saved;
  }
  EXPECT_THAT(source_of({"ws-blocks=2"}), HasSubstr("__launch_bounds__(256, 2)"));
  EXPECT_THAT(source_of({"ws-blocks=1"}), HasSubstr("__launch_bounds__(256)"));
  EXPECT_THAT(source_of({"ws-blocks=1", "ws-blocks=auto"}), HasSubstr("__launch_bounds__(256, 2)"));
  // One block per SM where two fit: the launch asks for more than half of
  // the SM's 228 KiB of shared memory (ptxas's few registers would let a
  // second block in).
  auto smem_of = [&](std::vector<std::string> pass_options) -> int64_t {
    o.pass_options = std::move(pass_options);
    absl::StatusOr<Prepared> p = Prepare(in, o);
    if (!p.ok()) return -1;
    absl::StatusOr<codegen::EmittedKernel> k = Emit(*p, o);
    return k.ok() ? k->launch.dynamic_smem_bytes : -1;
  };
  EXPECT_LT(smem_of({}), 233472 / 2);
  EXPECT_GT(2 * (smem_of({"ws-blocks=1"}) + 1024), 233472);
  o.pass_options = {"ws-blocks=1"};
  EXPECT_EQ(KernelVariant(o), ";ws-blocks=1");
  const std::string one = KeyOf(in, o);
  o.pass_options = {};
  EXPECT_NE(KeyOf(in, o), one);
  EXPECT_EQ(KernelVariant(o), "");
  // Without the warp-specialized loop the option has nothing to plan.
  o.pass_options = {"pipeline=cp.async", "ws-blocks=1"};
  EXPECT_EQ(KernelVariant(o), ";pipeline=cp.async");
  o.pass_options = {"ws-blocks=3"};
  absl::StatusOr<Prepared> bad = Prepare(in, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("ws-blocks=1, 2 or auto"));
}

TEST(CompileDriver, SplitKIsAPassOptionOfTheKeyAndTheVariant) {
  // split-k=N splits the GEMM's K loop (compiler/passes/split_k.h): a third
  // grid dimension and the workspaces (partials, tickets) in the launch, a
  // key and best-config variant of its own; the last split-k= wins, 1 is
  // off, anything else is refused. split-k-reduce=kernel sums the partials
  // in a second kernel: a key and variant of its own too; fused (the
  // default) adds nothing.
  ProgramInput in = GemmInput(/*test_size=*/false); // K = 4096, block_K = 64
  BuildOptions o;
  o.target = "cuda:sm_90";
  const std::string plain = KeyOf(in, o);
  o.pass_options = {"split-k=4"};
  EXPECT_EQ(SplitKParts(o), 4);
  EXPECT_EQ(KernelVariant(o), ";split-k=4");
  const std::string split = KeyOf(in, o);
  EXPECT_NE(split, plain);
  absl::StatusOr<Prepared> p = Prepare(in, o);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<codegen::EmittedKernel> k = Emit(*p, o);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(ir::ConstInt(k->launch.grid[2]), 4);
  // The two reductions: fused (one kernel; partials and tickets) and a
  // reduce kernel (two kernels; partials).
  const auto check_form = [](const codegen::EmittedKernel& e, passes::SplitKReduce r) {
    const bool fused = r == passes::SplitKReduce::kFused;
    EXPECT_EQ(e.launch.next_kernels.size(), fused ? 0u : 1u);
    EXPECT_EQ(e.launch.workspaces.size(), fused ? 2u : 1u);
  };
  check_form(*k, passes::kDefaultSplitKReduce);
  const passes::SplitKReduce other = passes::kDefaultSplitKReduce == passes::SplitKReduce::kFused
                                         ? passes::SplitKReduce::kKernel
                                         : passes::SplitKReduce::kFused;
  const std::string other_option = absl::StrCat("split-k-reduce=", passes::SplitKReduceName(other));
  o.pass_options = {"split-k=4", other_option};
  EXPECT_EQ(KernelVariant(o), absl::StrCat(";split-k=4;", other_option));
  EXPECT_NE(KeyOf(in, o), split);
  absl::StatusOr<Prepared> two = Prepare(in, o);
  ASSERT_TRUE(two.ok()) << two.status();
  absl::StatusOr<codegen::EmittedKernel> reduce = Emit(*two, o);
  ASSERT_TRUE(reduce.ok()) << reduce.status();
  check_form(*reduce, other);
  o.pass_options = {
      "split-k=4", other_option,
      absl::StrCat("split-k-reduce=", passes::SplitKReduceName(passes::kDefaultSplitKReduce))};
  EXPECT_EQ(KernelVariant(o), ";split-k=4");
  EXPECT_EQ(KeyOf(in, o), split);
  o.pass_options = {"split-k-reduce=atomic"};
  absl::StatusOr<Prepared> unknown = Prepare(in, o);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("split-k-reduce is fused or kernel"));
  o.pass_options = {"split-k=4", "split-k=1"};
  EXPECT_EQ(SplitKParts(o), 1);
  EXPECT_EQ(KernelVariant(o), ";split-k=1");
  // Off is not the default: by default (auto) Kiln splits a decode shape on
  // Hopper itself, which split-k=auto asks for in so many words.
  EXPECT_NE(KeyOf(in, o), plain);
  absl::StatusOr<Prepared> off = Prepare(in, o);
  ASSERT_TRUE(off.ok()) << off.status();
  absl::StatusOr<codegen::EmittedKernel> one = Emit(*off, o);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(one->launch.workspaces.empty());
  o.pass_options = {"split-k=4", "split-k=auto"};
  EXPECT_EQ(SplitKParts(o), 0);
  EXPECT_EQ(KernelVariant(o), "");
  EXPECT_EQ(KeyOf(in, o), plain);
  for (const char* bad : {"split-k=0", "split-k=65", "split-k=x", "split-k="}) {
    o.pass_options = {bad};
    absl::StatusOr<Prepared> refused = Prepare(in, o);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_THAT(refused.status().message(), HasSubstr("split-k takes a number of splits in 1..64"))
        << bad;
  }
  // A split the program does not allow is the build's located error.
  o.pass_options = {"split-k=3"};
  absl::StatusOr<Prepared> three = Prepare(in, o);
  ASSERT_TRUE(three.ok()) << three.status();
  absl::StatusOr<codegen::EmittedKernel> refused = Emit(*three, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("which 3 does not divide"));
}

TEST(CompileDriver, PersistentIsAPassOptionOfTheKeyAndTheVariant) {
  // persistent=on|auto|N (compiler/passes/persistent.h): a grid of one block
  // per SM (or N) walking the example's 32 x 16 tiles (4096^3, 128x256x64, 4
  // stages), the producer's ring position carried across them; its own key
  // and best-config variant; off by default.
  ProgramInput in = GemmInput(/*test_size=*/false);
  BuildOptions o;
  o.target = "cuda:sm_90";
  o.emit_source = true;
  const std::string plain = KeyOf(in, o);
  auto build = [&](std::vector<std::string> pass_options) {
    o.pass_options = std::move(pass_options);
    absl::StatusOr<Prepared> p = Prepare(in, o);
    if (!p.ok()) return absl::StatusOr<codegen::EmittedKernel>(p.status());
    return Emit(*p, o);
  };
  auto grid_of = [&](std::vector<std::string> pass_options) -> int64_t {
    absl::StatusOr<codegen::EmittedKernel> k = build(std::move(pass_options));
    if (!k.ok()) return -1;
    int64_t blocks = 1;
    for (const ir::Expr& g : k->launch.grid) blocks *= ir::ConstInt(g).value_or(-1000);
    return blocks;
  };
  EXPECT_EQ(grid_of({}), 512);
  EXPECT_EQ(grid_of({"persistent=on"}), 132);
  EXPECT_EQ(grid_of({"persistent=7"}), 7);
  EXPECT_EQ(grid_of({"persistent=on", "persistent=off"}), 512);
  // auto: 192 KiB of stages keep a second block off the SM anyway.
  EXPECT_EQ(grid_of({"persistent=auto"}), 132);
  absl::StatusOr<codegen::EmittedKernel> on = build({"persistent=on"});
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_THAT(on->source, HasSubstr("kiln_ws_pring"));
  EXPECT_THAT(on->source, HasSubstr("__launch_bounds__(384)"));
  o.pass_options = {"persistent=on"};
  EXPECT_EQ(KernelVariant(o), ";persistent=on");
  EXPECT_NE(KeyOf(in, o), plain);
  o.pass_options = {"persistent=7"};
  EXPECT_EQ(KernelVariant(o), ";persistent=7");
  o.pass_options = {"persistent=off"};
  EXPECT_EQ(KernelVariant(o), "");
  EXPECT_EQ(KeyOf(in, o), plain);
  // The tuning knob kiln:persistent (a sweep's candidates may carry it).
  EXPECT_EQ(*KnobPassOption(kPersistentKnob, 1), "persistent=on");
  EXPECT_EQ(*KnobPassOption(kPersistentKnob, 0), "persistent=off");
  absl::StatusOr<std::string> two = KnobPassOption(kPersistentKnob, 2);
  ASSERT_FALSE(two.ok());
  EXPECT_THAT(two.status().message(), HasSubstr("0 (off) or 1"));
  // Off the warp-specialized path the option has nothing to apply to.
  o.pass_options = {"pipeline=cp.async", "persistent=on"};
  EXPECT_EQ(KernelVariant(o), ";pipeline=cp.async");
  for (const char* bad : {"persistent=0", "persistent=x", "persistent=", "persistent=65537"}) {
    o.pass_options = {bad};
    absl::StatusOr<Prepared> refused = Prepare(in, o);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_THAT(refused.status().message(), HasSubstr("persistent=on, off, auto or N blocks"))
        << bad;
  }
  // Small tiles fit two blocks per SM, which overlap each other's epilogue
  // already: auto leaves them alone.
  const std::map<std::string, int64_t> tile = {
      {"block_M", 64}, {"block_N", 128}, {"block_K", 64}, {"threads", 128}, {"num_stages", 3}};
  for (auto& [name, value] : in.bindings) {
    if (auto t = tile.find(name); t != tile.end()) value.ival = t->second;
  }
  EXPECT_EQ(grid_of({"persistent=auto"}), 2048);
  EXPECT_EQ(grid_of({"persistent=on"}), 132);
  // A grid of no more blocks than SMs has no waves to walk: on says so, at
  // the kernel's line (1024^2: 16 x 8 tiles, too many for split-K's rule).
  for (auto& [name, value] : in.bindings) {
    if (name == "M" || name == "N") value.ival = 1024;
  }
  absl::StatusOr<codegen::EmittedKernel> few = build({"persistent=on"});
  ASSERT_FALSE(few.ok());
  EXPECT_THAT(few.status().message(),
              HasSubstr("persistent: the grid has 128 blocks, no more than the 132 SMs"));
  EXPECT_THAT(few.status().message(), HasSubstr("examples/gemm/gemm.py:"));
  EXPECT_EQ(grid_of({"persistent=auto"}), 128);
}

TEST(CompileDriver, EpilogueIsAPassOptionOfTheKeyAndTheVariant) {
  // epilogue=auto|tma|direct (warp_specialize.cc): the example's 128x256
  // accumulator through a swizzled shared tile and four TMA stores of 64
  // columns by default (auto) and with tma, each thread's stores with
  // direct; each its own key and best-config variant, auto's the plain one.
  // With the example's 4 stages (192 KiB) the 64 KiB tile has no room:
  // direct stores, asked for or not.
  ProgramInput in = GemmInput(/*test_size=*/false);
  BuildOptions o;
  o.target = "cuda:sm_90";
  o.emit_source = true;
  auto source_of = [&](std::vector<std::string> pass_options) {
    return SourceOf(in, o, std::move(pass_options));
  };
  EXPECT_THAT(source_of({"epilogue=tma"}), Not(HasSubstr("tma_store")));
  EXPECT_THAT(source_of({}), Not(HasSubstr("tma_store")));
  for (auto& [name, value] : in.bindings) {
    if (name == "num_stages") value.ival = 3;
  }
  o.pass_options = {};
  const std::string plain = KeyOf(in, o);
  EXPECT_EQ(KernelVariant(o), "");
  for (const std::vector<std::string>& tma :
       {std::vector<std::string>{"epilogue=tma"}, std::vector<std::string>{}}) {
    o.pass_options = tma;
    absl::StatusOr<Prepared> p = Prepare(in, o);
    ASSERT_TRUE(p.ok()) << p.status();
    absl::StatusOr<codegen::EmittedKernel> k = Emit(*p, o);
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_THAT(k->source, HasSubstr("tma_store_2d"));
    ASSERT_EQ(k->launch.tensor_maps.size(), 3u); // A, B and now C
    EXPECT_EQ(k->launch.tensor_maps[2].box, (std::vector<int64_t>{128, 64}));
  }
  EXPECT_THAT(source_of({"epilogue=direct"}), Not(HasSubstr("tma_store")));
  o.pass_options = {"epilogue=tma"};
  EXPECT_EQ(KernelVariant(o), ";epilogue=tma");
  const std::string tma = KeyOf(in, o);
  EXPECT_NE(tma, plain);
  o.pass_options = {"epilogue=direct"};
  EXPECT_EQ(KernelVariant(o), ";epilogue=direct");
  const std::string direct = KeyOf(in, o);
  EXPECT_NE(direct, plain);
  EXPECT_NE(direct, tma);
  o.pass_options = {"epilogue=tma", "epilogue=auto"};
  EXPECT_EQ(KernelVariant(o), "");
  EXPECT_EQ(KeyOf(in, o), plain);
  o.pass_options = {"epilogue=fast"};
  absl::StatusOr<Prepared> bad = Prepare(in, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("epilogue=auto, tma or direct"));
  EXPECT_EQ(*KnobPassOption(kTmaStoreKnob, 1), "epilogue=tma");
  EXPECT_EQ(*KnobPassOption(kTmaStoreKnob, 0), "epilogue=direct");
  EXPECT_FALSE(KnobPassOption(kTmaStoreKnob, 2).ok());
  o.pass_options = {"pipeline=cp.async", "epilogue=tma"};
  EXPECT_EQ(KernelVariant(o), ";pipeline=cp.async");
}

TEST(CompileDriver, ClusterPairsAreAPassOptionOfTheKeyAndTheVariant) {
  // cluster=2 (warp_specialize.cc): pairs of blocks along grid x that
  // multicast the tiles both load; asked for as a pass option or through the
  // tuning knob; its own key and best-config variant; cluster=1 is the
  // default build.
  ProgramInput in = GemmInput(/*test_size=*/false);
  BuildOptions o;
  o.target = "cuda:sm_90";
  o.emit_source = true;
  const std::string plain = KeyOf(in, o);
  absl::StatusOr<std::string> knob = KnobPassOption(kClusterKnob, 2);
  ASSERT_TRUE(knob.ok()) << knob.status();
  EXPECT_EQ(*knob, "cluster=2");
  o.pass_options = {*knob};
  absl::StatusOr<Prepared> p = Prepare(in, o);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<codegen::EmittedKernel> k = Emit(*p, o);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_THAT(k->source, HasSubstr("__cluster_dims__(2, 1, 1)"));
  EXPECT_THAT(k->source, HasSubstr("tma_load_mc_2d"));
  EXPECT_EQ(KernelVariant(o), ";cluster=2");
  EXPECT_NE(KeyOf(in, o), plain);
  EXPECT_FALSE(KnobPassOption(kClusterKnob, 4).ok());
  o.pass_options = {"cluster=4"};
  EXPECT_FALSE(Prepare(in, o).ok());
  o.pass_options = {"cluster=2", "cluster=1"};
  ASSERT_TRUE(Prepare(in, o).ok());
  EXPECT_EQ(KernelVariant(o), "");
  EXPECT_EQ(KeyOf(in, o), plain);
}

TEST(CompileDriver, EveryListedTargetBuilds) {
  // passes::SupportedTargets() is what the version RPC and error messages
  // list: each entry must build (HIP is parsed but not listed until it does).
  const std::vector<std::string> targets = passes::SupportedTargets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(targets.front(), "cpu");
  std::vector<std::string> cuda_archs;
  for (const std::string& t : targets) {
    if (absl::StartsWith(t, "cuda:")) cuda_archs.push_back(t.substr(5));
  }
  EXPECT_EQ(cuda_archs, toolchain::SupportedCudaArchs());
  for (const std::string& t : targets) {
    SCOPED_TRACE(t);
    EXPECT_FALSE(absl::StartsWith(t, "hip:"));
    const bool cuda = absl::StartsWith(t, "cuda:");
    if (cuda && !toolchain::testing::CudaToolkitPresent()) continue;
    BuildOptions o;
    o.target = t;
    absl::StatusOr<Built> b = CompileProgram(GemmInput(), o);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->files[0].kind, cuda ? kCubin : kSharedObject);
  }
  BuildOptions hip;
  hip.target = "hip:gfx942";
  absl::StatusOr<Prepared> p = Prepare(GemmInput(), hip);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr(absl::StrCat("supported: ", passes::SupportedTargetList())));
}

} // namespace
} // namespace kiln::driver
