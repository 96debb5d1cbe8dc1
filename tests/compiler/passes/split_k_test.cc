// compiler/passes/split_k.h: what split-K makes of examples/gemm/gemm.py (the
// fused reduction's tickets and last-block sums, or a reduce kernel; the
// partials workspace, the K loop's share per split), that the
// result verifies and lowers for the CPU and sm_90, that LowerAndEmit applies
// it from its options, and that every program it cannot split is refused with
// a located message naming what is in the way. Its results are checked
// against ref_program by the ctests cpu/split_k/* and gpu/split_k/*.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler/codegen/codegen.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/simplify.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/split_k.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/example_loader.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ir::Program Gemm(const std::string& example, const std::string& bindings) {
  testing::ExampleFile ex = testing::LoadExampleFile(KILN_SOURCE_DIR, example);
  frontend::FrontendOptions o = ex.Options(/*test_size=*/false);
  o.bindings.clear();
  for (absl::string_view kv : absl::StrSplit(bindings, ' ')) {
    const size_t eq = kv.find('=');
    o.bindings.emplace_back(absl::StrCat(kv.substr(0, eq)),
                            frontend::ParseBindingText(absl::StrCat(kv.substr(eq + 1))));
  }
  absl::StatusOr<ir::Program> p = frontend::CompileSource(ex.source, o);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : ir::Program();
}

constexpr char kDecode[] =
    "M=16 N=4000 K=4096 block_M=64 block_N=128 block_K=64 num_stages=4 threads=128";

std::string ErrorOf(ir::Program p, int splits) {
  const absl::Status s = SplitK(p, splits, SplitKReduce::kKernel);
  EXPECT_FALSE(s.ok()) << ir::PrintProgram(p);
  return absl::StrCat(s.message());
}

TEST(SplitK, GemmBecomesPartialsAndAReduceKernel) {
  ir::Program p = Gemm("examples/gemm/gemm.py", kDecode);
  ASSERT_TRUE(SplitK(p, 8, SplitKReduce::kKernel).ok());
  ASSERT_TRUE(ir::Verify(p).ok()) << ir::Verify(p) << ir::PrintProgram(p);
  // Kernel 1: a third grid dimension of 8; the 64 K tiles in parts of 8.
  ASSERT_EQ(p.kernel.grid.size(), 3u);
  EXPECT_EQ(ir::ConstInt(p.kernel.grid[2]), 8);
  const std::string text = ir::PrintProgram(p);
  EXPECT_THAT(text, HasSubstr("workspace kiln_splitk_partials: float32[8, 16, 4000]"));
  EXPECT_THAT(text, HasSubstr("kernel grid(32, 1, 8) threads(128) as (bx, by, kiln_split)"));
  EXPECT_THAT(text, HasSubstr("for ko_in_split in pipelined(8) stages=4"));
  EXPECT_THAT(text, HasSubstr("(kiln_split * 8 + ko_in_split) * 64"));
  EXPECT_THAT(text, HasSubstr("-> kiln_splitk_partials[kiln_split +: 1, by * 64 +: 64, "
                              "bx * 128 +: 128]"));
  // Kernel 2: 4 x 128 outputs a block, each the sum of its 8 partials in order.
  ASSERT_EQ(p.next_kernels.size(), 1u);
  EXPECT_THAT(text, HasSubstr("kernel grid(32, 4) threads(128)"));
  EXPECT_THAT(text, HasSubstr("cast<float16>(kiln_splitk_partials[0, "));
  EXPECT_THAT(text, HasSubstr("+ kiln_splitk_partials[7, "));

  // It lowers for the CPU and for sm_90 (wgmma fed by TMA, with the
  // third grid dimension), and LowerAndEmit applies it from its options.
  ir::Program plain = Gemm("examples/gemm/gemm.py", kDecode);
  codegen::LoweringOptions o;
  o.split_k = 8;
  o.split_k_reduce = SplitKReduce::kKernel;
  for (const char* target : {"cpu", "cuda:sm_90"}) {
    SCOPED_TRACE(target);
    absl::StatusOr<codegen::EmittedKernel> k = codegen::LowerAndEmit(plain, target, o);
    ASSERT_TRUE(k.ok()) << k.status();
    ASSERT_EQ(k->launch.next_kernels.size(), 1u);
    ASSERT_EQ(k->launch.workspaces.size(), 1u);
    EXPECT_EQ(k->launch.workspaces[0].name, "kiln_splitk_partials");
  }
  absl::StatusOr<codegen::EmittedKernel> sm90 = codegen::LowerAndEmit(plain, "cuda:sm_90", o);
  ASSERT_TRUE(sm90.ok());
  EXPECT_THAT(sm90->source, HasSubstr("tma_load_2d"));
  // Off (1), or for the CPU's own program: the one-kernel program of before.
  o.split_k = 1;
  absl::StatusOr<codegen::EmittedKernel> one = codegen::LowerAndEmit(plain, "cuda:sm_90", o);
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->launch.next_kernels.empty());
  EXPECT_TRUE(one->launch.workspaces.empty());
  absl::StatusOr<codegen::EmittedKernel> cpu = codegen::LowerAndEmit(plain, "cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_TRUE(cpu->launch.next_kernels.empty());
}

// The fused reduction (split-k-reduce=fused): one kernel; after the copy of its
// partials each block draws a ticket for its output tile, and the block
// that draws the last one sums the tile's partials in order into its
// accumulator (its own part from its registers) and stores it with the
// program's own copy (so through TMA on Hopper where the epilogue is). The lowering
// expands the ticket into every thread's fence, a barrier, thread 0's
// atomic and a barrier: the consumers' named barrier under warp
// specialization, which the ticket does not switch off.
// M = 64, the tile's rows: the last block sums in the accumulator's layout.
constexpr char kDecodeFullTile[] =
    "M=64 N=4000 K=4096 block_M=64 block_N=128 block_K=64 num_stages=4 threads=128";

TEST(SplitK, FusedReductionSumsInTheTilesLastBlock) {
  ir::Program p = Gemm("examples/gemm/gemm.py", kDecodeFullTile);
  ASSERT_TRUE(SplitK(p, 8, SplitKReduce::kFused).ok());
  ASSERT_TRUE(ir::Verify(p).ok()) << ir::Verify(p) << ir::PrintProgram(p);
  EXPECT_TRUE(p.next_kernels.empty());
  const std::string text = ir::PrintProgram(p);
  EXPECT_THAT(text, HasSubstr("workspace kiln_splitk_partials: float32[8, 64, 4000]"));
  EXPECT_THAT(text, HasSubstr("workspace kiln_splitk_tickets: int32[32]"));
  EXPECT_THAT(text, HasSubstr("kernel grid(32, 1, 8) threads(128) as (bx, by, kiln_split)"));
  EXPECT_THAT(text, HasSubstr("splitk_ticket(&kiln_splitk_last[0], &kiln_splitk_tickets[by * 32 "
                              "+ bx], 8)"));
  EXPECT_THAT(text, HasSubstr("if kiln_splitk_last[0] != 0"));
  EXPECT_THAT(text, HasSubstr("C_acc[kiln_splitk_i, kiln_splitk_j] = select(kiln_splitk_i + by * "
                              "64 < 64 && kiln_splitk_j + bx * 128 < 4000, select(kiln_split == 0, "
                              "C_acc[kiln_splitk_i, kiln_splitk_j], kiln_splitk_partials[0, "));
  EXPECT_THAT(text, HasSubstr("select(kiln_split == 7, C_acc[kiln_splitk_i, kiln_splitk_j], "
                              "kiln_splitk_partials[7, "));
  EXPECT_THAT(text, HasSubstr("      copy C_acc[0 +: 64, 0 +: 128] -> C[by * 64 +: 64, bx * 128 "
                              "+: 128]"));

  const ir::Program plain = Gemm("examples/gemm/gemm.py", kDecodeFullTile);
  codegen::LoweringOptions o;
  o.split_k = 8;
  o.split_k_reduce = SplitKReduce::kFused;
  absl::StatusOr<codegen::EmittedKernel> sm90 = codegen::LowerAndEmit(plain, "cuda:sm_90", o);
  ASSERT_TRUE(sm90.ok()) << sm90.status();
  EXPECT_TRUE(sm90->launch.next_kernels.empty());
  ASSERT_EQ(sm90->launch.workspaces.size(), 2u);
  EXPECT_EQ(sm90->launch.workspaces[1].name, "kiln_splitk_tickets");
  const std::string& cu = sm90->source;
  EXPECT_THAT(cu, HasSubstr("tma_load_2d")); // still the warp-specialized main loop
  const size_t fence = cu.find("kiln::rt::threadfence();");
  const size_t ticket = cu.find("kiln::rt::splitk_ticket(");
  ASSERT_NE(fence, std::string::npos);
  ASSERT_NE(ticket, std::string::npos);
  const std::string handshake = cu.substr(fence, ticket - fence);
  EXPECT_THAT(handshake, HasSubstr("kiln::rt::named_barrier_sync(1, 128);"));
  EXPECT_THAT(handshake, HasSubstr("if ((kiln::rt::tid_x() == 0))"));
  EXPECT_THAT(cu.substr(ticket), HasSubstr("kiln::rt::named_barrier_sync(1, 128);"));
  EXPECT_THAT(cu.substr(ticket), HasSubstr("kiln::rt::tma_store_2d(")); // the program's epilogue
  // The CPU lowers it too.
  absl::StatusOr<codegen::EmittedKernel> cpu = codegen::LowerAndEmit(plain, "cpu", o);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_THAT(cpu->source, HasSubstr("kiln::rt::splitk_ticket("));
}

// M = 16 in 64-row tiles: summing in the accumulator's layout would leave three
// of four warps idle, so a T.Parallel loop over the tile writes the output's
// valid part, every thread taking its share.
TEST(SplitK, FusedReductionOfAPartialTileSpreadsOverEveryThread) {
  ir::Program p = Gemm("examples/gemm/gemm.py", kDecode);
  ASSERT_TRUE(SplitK(p, 8, SplitKReduce::kFused).ok());
  ASSERT_TRUE(ir::Verify(p).ok()) << ir::Verify(p) << ir::PrintProgram(p);
  const std::string text = ir::PrintProgram(p);
  EXPECT_THAT(text, HasSubstr("for kiln_splitk_i, kiln_splitk_j in parallel(64, 128)"));
  EXPECT_THAT(text, HasSubstr("if kiln_splitk_i + by * 64 < 16 && kiln_splitk_j + bx * 128 < "
                              "4000"));
  EXPECT_THAT(text, HasSubstr("C[kiln_splitk_i + by * 64, kiln_splitk_j + bx * 128] = "));
  EXPECT_THAT(text, Not(HasSubstr("C_acc[kiln_splitk_i, kiln_splitk_j] = select(")));
  codegen::LoweringOptions o;
  o.split_k = 8;
  o.split_k_reduce = SplitKReduce::kFused;
  const ir::Program plain = Gemm("examples/gemm/gemm.py", kDecode);
  for (const char* target : {"cuda:sm_90", "cpu"}) {
    absl::StatusOr<codegen::EmittedKernel> k = codegen::LowerAndEmit(plain, target, o);
    ASSERT_TRUE(k.ok()) << target << ": " << k.status();
  }
}

// split-k=auto, the default: on Hopper's default path Kiln splits a grid
// of at most a quarter of the SMs into the most of 16, 8, 4, 2 parts that
// keeps one block per SM (132) and 8 K-loop trips per part.
TEST(SplitK, AutoSplitsSmallGridsOnHopper) {
  EXPECT_EQ(passes::AutoSplitParts(32, 64, 132), 4);  // 64x128x64 at 16 x 4096 x 4096
  EXPECT_EQ(passes::AutoSplitParts(16, 64, 132), 8);  // 128x256x64
  EXPECT_EQ(passes::AutoSplitParts(33, 64, 132), 4);  // a quarter of the SMs
  EXPECT_EQ(passes::AutoSplitParts(34, 64, 132), 1);  // more: 56 blocks lost 25 % split 2
  EXPECT_EQ(passes::AutoSplitParts(8, 256, 132), 16); // at most 16
  EXPECT_EQ(passes::AutoSplitParts(8, 24, 132), 2);   // 8 trips a part: 3 does not divide
  EXPECT_EQ(passes::AutoSplitParts(32, 15, 132), 1);  // too few trips to share
  const ir::Program plain = Gemm("examples/gemm/gemm.py", kDecode);
  ir::Program split = plain;
  const int parts = passes::AutoSplitK(split);
  EXPECT_GT(parts, 1);
  // Split in place, the partials summed as the default reduction does.
  const bool fused = kDefaultSplitKReduce == SplitKReduce::kFused;
  EXPECT_EQ(split.kernel.grid.size(), 3u);
  EXPECT_EQ(split.next_kernels.size(), fused ? 0u : 1u);
  absl::StatusOr<codegen::EmittedKernel> k = codegen::LowerAndEmit(plain, "cuda:sm_90");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->launch.next_kernels.size(), fused ? 0u : 1u);
  ASSERT_EQ(k->launch.workspaces.size(), fused ? 2u : 1u);
  EXPECT_EQ(ir::ConstInt(k->launch.grid[2]), parts);
  // The CPU emulation of the sm_90 program splits the same way.
  codegen::LoweringOptions emulate;
  emulate.lower_for = "cuda:sm_90";
  absl::StatusOr<codegen::EmittedKernel> cpu = codegen::LowerAndEmit(plain, "cpu", emulate);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(ir::ConstInt(cpu->launch.grid[2]), parts);
  EXPECT_EQ(cpu->launch.workspaces.size(), fused ? 2u : 1u);
  // Not on the older paths, and never an error: a program split-K cannot
  // take stays whole.
  codegen::LoweringOptions mma;
  mma.gemm_wgmma = false;
  absl::StatusOr<codegen::EmittedKernel> old = codegen::LowerAndEmit(plain, "cuda:sm_90", mma);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_TRUE(old->launch.workspaces.empty());
  ir::Program twice = plain; // the output written twice after the loop
  twice.kernel.body.push_back(twice.kernel.body.back());
  const std::string before = ir::PrintProgram(twice);
  EXPECT_EQ(passes::AutoSplitK(twice), 1);
  EXPECT_EQ(ir::PrintProgram(twice), before); // left as it was
  EXPECT_FALSE(passes::SplitKCanTake(twice));
  absl::StatusOr<codegen::EmittedKernel> whole = codegen::LowerAndEmit(twice, "cuda:sm_90");
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_TRUE(whole->launch.workspaces.empty());
  EXPECT_TRUE(passes::SplitKCanTake(plain));
}

TEST(SplitK, WhatCannotBeSplitIsALocatedError) {
  const ir::Program gemm = Gemm("examples/gemm/gemm.py", kDecode);
  EXPECT_THAT(ErrorOf(gemm, 1), HasSubstr("split-k=1: the number of splits must be in 2..64"));
  EXPECT_THAT(ErrorOf(gemm, 65), HasSubstr("must be in 2..64"));
  // 64 K tiles: 6 does not divide them.
  EXPECT_THAT(ErrorOf(gemm, 6), HasSubstr("examples/gemm/gemm.py:25:9: split-k=6: the K loop "
                                          "runs 64 times, which 6 does not divide"));
  // Split twice, either way.
  for (SplitKReduce r : {SplitKReduce::kKernel, SplitKReduce::kFused}) {
    ir::Program twice = gemm;
    ASSERT_TRUE(SplitK(twice, 2, r).ok());
    EXPECT_THAT(ErrorOf(twice, 2), HasSubstr("split-k=2: the program is already split"));
  }
  // An epilogue (bias and relu) between the loop and the copy: it would
  // apply to each partial sum.
  EXPECT_THAT(ErrorOf(Gemm("examples/gemm/gemm_relu.py",
                           "M=64 N=128 K=256 block_M=64 block_N=128 block_K=32"),
                      2),
              HasSubstr("the K loop must be followed by exactly one statement"));
  // Three grid dimensions already (a batch).
  EXPECT_THAT(ErrorOf(Gemm("examples/gemm/batched_gemm.py",
                           "batch=2 M=64 N=128 K=256 block_M=64 block_N=128 block_K=32"),
                      2),
              HasSubstr("the kernel already uses three grid dimensions"));
  // No loop of gemms.
  EXPECT_THAT(ErrorOf(Gemm("examples/elementwise/add.py", "M=256 N=256 block_M=32 block_N=32"), 2),
              HasSubstr("the kernel has no K loop (a loop of gemms) at its top level"));
  // A K loop whose trip count is not known.
  testing::ExampleFile ex = testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/gemm/gemm.py");
  frontend::FrontendOptions dyn = ex.Options(/*test_size=*/false);
  dyn.dynamic_params = {"K"};
  dyn.bindings.erase(std::remove_if(dyn.bindings.begin(), dyn.bindings.end(),
                                    [](const auto& b) { return b.first == "K"; }),
                     dyn.bindings.end());
  absl::StatusOr<ir::Program> dynamic_k = frontend::CompileSource(ex.source, dyn);
  ASSERT_TRUE(dynamic_k.ok()) << dynamic_k.status();
  EXPECT_THAT(ErrorOf(*dynamic_k, 2), HasSubstr("the K loop's trip count must be a constant"));
}

} // namespace
} // namespace kiln::passes
