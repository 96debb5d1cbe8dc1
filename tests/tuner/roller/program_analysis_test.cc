#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compiler/frontend/frontend.h"
#include "gtest/gtest.h"
#include "tuner/roller/program_analysis.h"

namespace kiln::roller {
namespace {

std::string ReadExample(const std::string& rel) {
  std::ifstream f(std::string(KILN_SOURCE_DIR) + "/" + rel);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

driver::ProgramInput Input(const std::string& rel,
                           const std::vector<std::pair<std::string, std::string>>& binds) {
  driver::ProgramInput in;
  in.text = ReadExample(rel);
  in.file_name = rel;
  for (const auto& [k, v] : binds) in.bindings.emplace_back(k, frontend::ParseBindingText(v));
  return in;
}

using Binds = std::vector<std::pair<std::string, std::string>>;

struct RoleCase {
  const char* file;
  Binds binds;
  std::map<std::string, Role> roles; // every candidate, exactly
  std::map<std::string, int64_t> extents;
};

TEST(ProgramAnalysis, FindsTheRolesOfEveryExampleWithoutAnnotations) {
  const std::map<std::string, Role> gemm = {{"block_M", Role::kBlockTile},
                                            {"block_N", Role::kBlockTile},
                                            {"block_K", Role::kReductionStep},
                                            {"num_stages", Role::kPipelineDepth},
                                            {"threads", Role::kThreads}};
  const Binds sq = {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}};
  const Binds mn = {{"M", "8192"}, {"N", "8192"}};
  const std::vector<RoleCase> cases = {
      {"examples/gemm/gemm.py",
       sq,
       gemm,
       {{"block_M", 4096}, {"block_N", 4096}, {"block_K", 4096}}},
      {"examples/gemm/gemm_int8.py", sq, gemm, {}},
      {"examples/gemm/gemm_relu.py", sq, gemm, {}},
      {"examples/gemm/gemm_transposed_b.py", sq, gemm, {}},
      {"examples/gemm/batched_gemm.py",
       {{"batch", "16"}, {"M", "1024"}, {"N", "1024"}, {"K", "512"}},
       gemm,
       {{"block_M", 1024}, {"block_K", 512}}},
      {"examples/gemm/gemm_splitk.py",
       {{"M", "512"}, {"N", "512"}, {"K", "16384"}},
       {{"block_M", Role::kBlockTile},
        {"block_N", Role::kBlockTile},
        {"block_K", Role::kReductionStep},
        {"split_k", Role::kSplit},
        {"num_stages", Role::kPipelineDepth},
        {"threads", Role::kThreads}},
       {{"block_M", 512}}},
      {"examples/gemv/gemv.py",
       {{"M", "8192"}, {"K", "8192"}},
       {{"block_M", Role::kBlockTile},
        {"block_K", Role::kReductionStep},
        {"num_stages", Role::kPipelineDepth},
        {"threads", Role::kThreads}},
       {{"block_M", 8192}, {"block_K", 8192}}},
      {"examples/norm/layernorm.py",
       {{"M", "16384"}, {"N", "4096"}},
       {{"block_M", Role::kBlockTile},
        {"block_N", Role::kReductionStep},
        {"threads", Role::kThreads}},
       {{"block_M", 16384}, {"block_N", 4096}}},
      {"examples/norm/rmsnorm.py",
       {{"M", "16384"}, {"N", "4096"}},
       {{"block_M", Role::kBlockTile}, {"threads", Role::kThreads}},
       {{"block_M", 16384}}},
      {"examples/reduction/col_sum.py",
       {{"M", "16384"}, {"N", "8192"}},
       {{"block_M", Role::kReductionStep},
        {"block_N", Role::kBlockTile},
        {"num_stages", Role::kPipelineDepth},
        {"threads", Role::kThreads}},
       {{"block_M", 16384}, {"block_N", 8192}}},
      {"examples/reduction/row_sum.py",
       {{"M", "16384"}, {"N", "8192"}},
       {{"block_M", Role::kBlockTile},
        {"block_N", Role::kReductionStep},
        {"threads", Role::kThreads}},
       {}},
      // N above the default block_N, so the multi-tile path is the baseline.
      {"examples/softmax/softmax.py",
       {{"M", "8192"}, {"N", "32768"}},
       {{"block_M", Role::kBlockTile},
        {"block_N", Role::kReductionStep},
        {"threads", Role::kThreads}},
       {{"block_M", 8192}, {"block_N", 32768}}},
      {"examples/elementwise/add.py",
       mn,
       {{"block_M", Role::kBlockTile}, {"block_N", Role::kBlockTile}, {"threads", Role::kThreads}},
       {{"block_M", 8192}}},
      {"examples/elementwise/silu_mul.py",
       {{"M", "8192"}, {"N", "14336"}},
       {{"block_M", Role::kBlockTile}, {"block_N", Role::kBlockTile}, {"threads", Role::kThreads}},
       {{"block_N", 14336}}},
      {"examples/transpose/transpose.py",
       mn,
       {{"block_M", Role::kBlockTile}, {"block_N", Role::kBlockTile}, {"threads", Role::kThreads}},
       {}},
      {"examples/attention/flash_attention_fwd.py",
       {{"batch", "4"},
        {"heads", "32"},
        {"seq_len", "4096"},
        {"dim", "128"},
        {"is_causal", "False"}},
       {{"block_M", Role::kBlockTile},
        {"block_N", Role::kReductionStep},
        {"num_stages", Role::kPipelineDepth},
        {"threads", Role::kThreads}},
       {{"block_M", 4096}, {"block_N", 4096}}},
      // Causal: the key loop's trip count depends on the block; it is taken at
      // the middle block (about half of seq_len).
      {"examples/attention/flash_attention_fwd.py",
       {{"batch", "4"},
        {"heads", "32"},
        {"seq_len", "4096"},
        {"dim", "128"},
        {"is_causal", "True"}},
       {{"block_M", Role::kBlockTile},
        {"block_N", Role::kReductionStep},
        {"num_stages", Role::kPipelineDepth},
        {"threads", Role::kThreads}},
       {{"block_M", 4096}}},
      {"examples/attention/combine_splits.py",
       {{"batch", "64"}, {"heads", "32"}, {"num_splits", "16"}, {"dim", "128"}},
       {{"threads", Role::kThreads}},
       {}},
  };
  for (const RoleCase& c : cases) {
    SCOPED_TRACE(c.file);
    absl::StatusOr<ProgramAnalysis> a = AnalyzeProgram(Input(c.file, c.binds));
    ASSERT_TRUE(a.ok()) << a.status();
    std::map<std::string, Role> got;
    for (const Tunable& t : a->tunables) got[t.name] = t.role;
    EXPECT_EQ(got.size(), c.roles.size());
    for (const auto& [name, role] : c.roles) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(got.count(name));
      EXPECT_EQ(RoleName(got[name]), RoleName(role));
    }
    for (const auto& [name, extent] : c.extents) {
      SCOPED_TRACE(name);
      const Tunable* t = a->Find(name);
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->extent, extent);
    }
  }
}

TEST(ProgramAnalysis, GemmTunablesKnowTheirMmaDimensionsAndExtents) {
  absl::StatusOr<ProgramAnalysis> a =
      AnalyzeProgram(Input("examples/gemm/gemm.py", {{"M", "2048"}, {"N", "1024"}, {"K", "512"}}));
  ASSERT_TRUE(a.ok()) << a.status();
  const Tunable* bm = a->Find("block_M");
  const Tunable* bn = a->Find("block_N");
  const Tunable* bk = a->Find("block_K");
  ASSERT_TRUE(bm && bn && bk);
  EXPECT_TRUE(bm->mma_m && !bm->mma_n && !bm->mma_k);
  EXPECT_TRUE(bn->mma_n && !bn->mma_m);
  EXPECT_TRUE(bk->mma_k);
  EXPECT_EQ(bm->dim, "M");
  EXPECT_EQ(bm->extent, 2048);
  EXPECT_EQ(bn->dim, "N");
  EXPECT_EQ(bn->extent, 1024);
  EXPECT_EQ(bk->dim, "K");
  EXPECT_EQ(bk->extent, 512);
  // Defaults: the signature's (num_stages=3, threads=128), else the bind line's.
  EXPECT_EQ(a->defaults.at("num_stages"), 3);
  EXPECT_EQ(a->defaults.at("threads"), 128);
  EXPECT_EQ(a->defaults.at("block_M"), 128);
  EXPECT_EQ(a->defaults.at("block_K"), 64);
  // Iteration space: grid x over N, grid y over M, then K reduced.
  ASSERT_EQ(a->iteration_space.size(), 3u);
  EXPECT_EQ(a->iteration_space[0].name, "N");
  EXPECT_EQ(a->iteration_space[0].tiled_by, "block_N");
  EXPECT_EQ(a->iteration_space[1].name, "M");
  EXPECT_EQ(a->iteration_space[1].extent, 2048);
  EXPECT_EQ(a->iteration_space[2].name, "K");
  EXPECT_TRUE(a->iteration_space[2].reduction);
  EXPECT_EQ(a->Tuned().size(), 5u);
}

// The fitted model of every quantity must agree with what the frontend
// produces when the config is actually compiled, at ragged sizes too.
TEST(ProgramAnalysis, EvaluatedQuantitiesMatchARealCompile) {
  struct Case {
    const char* file;
    Binds binds;
    std::vector<Config> configs;
  };
  const std::vector<Case> cases = {
      {"examples/gemm/gemm.py",
       {{"M", "1000"}, {"N", "1000"}, {"K", "1000"}},
       {{{"block_M", 64}, {"block_N", 32}, {"block_K", 32}, {"num_stages", 4}, {"threads", 256}},
        {{"block_M", 16}, {"block_N", 256}, {"block_K", 128}, {"num_stages", 1}},
        {{"block_M", 256}, {"block_N", 16}, {"block_K", 16}, {"threads", 64}}}},
      {"examples/softmax/softmax.py",
       {{"M", "1000"}, {"N", "30000"}},
       {{{"block_M", 4}, {"block_N", 1024}},
        {{"block_M", 2}, {"block_N", 4096}, {"threads", 256}}}},
      {"examples/attention/flash_attention_fwd.py",
       {{"batch", "2"}, {"heads", "8"}, {"seq_len", "1000"}, {"dim", "64"}, {"is_causal", "False"}},
       {{{"block_M", 64}, {"block_N", 32}, {"num_stages", 3}},
        {{"block_M", 32}, {"block_N", 128}}}},
      {"examples/reduction/col_sum.py",
       {{"M", "5000"}, {"N", "3000"}},
       {{{"block_M", 16}, {"block_N", 512}, {"num_stages", 3}}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    absl::StatusOr<ProgramAnalysis> a = AnalyzeProgram(Input(c.file, c.binds));
    ASSERT_TRUE(a.ok()) << a.status();
    for (const Config& config : c.configs) {
      driver::ProgramInput in = BindConfig(*a, config);
      frontend::FrontendOptions fo;
      fo.bindings = in.bindings;
      absl::StatusOr<ir::Program> p = frontend::CompileSource(in.text, fo);
      ASSERT_TRUE(p.ok()) << p.status();
      absl::StatusOr<KernelSummary> real = Summarize(*p);
      ASSERT_TRUE(real.ok()) << real.status();
      ASSERT_EQ(real->signature, a->base.signature);
      const std::vector<int64_t> model = EvalQuantities(*a, config);
      ASSERT_EQ(model.size(), real->q.size());
      for (size_t q = 0; q < model.size(); ++q) {
        EXPECT_EQ(model[q], real->q[q]) << real->q_what[q];
      }
    }
  }
}

// layernorm and softmax take a single-tile path when block_N covers N (the
// row is read once): the analysis must see it and evaluate that region with
// quantities of its own, equal to a real compile's.
TEST(ProgramAnalysis, SeesTheSingleTileSwitchOfRowKernels) {
  struct Case {
    const char* file;
    Binds binds;
    int64_t n;
    std::vector<Config> configs; // inside the switch's region
  };
  const std::vector<Case> cases = {
      {"examples/norm/layernorm.py",
       {{"M", "16384"}, {"N", "4096"}},
       4096,
       {{{"block_N", 4096}},
        {{"block_M", 2}, {"block_N", 4096}, {"threads", 256}},
        {{"block_M", 1}, {"block_N", 8192}, {"threads", 512}}}},
      {"examples/softmax/softmax.py",
       {{"M", "8192"}, {"N", "16384"}},
       16384,
       {{{"block_N", 16384}}, {{"block_M", 1}, {"block_N", 16384}, {"threads", 512}}}},
      {"examples/norm/layernorm.py", // ragged: the switch sits at N itself
       {{"M", "45"}, {"N", "3000"}},
       3000,
       {{{"block_N", 3000}}, {{"block_M", 2}, {"block_N", 4096}, {"threads", 64}}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    absl::StatusOr<ProgramAnalysis> a = AnalyzeProgram(Input(c.file, c.binds));
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_EQ(a->switches.size(), 1u);
    const StructureSwitch& sw = a->switches[0];
    EXPECT_EQ(sw.tunable, "block_N");
    EXPECT_EQ(sw.from, c.n);
    EXPECT_EQ(sw.why, "structure");
    ASSERT_NE(sw.analysis, nullptr);
    EXPECT_NE(sw.analysis->base.signature, a->base.signature);
    // Below the switch the default's analysis applies.
    EXPECT_EQ(&AnalysisFor(*a, {{"block_N", c.n / 2}}), &*a);
    for (const Config& config : c.configs) {
      const ProgramAnalysis& r = AnalysisFor(*a, config);
      EXPECT_EQ(&r, sw.analysis.get());
      driver::ProgramInput in = BindConfig(*a, config);
      frontend::FrontendOptions fo;
      fo.bindings = in.bindings;
      absl::StatusOr<ir::Program> p = frontend::CompileSource(in.text, fo);
      ASSERT_TRUE(p.ok()) << p.status();
      absl::StatusOr<KernelSummary> real = Summarize(*p);
      ASSERT_TRUE(real.ok()) << real.status();
      ASSERT_EQ(real->signature, r.base.signature);
      const std::vector<int64_t> model = EvalQuantities(r, config);
      ASSERT_EQ(model.size(), real->q.size());
      for (size_t q = 0; q < model.size(); ++q) {
        EXPECT_EQ(model[q], real->q[q]) << real->q_what[q];
      }
    }
  }
}

// Kernels whose structure does not depend on a tile covering its extent get
// no switch (and so no extra analyses).
TEST(ProgramAnalysis, UniformKernelsHaveNoSwitch) {
  const std::vector<std::pair<const char*, Binds>> cases = {
      {"examples/gemm/gemm.py", {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}}},
      {"examples/gemm/gemm.py", {{"M", "16"}, {"N", "4096"}, {"K", "4096"}}},
      {"examples/norm/rmsnorm.py", {{"M", "16384"}, {"N", "4096"}}},
  };
  for (const auto& [file, binds] : cases) {
    SCOPED_TRACE(file);
    absl::StatusOr<ProgramAnalysis> a = AnalyzeProgram(Input(file, binds));
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_TRUE(a->switches.empty()) << a->switches[0].tunable;
  }
}

TEST(ProgramAnalysis, AnUnboundShapeParameterIsNotTuned) {
  // gemv's K is a parameter of the factory function; unbound, the bind line's
  // value is used and the analysis sees that it changes tensor shapes.
  absl::StatusOr<ProgramAnalysis> a =
      AnalyzeProgram(Input("examples/gemv/gemv.py", {{"M", "4096"}}));
  ASSERT_TRUE(a.ok()) << a.status();
  const Tunable* k = a->Find("K");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->role, Role::kShape);
  EXPECT_EQ(k->default_value, 8192);
  for (const Tunable* t : a->Tuned()) EXPECT_NE(t->name, "K");
  bool noted = false;
  for (const std::string& n : a->notes) noted = noted || n.rfind("K:", 0) == 0;
  EXPECT_TRUE(noted);
}

TEST(ProgramAnalysis, UnboundShapeSymbolsAreAnError) {
  absl::StatusOr<ProgramAnalysis> a = AnalyzeProgram(Input("examples/gemm/gemm.py", {{"M", "64"}}));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("bind the shape symbols"), std::string::npos) << a.status();
}

TEST(ProgramAnalysis, DeclaredSpaces) {
  const driver::ProgramInput in = Input("examples/gemv/gemv.py", {{"M", "4096"}, {"K", "4096"}});
  EXPECT_FALSE(AnalyzeProgram(in, {{"block_Q", {16}}}).ok());
  EXPECT_FALSE(AnalyzeProgram(in, {{"M", {16}}}).ok()); // bound and declared
  EXPECT_FALSE(AnalyzeProgram(in, {{"block_M", {}}}).ok());
  const driver::ProgramInput g =
      Input("examples/gemm/gemm.py", {{"M", "64"}, {"N", "64"}, {"K", "64"}});
  EXPECT_FALSE(AnalyzeProgram(g, {{"A", {1, 2}}}).ok()); // a tensor
  absl::StatusOr<ProgramAnalysis> a = AnalyzeProgram(in, {{"block_M", {8, 32}}});
  ASSERT_TRUE(a.ok()) << a.status();
  const Tunable* bm = a->Find("block_M");
  ASSERT_NE(bm, nullptr);
  EXPECT_EQ(bm->declared, (std::vector<int64_t>{8, 32}));
  // The default (16) is not in the declared domain: the first value is the baseline.
  EXPECT_EQ(bm->default_value, 8);
}

TEST(ProgramAnalysis, ATunableWithoutAnyDefaultNeedsADeclaredDomain) {
  driver::ProgramInput in =
      Input("examples/gemm/gemm.py", {{"M", "256"}, {"N", "256"}, {"K", "256"}});
  // Drop the bind line: block_M, block_N and block_K have no default left.
  std::string text;
  std::istringstream lines(in.text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# kiln: bind", 0) != 0) text += line + "\n";
  }
  in.text = text;
  absl::StatusOr<ProgramAnalysis> a = AnalyzeProgram(in);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("block_M"), std::string::npos) << a.status();
  a = AnalyzeProgram(in, {{"block_M", {64, 128}}, {"block_N", {64}}, {"block_K", {32}}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->Find("block_M")->role, Role::kBlockTile);
}

TEST(ProgramAnalysis, IrInputIsRejected) {
  driver::ProgramInput in;
  in.kind = driver::ProgramInput::Kind::kIrText;
  in.text = "program";
  EXPECT_EQ(AnalyzeProgram(in).status().code(), absl::StatusCode::kInvalidArgument);
}

} // namespace
} // namespace kiln::roller
