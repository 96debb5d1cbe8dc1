#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/driver/compile_driver.h"
#include "compiler/frontend/frontend.h"
#include "gtest/gtest.h"
#include "tuner/roller/policy.h"

namespace kiln::roller {
namespace {

using Binds = std::vector<std::pair<std::string, std::string>>;

driver::ProgramInput Input(const std::string& rel, const Binds& binds) {
  std::ifstream f(std::string(KILN_SOURCE_DIR) + "/" + rel);
  std::stringstream s;
  s << f.rdbuf();
  driver::ProgramInput in;
  in.text = s.str();
  in.file_name = rel;
  for (const auto& [k, v] : binds) in.bindings.emplace_back(k, frontend::ParseBindingText(v));
  return in;
}

Binds Cube(int n) {
  const std::string s = std::to_string(n);
  return {{"M", s}, {"N", s}, {"K", s}};
}

arch::ArchModel H200() { return *arch::FindPreset("h200"); }

TEST(Policy, RollerGemmCandidatesAreAlignedFitAndPassVerification) {
  for (int n : {4096, 8192}) {
    SCOPED_TRACE(n);
    PolicyOptions o;
    o.top_k = 10;
    o.pass_options = {"gemm=mma"}; // the mma.sync path (Hopper's default is wgmma)
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<Proposal> p = Propose(Input("examples/gemm/gemm.py", Cube(n)), H200(), o);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(p.ok()) << p.status();
    std::printf("gemm %d^3 fp16 on h200: %zu candidates from %lld configs in %.1f ms\n", n,
                p->candidates.size(), static_cast<long long>(p->considered), ms);
    ASSERT_EQ(p->candidates.size(), 10u);
    EXPECT_GT(p->considered, 100);
    EXPECT_GT(p->model_rejected, 0); // the space has configs over the shared-memory limit
    std::set<Config> distinct;
    for (size_t i = 0; i < p->candidates.size(); ++i) {
      const Candidate& c = p->candidates[i];
      SCOPED_TRACE(c.rationale);
      const int64_t bm = c.config.at("block_M"), bn = c.config.at("block_N"),
                    bk = c.config.at("block_K"), stages = c.config.at("num_stages"),
                    threads = c.config.at("threads");
      // m16n8k16: M in 16-row atoms, N in 8-column atoms, K in 16-steps.
      EXPECT_EQ(bm % 16, 0);
      EXPECT_EQ(bn % 8, 0);
      EXPECT_EQ(bk % 16, 0);
      EXPECT_EQ(threads % 32, 0);
      // A and B tiles (fp16) multi-buffered by the pipeline fit the opt-in limit.
      const int64_t smem = (bm * bk + bk * bn) * 2 * stages;
      EXPECT_EQ(c.prediction.smem_bytes, smem);
      EXPECT_LE(smem, H200().shared_bytes_optin);
      // Rows of a tile span whole 128-byte transactions.
      EXPECT_EQ(bk * 2 % 128, 0);
      EXPECT_GT(c.predicted_us, 0);
      EXPECT_FALSE(c.key.empty());
      EXPECT_TRUE(VerifyConfig(p->analysis, c.config, "cuda:sm_90", {"gemm=mma"}).ok());
      EXPECT_NE(c.rationale.find("tile "), std::string::npos);
      EXPECT_NE(c.rationale.find("-bound"), std::string::npos);
      if (i > 0) {
        EXPECT_LE(p->candidates[i - 1].predicted_us, c.predicted_us);
      }
      distinct.insert(c.config);
    }
    EXPECT_EQ(distinct.size(), 10u);
    // Big problems want big tiles: the best one covers at least 128 x 128.
    const Config& best = p->candidates[0].config;
    EXPECT_GE(best.at("block_M") * best.at("block_N"), 128 * 128);
    // 2 * n^3 flops cannot take less than the mma path's peak allows.
    const double floor_us = 2.0 * n * n * n / (989.4e12 * 0.42) * 1e6;
    EXPECT_GE(p->candidates[0].predicted_us, floor_us);
  }
}

TEST(Policy, SmallMGemmGetsASmallBlockM) {
  PolicyOptions o;
  o.top_k = 5;
  absl::StatusOr<Proposal> p = Propose(
      Input("examples/gemm/gemm.py", {{"M", "16"}, {"N", "4096"}, {"K", "4096"}}), H200(), o);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_FALSE(p->candidates.empty());
  EXPECT_EQ(p->candidates[0].config.at("block_M"), 16);
  // Larger tiles than 16 rows only where wgmma needs them (64 rows, its
  // smallest tile), and split-K among the candidates (64 blocks leave half
  // the SMs idle).
  bool split = false;
  for (const Candidate& c : p->candidates) {
    if (c.config.at("block_M") > 32) {
      EXPECT_TRUE(c.prediction.wgmma) << c.rationale;
      EXPECT_EQ(c.config.at("block_M"), 64) << c.rationale;
    }
    split = split || c.prediction.split > 1;
  }
  EXPECT_TRUE(split);
  // ... while M = 4096 does not.
  p = Propose(Input("examples/gemm/gemm.py", Cube(4096)), H200(), o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GE(p->candidates[0].config.at("block_M"), 64);
}

// Split-K (compiler/passes/split_k.h) as the tuning knob kiln:split_k: the
// roller adds variants of its best config where the grid leaves most SMs idle
// (a decode GEMM: M = 16 is 32 blocks of 128 columns on 132 SMs), each
// verified with the split applied; a declared knob is swept like any
// tunable, and a split the K loop does not allow is a compiler rejection.
TEST(Policy, DecodeGemmGetsSplitKVariantsThatVerify) {
  const driver::ProgramInput decode =
      Input("examples/gemm/gemm.py", {{"M", "16"}, {"N", "4096"}, {"K", "4096"}});
  PolicyOptions o;
  o.top_k = 10;
  absl::StatusOr<Proposal> p = Propose(decode, H200(), o);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->candidates.size(), 10u);
  // Split candidates: a kiln:split_k variant, or a config Kiln splits by
  // itself on Hopper (split-k=auto). Each verifies and says so.
  int knobs = 0, split_16 = 0, split_64 = 0;
  for (const Candidate& c : p->candidates) {
    SCOPED_TRACE(c.rationale);
    auto it = c.config.find(driver::kSplitKKnob);
    if (it != c.config.end()) {
      ++knobs;
      EXPECT_NE(c.rationale.find(absl::StrCat("split-K x", it->second)), std::string::npos);
    } else if (c.prediction.split > 1) {
      EXPECT_NE(c.rationale.find(
                    absl::StrCat("split-K x", c.prediction.split, " by Kiln (split-k=auto)")),
                std::string::npos);
    } else {
      continue;
    }
    EXPECT_TRUE(VerifyConfig(p->analysis, c.config, "cuda:sm_90", {}).ok());
    EXPECT_FALSE(c.key.empty());
    const int64_t m = c.config.at("block_M");
    split_16 += m == 16;
    split_64 += m == 64;
  }
  EXPECT_LE(knobs, 5); // at most half of the top-k
  // The model ranks 16-row (mma.sync) tiles first at M = 16; 64-row (wgmma)
  // tiles are split too.
  EXPECT_GT(split_16, 0);
  EXPECT_GT(split_64, 0);
  // Not where the grid fills the GPU, and no knob when turned off.
  absl::StatusOr<Proposal> cube = Propose(Input("examples/gemm/gemm.py", Cube(4096)), H200(), o);
  ASSERT_TRUE(cube.ok()) << cube.status();
  for (const Candidate& c : cube->candidates) {
    EXPECT_EQ(c.config.count(driver::kSplitKKnob), 0u);
    EXPECT_EQ(c.prediction.split, 1);
  }
  o.split_k_variants = false;
  absl::StatusOr<Proposal> off = Propose(decode, H200(), o);
  ASSERT_TRUE(off.ok()) << off.status();
  for (const Candidate& c : off->candidates) EXPECT_EQ(c.config.count(driver::kSplitKKnob), 0u);
  // With split-k=1 (off) nothing is split, by the knob or by Kiln.
  PolicyOptions unsplit;
  unsplit.top_k = 10;
  unsplit.pass_options = {"split-k=1"};
  absl::StatusOr<Proposal> none = Propose(decode, H200(), unsplit);
  ASSERT_TRUE(none.ok()) << none.status();
  for (const Candidate& c : none->candidates) EXPECT_EQ(c.prediction.split, 1) << c.rationale;

  // Declared: swept by the grid; 3 does not divide the 64 K tiles.
  PolicyOptions grid;
  grid.strategy = Strategy::kGrid;
  grid.space = {{"block_M", {16}},   {"block_N", {128}}, {"block_K", {64}},
                {"num_stages", {4}}, {"threads", {128}}, {driver::kSplitKKnob, {1, 3, 4}}};
  absl::StatusOr<Proposal> swept = Propose(decode, H200(), grid);
  ASSERT_TRUE(swept.ok()) << swept.status();
  std::set<int64_t> declared;
  for (const Candidate& c : swept->candidates) declared.insert(c.config.at(driver::kSplitKKnob));
  EXPECT_EQ(declared, (std::set<int64_t>{1, 4}));
  EXPECT_EQ(swept->compiler_rejected, 1);
  ASSERT_FALSE(swept->rejections.empty());
  EXPECT_NE(swept->rejections[0].find("which 3 does not divide"), std::string::npos)
      << swept->rejections[0];
}

// Persistent tiles (compiler/passes/persistent.h) as the tuning knob
// kiln:persistent: where the grid has more blocks than SMs on the
// warp-specialized wgmma path, a quarter of the top-k are the best configs
// again walking the tiles on one block per SM, each verified; not at a
// decode shape (split-K's), not off the TMA path, not where the pass options
// fix it; with the TMA-store epilogue, only stages that leave it room.
TEST(Policy, LargeHopperGemmGetsPersistentVariantsThatVerify) {
  PolicyOptions o;
  o.top_k = 8;
  absl::StatusOr<Proposal> p = Propose(Input("examples/gemm/gemm.py", Cube(4096)), H200(), o);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->candidates.size(), 8u);
  int persistent = 0;
  for (const Candidate& c : p->candidates) {
    SCOPED_TRACE(c.rationale);
    if (c.config.count(driver::kPersistentKnob) == 0) continue;
    ++persistent;
    EXPECT_EQ(c.config.at(driver::kPersistentKnob), 1);
    EXPECT_EQ(c.config.at(driver::kTmaStoreKnob), 1); // with the TMA-store epilogue
    EXPECT_TRUE(c.prediction.wgmma);
    EXPECT_GT(c.prediction.blocks, 132);
    // Its stages leave a quarter of the block's shared memory for the
    // store's tile (so not 128x256x64 with 4 stages, 192 KiB).
    EXPECT_LE(4 * c.prediction.smem_bytes, 3 * 232448);
    EXPECT_NE(c.rationale.find("persistent (132 blocks over"), std::string::npos);
    EXPECT_TRUE(VerifyConfig(p->analysis, c.config, "cuda:sm_90", {}).ok());
    EXPECT_FALSE(c.key.empty());
    // Its own build: the key differs from the same tile's.
    Config plain = c.config;
    plain.erase(driver::kPersistentKnob);
    EXPECT_NE(*VerifyConfig(p->analysis, plain, "cuda:sm_90", {}), c.key);
  }
  EXPECT_EQ(persistent, 2);
  absl::StatusOr<Proposal> decode = Propose(
      Input("examples/gemm/gemm.py", {{"M", "16"}, {"N", "4096"}, {"K", "4096"}}), H200(), o);
  ASSERT_TRUE(decode.ok()) << decode.status();
  for (const Candidate& c : decode->candidates) {
    EXPECT_EQ(c.config.count(driver::kPersistentKnob), 0u) << c.rationale;
  }
  for (const std::vector<std::string>& fixed :
       {std::vector<std::string>{"persistent=off"}, {"pipeline=cp.async"}}) {
    PolicyOptions f = o;
    f.pass_options = fixed;
    absl::StatusOr<Proposal> q = Propose(Input("examples/gemm/gemm.py", Cube(4096)), H200(), f);
    ASSERT_TRUE(q.ok()) << q.status();
    for (const Candidate& c : q->candidates) {
      EXPECT_EQ(c.config.count(driver::kPersistentKnob), 0u) << fixed[0];
    }
  }
}

TEST(Policy, GridReturnsExactlyTheVerifiedSubsetOfTheDeclaredSpace) {
  const TuneSpace space = {{"block_M", {64, 128, 256}},
                           {"block_N", {64, 128, 256}},
                           {"block_K", {32, 64, 128}},
                           {"num_stages", {2, 4, 5}},
                           {"threads", {128, 256}}};
  PolicyOptions o;
  o.strategy = Strategy::kGrid;
  o.space = space;
  const driver::ProgramInput in = Input("examples/gemm/gemm.py", Cube(4096));
  absl::StatusOr<Proposal> p = Propose(in, H200(), o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->considered, 3 * 3 * 3 * 3 * 2);

  std::set<Config> expected;
  int rejected = 0;
  for (int64_t bm : space.at("block_M")) {
    for (int64_t bn : space.at("block_N")) {
      for (int64_t bk : space.at("block_K")) {
        for (int64_t st : space.at("num_stages")) {
          for (int64_t th : space.at("threads")) {
            Config c = {{"block_M", bm},
                        {"block_N", bn},
                        {"block_K", bk},
                        {"num_stages", st},
                        {"threads", th}};
            if (VerifyConfig(p->analysis, c, "cuda:sm_90").ok()) {
              expected.insert(c);
            } else {
              ++rejected;
            }
          }
        }
      }
    }
  }
  ASSERT_GT(rejected, 0); // 256x256x128 with 5 stages is far over 227 KB
  std::set<Config> got;
  for (const Candidate& c : p->candidates) got.insert(c.config);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(p->candidates.size(), expected.size());
  EXPECT_EQ(p->compiler_rejected, rejected);
  // Ranked by prediction.
  for (size_t i = 1; i < p->candidates.size(); ++i) {
    if (p->candidates[i].prediction.fits) {
      EXPECT_LE(p->candidates[i - 1].predicted_us, p->candidates[i].predicted_us);
    }
  }
  // A budget keeps the best predicted ones.
  o.budget = 7;
  absl::StatusOr<Proposal> some = Propose(in, H200(), o);
  ASSERT_TRUE(some.ok());
  ASSERT_EQ(some->candidates.size(), 7u);
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(some->candidates[i].config, p->candidates[i].config);
  }
}

// 128 x 4096 with 64 x 64 tiles is 128 blocks on 132 SMs: one block per SM
// whatever the occupancy limit, so a deeper pipeline only adds loads in
// flight (measured on the H200: 2 stages 42 us, 3 stages 28.3, 4 stages
// 24.8). The model once credited 3 stages with two resident blocks.
TEST(Policy, FewerBlocksThanSmsGetNoOccupancyCredit) {
  absl::StatusOr<ProgramAnalysis> a =
      AnalyzeProgram(Input("examples/gemm/gemm.py", {{"M", "128"}, {"N", "4096"}, {"K", "4096"}}));
  ASSERT_TRUE(a.ok()) << a.status();
  auto at = [&](int64_t stages) {
    return Predict(*a, H200(),
                   {{"block_M", 64},
                    {"block_N", 64},
                    {"block_K", 128},
                    {"num_stages", stages},
                    {"threads", 128}});
  };
  const Prediction s2 = at(2), s3 = at(3), s4 = at(4);
  ASSERT_TRUE(s2.fits && s3.fits && s4.fits);
  EXPECT_EQ(s3.blocks, 128);
  EXPECT_GE(s3.blocks_per_sm, 2);    // the occupancy limit...
  EXPECT_LE(s4.time_us, s3.time_us); // ...does not make 3 stages faster than 4
  EXPECT_LT(s3.time_us, s2.time_us);
}

// Split-K (the knob kiln:split_k) shares each output tile's K loop among
// its parts: blocks x parts, a part of the compute per block, float32
// partials on top of the traffic and a reduce kernel. It pays where the
// grid leaves SMs idle (16 x 4096 x 4096: 32 blocks at 64x128; an H100
// measured 23.3 us unsplit and 14.9 split in 4) and not where it fills
// the GPU.
TEST(Policy, SplitKSharesTheKLoopAndPaysOnlyOnSmallGrids) {
  absl::StatusOr<ProgramAnalysis> decode =
      AnalyzeProgram(Input("examples/gemm/gemm.py", {{"M", "16"}, {"N", "4096"}, {"K", "4096"}}));
  ASSERT_TRUE(decode.ok()) << decode.status();
  ModelOptions wg;
  wg.wgmma = true;
  const arch::ArchModel h100 = *arch::FindPreset("h100");
  Config tile = {
      {"block_M", 64}, {"block_N", 128}, {"block_K", 64}, {"num_stages", 4}, {"threads", 128}};
  const Prediction one = Predict(*decode, h100, tile, wg);
  tile[driver::kSplitKKnob] = 4;
  const Prediction four = Predict(*decode, h100, tile, wg);
  ASSERT_TRUE(one.fits && four.fits);
  EXPECT_EQ(one.blocks, 32);
  EXPECT_EQ(four.blocks, 128);
  EXPECT_NEAR(four.compute_us, one.compute_us / 4, one.compute_us * 0.05);
  EXPECT_GT(four.dram_bytes, one.dram_bytes); // the partials
  EXPECT_LT(four.time_us, 0.8 * one.time_us);
  absl::StatusOr<ProgramAnalysis> cube = AnalyzeProgram(Input("examples/gemm/gemm.py", Cube(4096)));
  ASSERT_TRUE(cube.ok()) << cube.status();
  Config big = {
      {"block_M", 128}, {"block_N", 256}, {"block_K", 64}, {"num_stages", 3}, {"threads", 256}};
  const Prediction whole = Predict(*cube, h100, big, wg);
  big[driver::kSplitKKnob] = 4;
  const Prediction parts = Predict(*cube, h100, big, wg);
  ASSERT_TRUE(whole.fits && parts.fits);
  EXPECT_GT(parts.time_us, whole.time_us);
}

// A wave larger than L2 loses the sharing between its blocks, not more: B of
// an M = 128 GEMM (117 MB at 14336 x 4096) is read once by one row of blocks
// however little of it L2 holds. The model once scaled the whole wave by its
// footprint / L2 and predicted every 128-row tile of this shape DRAM-bound at
// one time.
TEST(Policy, AStreamNoBlocksShareIsReadOnceWhenTheWaveOverflowsL2) {
  absl::StatusOr<ProgramAnalysis> a =
      AnalyzeProgram(Input("examples/gemm/gemm.py", {{"M", "128"}, {"N", "14336"}, {"K", "4096"}}));
  ASSERT_TRUE(a.ok()) << a.status();
  const Prediction p = Predict(
      *a, H200(),
      {{"block_M", 128}, {"block_N", 128}, {"block_K", 64}, {"num_stages", 4}, {"threads", 128}});
  ASSERT_TRUE(p.fits);
  const double b = 14336.0 * 4096 * 2, a_bytes = 128.0 * 4096 * 2, c = 128.0 * 14336 * 2;
  EXPECT_GE(p.dram_bytes, b);
  // A (1 MB, shared by the wave's 112 blocks) keeps its sharing: what L2
  // must hold at a time is the stages in flight, not the whole K extent.
  EXPECT_LE(p.dram_bytes, b + 3 * a_bytes + c);
  EXPECT_LT(p.dram_bytes, p.l2_bytes / 1.5); // A is read by every block from L2 only
  // Shared operands still lose their sharing: 4096^3 at 64x64 tiles, a wave
  // of 528 blocks touching more than L2, reads more than each byte once.
  absl::StatusOr<ProgramAnalysis> big = AnalyzeProgram(Input("examples/gemm/gemm.py", Cube(8192)));
  ASSERT_TRUE(big.ok()) << big.status();
  const Prediction q = Predict(
      *big, H200(),
      {{"block_M", 64}, {"block_N", 64}, {"block_K", 64}, {"num_stages", 4}, {"threads", 128}});
  ASSERT_TRUE(q.fits);
  EXPECT_GT(q.dram_bytes, 3.0 * 8192 * 8192 * 2);
}

TEST(Policy, ModelAndCompilerAgreeOnSharedMemory) {
  absl::StatusOr<ProgramAnalysis> a = AnalyzeProgram(Input("examples/gemm/gemm.py", Cube(4096)));
  ASSERT_TRUE(a.ok());
  // (256*128 + 128*256) * 2 bytes * 4 stages = 512 KB.
  const Config big = {{"block_M", 256}, {"block_N", 256}, {"block_K", 128}, {"num_stages", 4}};
  const Prediction p = Predict(*a, H200(), big);
  EXPECT_FALSE(p.fits);
  EXPECT_NE(p.why_not.find("shared memory"), std::string::npos) << p.why_not;
  absl::StatusOr<std::string> v = VerifyConfig(*a, big, "cuda:sm_90");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("shared memory"), std::string::npos) << v.status();
  // An A100 has less shared memory than an H200: 160 KB fits one, not the other.
  const Config mid = {
      {"block_M", 256}, {"block_N", 128}, {"block_K", 64}, {"num_stages", 4}, {"threads", 256}};
  EXPECT_TRUE(Predict(*a, H200(), mid).fits);
  EXPECT_FALSE(Predict(*a, *arch::FindPreset("a100"), mid).fits);
  EXPECT_TRUE(VerifyConfig(*a, mid, "cuda:sm_90").ok());
  EXPECT_FALSE(VerifyConfig(*a, mid, "cuda:sm_80").ok());
}

TEST(Policy, RandomIsSeededAndDeterministic) {
  const driver::ProgramInput in = Input("examples/gemm/gemm.py", Cube(2048));
  PolicyOptions o;
  o.strategy = Strategy::kRandom;
  o.budget = 12;
  o.seed = 42;
  absl::StatusOr<Proposal> a = Propose(in, H200(), o);
  absl::StatusOr<Proposal> b = Propose(in, H200(), o);
  o.seed = 43;
  absl::StatusOr<Proposal> c = Propose(in, H200(), o);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  ASSERT_EQ(a->candidates.size(), 12u);
  std::vector<Config> ca, cb, cc;
  for (const Candidate& x : a->candidates) ca.push_back(x.config);
  for (const Candidate& x : b->candidates) cb.push_back(x.config);
  for (const Candidate& x : c->candidates) cc.push_back(x.config);
  EXPECT_EQ(ca, cb);
  EXPECT_NE(ca, cc);
  std::set<Config> distinct(ca.begin(), ca.end());
  EXPECT_EQ(distinct.size(), ca.size());
  for (const Candidate& x : a->candidates) {
    for (const auto& [name, v] : x.config) {
      const std::vector<int64_t>& dom = a->space.at(name);
      EXPECT_NE(std::find(dom.begin(), dom.end(), v), dom.end()) << name << "=" << v;
    }
    EXPECT_TRUE(VerifyConfig(a->analysis, x.config, "cuda:sm_90").ok());
  }
}

TEST(Policy, RandomSamplesADeclaredSpaceOnly) {
  PolicyOptions o;
  o.strategy = Strategy::kRandom;
  o.budget = 100; // more than the space holds
  o.space = {{"block_M", {64, 128}}, {"block_N", {64, 128}}};
  absl::StatusOr<Proposal> p =
      Propose(Input("examples/elementwise/add.py", {{"M", "4096"}, {"N", "4096"}}), H200(), o);
  ASSERT_TRUE(p.ok()) << p.status();
  // 2 x 2 declared, threads from its derived domain.
  const size_t all = 4 * p->space.at("threads").size();
  EXPECT_EQ(p->candidates.size(), all);
}

TEST(Policy, DerivedSpacesFollowRolesAndTheArch) {
  absl::StatusOr<ProgramAnalysis> a = AnalyzeProgram(Input("examples/gemm/gemm.py", Cube(8192)));
  ASSERT_TRUE(a.ok());
  TuneSpace s = DeriveSpace(*a, H200());
  // M is A's row count: MMA atoms from 16. N and K are the contiguous
  // extents of B and A: 128-byte rows (64 fp16) at least.
  EXPECT_EQ(s.at("block_M"), (std::vector<int64_t>{16, 32, 64, 128, 256}));
  EXPECT_EQ(s.at("block_N"), (std::vector<int64_t>{64, 128, 256}));
  EXPECT_EQ(s.at("block_K"), (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(s.at("num_stages"), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(s.at("threads"), (std::vector<int64_t>{128, 256}));
  // An extent smaller than the tiles caps them.
  a = AnalyzeProgram(Input("examples/gemm/gemm.py", {{"M", "20"}, {"N", "64"}, {"K", "64"}}));
  ASSERT_TRUE(a.ok());
  s = DeriveSpace(*a, H200());
  // 128: the default; 64: wgmma's atom, on a device with wgmma only.
  EXPECT_EQ(s.at("block_M"), (std::vector<int64_t>{16, 32, 64, 128}));
  EXPECT_EQ(DeriveSpace(*a, *arch::FindPreset("a100")).at("block_M"),
            (std::vector<int64_t>{16, 32, 128}));
  // int8: 128-byte rows are 128 elements (the default 64 stays in the domain).
  a = AnalyzeProgram(Input("examples/gemm/gemm_int8.py", Cube(4096)));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(DeriveSpace(*a, H200()).at("block_K"), (std::vector<int64_t>{64, 128}));
  // The fp32 (tf32) path of gemm.py steps K by 8 where rows allow: a tiny K
  // caps the row rule.
  a = AnalyzeProgram(Input("examples/gemm/gemm.py",
                           {{"M", "256"}, {"N", "256"}, {"K", "16"}, {"dtype", "float32"}}));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(DeriveSpace(*a, H200()).at("block_K"), (std::vector<int64_t>{16, 64}));
  // A contiguous elementwise tile spans at least one 128-byte line of fp16.
  a = AnalyzeProgram(Input("examples/elementwise/add.py", {{"M", "4096"}, {"N", "4096"}}));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(DeriveSpace(*a, H200()).at("block_N").front(), 64);
}

// One tile per row reads the row once (layernorm, softmax): those configs
// must be ranked by their own traffic, and so lead the top-k.
TEST(Policy, SingleTileRowConfigsLeadTheRowKernels) {
  struct Case {
    const char* file;
    Binds binds;
    int64_t n;
    double bytes; // X read once + Y written once, fp16
  };
  const std::vector<Case> cases = {
      {"examples/norm/layernorm.py", {{"M", "16384"}, {"N", "4096"}}, 4096, 2.0 * 16384 * 4096 * 2},
      {"examples/softmax/softmax.py",
       {{"M", "8192"}, {"N", "16384"}},
       16384,
       2.0 * 8192 * 16384 * 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    PolicyOptions o;
    o.top_k = 10;
    absl::StatusOr<Proposal> p = Propose(Input(c.file, c.binds), H200(), o);
    ASSERT_TRUE(p.ok()) << p.status();
    const std::vector<int64_t>& domain = p->space.at("block_N");
    EXPECT_NE(std::find(domain.begin(), domain.end(), c.n), domain.end());
    ASSERT_GE(p->candidates.size(), 3u);
    double best_multi = 1e30;
    for (const Candidate& cand : p->candidates) {
      if (cand.config.at("block_N") < c.n) best_multi = std::min(best_multi, cand.predicted_us);
    }
    for (size_t i = 0; i < 3; ++i) {
      const Candidate& cand = p->candidates[i];
      SCOPED_TRACE(cand.rationale);
      EXPECT_EQ(cand.config.at("block_N"), c.n);
      // Within a few percent of the single-pass traffic, nowhere near two passes.
      EXPECT_NEAR(static_cast<double>(cand.prediction.dram_bytes), c.bytes, 0.05 * c.bytes);
      EXPECT_LT(cand.predicted_us, best_multi);
    }
  }
}

TEST(Policy, EveryExampleGetsVerifiedCandidates) {
  struct Case {
    const char* file;
    Binds binds;
  };
  const std::vector<Case> cases = {
      {"examples/gemv/gemv.py", {{"M", "8192"}, {"K", "8192"}}},
      {"examples/softmax/softmax.py", {{"M", "8192"}, {"N", "8192"}}},
      {"examples/norm/layernorm.py", {{"M", "16384"}, {"N", "4096"}}},
      {"examples/norm/rmsnorm.py", {{"M", "16384"}, {"N", "4096"}}},
      {"examples/reduction/row_sum.py", {{"M", "16384"}, {"N", "8192"}}},
      {"examples/reduction/col_sum.py", {{"M", "16384"}, {"N", "8192"}}},
      {"examples/elementwise/add.py", {{"M", "8192"}, {"N", "8192"}}},
      {"examples/transpose/transpose.py", {{"M", "8192"}, {"N", "8192"}}},
      {"examples/gemm/gemm_splitk.py", {{"M", "512"}, {"N", "512"}, {"K", "16384"}}},
      {"examples/attention/flash_attention_fwd.py",
       {{"batch", "4"},
        {"heads", "32"},
        {"seq_len", "4096"},
        {"dim", "128"},
        {"is_causal", "True"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    PolicyOptions o;
    o.top_k = 3;
    absl::StatusOr<Proposal> p = Propose(Input(c.file, c.binds), H200(), o);
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_FALSE(p->candidates.empty());
    for (const Candidate& cand : p->candidates) {
      EXPECT_GT(cand.predicted_us, 0);
      EXPECT_TRUE(VerifyConfig(p->analysis, cand.config, "cuda:sm_90").ok()) << cand.rationale;
    }
  }
}

TEST(Policy, HipAndCpuTargetsVerifyWithoutPrepare) {
  PolicyOptions o;
  o.top_k = 3;
  absl::StatusOr<Proposal> p =
      Propose(Input("examples/gemm/gemm.py", Cube(4096)), *arch::FindPreset("mi300x"), o);
  ASSERT_TRUE(p.ok()) << p.status();
  for (const Candidate& c : p->candidates) {
    EXPECT_TRUE(c.key.empty());
    EXPECT_LE(c.prediction.smem_bytes, 64 * 1024); // LDS
  }
  p = Propose(Input("examples/gemm/gemm.py", Cube(256)), *arch::FindPreset("cpu"), o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->candidates[0].key.empty());
}

// With gemm=wgmma on cuda:sm_90a the model predicts warpgroup tiles at the
// wgmma rate where the compiler's rule lets wgmma tile the gemm, and mma.sync
// elsewhere; candidates are verified and keyed as the wgmma builds.
TEST(Policy, WgmmaTuningPredictsWarpgroupTilesAndKeysTheirBuilds) {
  const driver::ProgramInput in = Input("examples/gemm/gemm.py", Cube(4096));
  absl::StatusOr<ProgramAnalysis> a = AnalyzeProgram(in);
  ASSERT_TRUE(a.ok()) << a.status();
  ModelOptions wg;
  wg.wgmma = true;
  const Config tile = {
      {"block_M", 128}, {"block_N", 256}, {"block_K", 64}, {"num_stages", 4}, {"threads", 256}};
  const Prediction mma = Predict(*a, H200(), tile);
  const Prediction w = Predict(*a, H200(), tile, wg);
  ASSERT_TRUE(mma.fits && w.fits);
  EXPECT_FALSE(mma.wgmma);
  EXPECT_TRUE(w.wgmma);
  EXPECT_EQ(w.bound, "compute");
  // Two 64x256 warpgroup tiles run at the calibrated wgmma rate (700 of
  // mma.sync's 415 TFLOP/s): the compute term shrinks by about that ratio.
  EXPECT_NEAR(mma.compute_us / w.compute_us,
              H200().wgmma_tflops / (H200().bf16_tflops * H200().mma_efficiency), 0.15);
  EXPECT_LT(w.registers, mma.registers); // operands stay in shared memory
  // 64 threads are half a warpgroup, and a 32-row tile is half an m64 atom:
  // the compiler keeps mma.sync for both, and so does the model.
  Config half = tile;
  half["threads"] = 64;
  EXPECT_FALSE(Predict(*a, H200(), half, wg).wgmma);
  Config short_m = tile;
  short_m["block_M"] = 32;
  short_m["threads"] = 128;
  EXPECT_FALSE(Predict(*a, H200(), short_m, wg).wgmma);
  // A device without wgmma (the A100) predicts mma.sync whatever is asked.
  EXPECT_FALSE(Predict(*a, *arch::FindPreset("a100"), tile, wg).wgmma);

  PolicyOptions o;
  o.top_k = 10;
  o.target = "cuda:sm_90a";
  o.pass_options = {"gemm=mma"};
  absl::StatusOr<Proposal> plain = Propose(in, H200(), o);
  ASSERT_TRUE(plain.ok()) << plain.status();
  o.pass_options = {"gemm=wgmma"};
  absl::StatusOr<Proposal> p = Propose(in, H200(), o);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->candidates.size(), 10u);
  EXPECT_TRUE(p->candidates[0].prediction.wgmma) << p->candidates[0].rationale;
  EXPECT_LT(p->candidates[0].predicted_us, plain->candidates[0].predicted_us);
  std::map<Config, std::string> plain_keys;
  for (const Candidate& c : plain->candidates) plain_keys[c.config] = c.key;
  for (const Candidate& c : p->candidates) {
    SCOPED_TRACE(c.rationale);
    EXPECT_EQ(c.prediction.wgmma, c.rationale.find("wgmma") != std::string::npos);
    if (c.prediction.wgmma) {
      EXPECT_EQ(c.config.at("threads") % 128, 0);
      EXPECT_EQ(c.config.at("block_M") % 64, 0);
    }
    EXPECT_TRUE(VerifyConfig(p->analysis, c.config, "cuda:sm_90a", {"gemm=wgmma"}).ok());
    auto same = plain_keys.find(c.config);
    if (same != plain_keys.end()) {
      EXPECT_NE(same->second, c.key);
    }
  }
  // Hopper's default is wgmma, on cuda:sm_90 too.
  o.target = "cuda:sm_90";
  o.pass_options = {};
  p = Propose(in, H200(), o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->candidates[0].prediction.wgmma) << p->candidates[0].rationale;
  // gemm=wgmma means nothing below Hopper; an unknown option is refused.
  o.target = "cuda:sm_80";
  o.pass_options = {"gemm=wgmma"};
  p = Propose(in, H200(), o);
  ASSERT_TRUE(p.ok()) << p.status();
  for (const Candidate& c : p->candidates) EXPECT_FALSE(c.prediction.wgmma) << c.rationale;
  o.pass_options = {"gemm=tensor-cores"};
  p = Propose(in, H200(), o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("gemm=tensor-cores"), std::string::npos) << p.status();
}

TEST(Policy, StrategyNames) {
  EXPECT_EQ(*ParseStrategy("roller"), Strategy::kRoller);
  EXPECT_EQ(*ParseStrategy("grid"), Strategy::kGrid);
  EXPECT_EQ(*ParseStrategy("random"), Strategy::kRandom);
  EXPECT_FALSE(ParseStrategy("annealing").ok());
  EXPECT_EQ(StrategyName(Strategy::kGrid), "grid");
}

TEST(Policy, OversizedSpacesAreRefused) {
  PolicyOptions o;
  o.strategy = Strategy::kGrid;
  o.max_space = 50;
  absl::StatusOr<Proposal> p = Propose(Input("examples/gemm/gemm.py", Cube(4096)), H200(), o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
}

} // namespace
} // namespace kiln::roller
