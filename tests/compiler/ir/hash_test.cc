#include <functional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/canonicalize.h"
#include "compiler/ir/hash.h"
#include "gtest/gtest.h"
#include "tests/compiler/ir/gemm_program.h"

namespace kiln::ir {
namespace {

using namespace ::kiln::ir::test; // NOLINT: the test program and its builders

TEST(HashTest, KeyIsHexSha256AndDeterministic) {
  const std::string key = ProgramKey(Valid());
  ASSERT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(ProgramKey(Valid()), key);
  EXPECT_EQ(HashCanonical(Canonicalize(Valid())), key);
}

// Cache keys must not drift between builds: a change to the serialization
// is a change of key format (bump kKeyFormat, now "kiln-key-v2").
TEST(HashTest, KeyFormatIsPinned) {
  Program p;
  p.symbols.push_back(Symbol{"n", DType::kInt32, {}});
  p.kernel.grid = {IntImm(1)};
  p.kernel.block_vars = {"bx"};
  p.kernel.threads = {32};
  EXPECT_EQ(ProgramKey(p), "00989d9eddf6033b0d783e075aabc8cddc47606868a60c5a1203bd69726182c3");
}

TEST(HashTest, CosmeticEditsKeepTheKey) {
  const std::string base = ProgramKey(Valid());
  EXPECT_EQ(ProgramKey(CosmeticallyEdited(Valid())), base);
  Program renamed_only = Valid();
  renamed_only.name = "another_name";
  renamed_only.source_name = "elsewhere.py";
  EXPECT_EQ(ProgramKey(renamed_only), base);
  // Equal after simplification: (by + 1) * 128 - 128 is by * 128.
  Program arith = Valid();
  Pipe(arith, kCopyA).regions[0].ranges[0].min =
      Binary(BinOp::kSub, Mul(Add(V("by"), I(1)), I(128)), I(128));
  EXPECT_EQ(ProgramKey(arith), base);
}

TEST(HashTest, SemanticEditsChangeTheKey) {
  const std::string base = ProgramKey(Valid());
  struct Case {
    const char* name;
    std::function<void(Program&)> edit;
  };
  const std::vector<Case> cases = {
      {"shared shape", [](Program& p) { p.kernel.body[kAllocA].buffer.shape[0] = I(64); }},
      {"parameter shape", [](Program& p) { p.params[1].buffer.shape[0] = I(1024); }},
      {"parameter dtype", [](Program& p) { p.params[0].buffer.dtype = DType::kBFloat16; }},
      {"accumulator dtype", [](Program& p) { p.kernel.body[kAllocC].buffer.dtype = kF16; }},
      {"symbol dtype", [](Program& p) { p.symbols[0].dtype = DType::kInt64; }},
      {"fill constant", [](Program& p) { p.kernel.body[kFill].value = FloatImm(1.0, kF32); }},
      {"negative zero", [](Program& p) { p.kernel.body[kFill].value = FloatImm(-0.0, kF32); }},
      {"copy offset", [](Program& p) { Pipe(p, kCopyA).regions[0].ranges[0].min = V("by"); }},
      {"gemm transpose_b", [](Program& p) { Pipe(p, kGemm).transpose_b = true; }},
      {"gemm clear_accum", [](Program& p) { Pipe(p, kGemm).clear_accum = true; }},
      {"gemm k_pack", [](Program& p) { Pipe(p, kGemm).k_pack = 2; }},
      {"gemm policy", [](Program& p) { Pipe(p, kGemm).policy = GemmPolicy::kFullRow; }},
      {"loop kind",
       [](Program& p) {
         p.kernel.body[kPipe].for_kind = ForKind::kSerial;
         p.kernel.body[kPipe].num_stages = 0;
       }},
      {"num_stages", [](Program& p) { p.kernel.body[kPipe].num_stages = 2; }},
      {"pipeline order",
       [](Program& p) {
         p.kernel.body[kPipe].order = {0, 1, 2};
       }},
      {"loop extent", [](Program& p) { p.kernel.body[kPipe].extents[0] = I(8); }},
      {"reduce dim", [](Program& p) { p.kernel.body[kReduce].dim = 0; }},
      {"reduce kind", [](Program& p) { p.kernel.body[kReduce].reduce_kind = ReduceKind::kSum; }},
      {"reduce clear", [](Program& p) { p.kernel.body[kReduce].clear = false; }},
      {"scope", [](Program& p) { p.kernel.body[kAllocA].buffer.scope = Scope::kSharedDyn; }},
      {"threads", [](Program& p) { p.kernel.threads = {256}; }},
      {"grid", [](Program& p) { p.kernel.grid[0] = I(4); }},
      {"output flag", [](Program& p) { p.params[2].is_output = true; }},
      // The launch metadata stored with an artifact shows these names.
      {"parameter user name", [](Program& p) { p.params[0].user_name = "lhs"; }},
      {"scalar user name", [](Program& p) { p.params[3].user_name = "max"; }},
      {"symbol user name", [](Program& p) { p.symbols[0].user_name = "rows"; }},
      {"attrs", [](Program& p) { p.attrs["fast_math"] = "true"; }},
      {"layout", [](Program& p) { p.kernel.body[kLayout].layout = "padded"; }},
      {"swizzle", [](Program& p) { p.kernel.body[kSwizzle].enable = false; }},
      {"epilogue op", [](Program& p) { ParStore(p).value.args[0].bop = BinOp::kMin; }},
      {"statement order", [](Program& p) { std::swap(Pipe(p, kCopyA), Pipe(p, kCopyB)); }},
      {"parallel variable order",
       [](Program& p) { std::swap(ParStore(p).indices[0], ParStore(p).indices[1]); }},
  };
  std::set<std::string> seen = {base};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Program p = Valid();
    c.edit(p);
    std::string key = ProgramKey(p);
    EXPECT_NE(key, base);
    EXPECT_TRUE(seen.insert(key).second) << "collides with another edit";
  }
}

TEST(HashTest, ThreadIrIsHashed) {
  const std::string base = ProgramKey(ThreadProgram());
  EXPECT_NE(base, ProgramKey(Valid()));
  EXPECT_EQ(ProgramKey(CosmeticallyEdited(ThreadProgram())), base);
  struct Case {
    const char* name;
    std::function<void(Program&)> edit;
  };
  const std::vector<Case> cases = {
      {"intrinsic", [](Program& p) { CallAt(p, kLdmatrix).name = "ldmatrix_x4_trans"; }},
      {"address buffer", [](Program& p) { CallAt(p, kLdmatrix).indices[1].name = "B_s"; }},
      {"address index", [](Program& p) { CallAt(p, kLdmatrix).indices[0].args[0] = I(4); }},
      {"literal argument", [](Program& p) { CallAt(p, kWait).indices[0] = I(1, DType::kInt64); }},
      {"literal dtype", [](Program& p) { CallAt(p, kWait).indices[0] = I(0); }},
      {"value argument", [](Program& p) { CallAt(p, kShfl).indices[1] = Load("R", kF32, {I(2)}); }},
      {"call order", [](Program& p) { std::swap(CallAt(p, kSync), CallAt(p, kWait)); }},
  };
  std::set<std::string> seen = {base};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Program p = ThreadProgram();
    c.edit(p);
    std::string key = ProgramKey(p);
    EXPECT_NE(key, base);
    EXPECT_TRUE(seen.insert(key).second) << "collides with another edit";
  }
}

TEST(HashTest, ContextChangesTheKey) {
  const Program p = Valid();
  const KeyContext base_ctx{"cuda:sm_90", "opt=3", "kiln-1 nvrtc-12.4"};
  const std::string base = ProgramKey(p, base_ctx);
  KeyContext target = base_ctx, options = base_ctx, fingerprint = base_ctx;
  target.target = "cuda:sm_80";
  options.options = "opt=2";
  fingerprint.toolchain_fingerprint = "kiln-1 nvrtc-12.5";
  EXPECT_NE(ProgramKey(p, target), base);
  EXPECT_NE(ProgramKey(p, options), base);
  EXPECT_NE(ProgramKey(p, fingerprint), base);
  // Fields are length-prefixed: moving bytes between adjacent fields counts.
  KeyContext shifted{"cuda:sm_90o", "pt=3", "kiln-1 nvrtc-12.4"};
  EXPECT_NE(ProgramKey(p, shifted), base);
  Program a = p, b = p;
  a.attrs["ab"] = "c";
  b.attrs["a"] = "bc";
  EXPECT_NE(ProgramKey(a), ProgramKey(b));
}

} // namespace
} // namespace kiln::ir
