#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/canonicalize.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass_registry.h"
#include "gtest/gtest.h"
#include "tests/compiler/ir/gemm_program.h"

namespace kiln::ir {
namespace {

using namespace ::kiln::ir::test; // NOLINT: the test program and its builders

bool AnyLocation(const Expr& e) {
  if (e.loc.line != 0 || e.loc.col != 0) return true;
  for (const Expr& a : e.args) {
    if (AnyLocation(a)) return true;
  }
  return false;
}

bool AnyLocation(const std::vector<Stmt>& stmts) {
  for (const Stmt& s : stmts) {
    if (s.loc.line != 0 || s.buffer.loc.line != 0 || AnyLocation(s.value) || AnyLocation(s.cond) ||
        AnyLocation(s.body) || AnyLocation(s.else_body)) {
      return true;
    }
    for (const Region& r : s.regions) {
      if (r.loc.line != 0) return true;
      for (const Range& range : r.ranges) {
        if (AnyLocation(range.min) || AnyLocation(range.extent)) return true;
      }
    }
    for (const Expr& e : s.indices) {
      if (AnyLocation(e)) return true;
    }
  }
  return false;
}

TEST(CanonicalizeTest, RenamesByOrderOfDefinition) {
  Program c = Canonicalize(Valid());
  EXPECT_EQ(c.name, "");
  EXPECT_EQ(c.source_name, "");
  EXPECT_EQ(c.symbols[0].name, "s0");
  std::vector<std::string> params;
  for (const Param& p : c.params) params.push_back(p.buffer.name);
  EXPECT_EQ(params, (std::vector<std::string>{"p0", "p1", "p2", "p3"}));
  // The interface keeps the user's names, spelled out.
  EXPECT_EQ(c.symbols[0].user_name, "M");
  std::vector<std::string> user_names;
  for (const Param& p : c.params) user_names.push_back(p.user_name);
  EXPECT_EQ(user_names, (std::vector<std::string>{"A", "B", "C", "alpha"}));
  EXPECT_EQ(c.kernel.block_vars, (std::vector<std::string>{"b0", "b1"}));
  const std::vector<Stmt>& body = c.kernel.body;
  EXPECT_EQ(body[kAllocA].buffer.name, "t0");
  EXPECT_EQ(body[kAllocCnt].buffer.name, "t4");
  EXPECT_EQ(body[kPipe].loop_vars, (std::vector<std::string>{"i0"}));
  EXPECT_EQ(body[kPar].loop_vars, (std::vector<std::string>{"i1", "i2"}));
  // Uses follow their definitions.
  EXPECT_EQ(c.params[0].buffer.shape[0], VarRef("s0"));
  const Stmt& copy_a = body[kPipe].body[kCopyA];
  EXPECT_EQ(copy_a.regions[0].buffer, "p0");
  EXPECT_EQ(copy_a.regions[1].buffer, "t0");
  EXPECT_EQ(copy_a.regions[0].ranges[1].min, Mul(VarRef("i0"), IntImm(32)));
  EXPECT_EQ(body[kPar].body[0].name, "t2");
  EXPECT_EQ(body[kLayout].name, "t0");
  EXPECT_FALSE(AnyLocation(body));
  EXPECT_EQ(c.kernel.loc, Loc{});
  EXPECT_EQ(c.params[0].buffer.loc, Loc{});
  EXPECT_EQ(c.symbols[0].loc, Loc{});
  EXPECT_TRUE(Verify(c).ok()) << Verify(c);
}

TEST(CanonicalizeTest, CosmeticEditsKeepTheCanonicalForm) {
  const Program base = Valid();
  const Program edited = CosmeticallyEdited(base);
  ASSERT_NE(edited, base);
  ASSERT_TRUE(Verify(edited).ok()) << Verify(edited);
  EXPECT_EQ(Canonicalize(edited), Canonicalize(base));
}

TEST(CanonicalizeTest, EveryKindOfNameCanBeRenamed) {
  const Program base = Valid();
  const Program canonical = Canonicalize(base);
  struct Case {
    const char* kind;
    std::string from, to;
  };
  const std::vector<Case> cases = {
      {"symbol", "M", "N_rows"},
      {"tensor parameter", "A", "lhs"},
      {"scalar parameter", "alpha", "scale"},
      {"block variable", "by", "block_row"},
      {"shared buffer", "A_s", "a_tile"},
      {"fragment buffer", "C_l", "accum"},
      {"var buffer", "cnt", "n_done"},
      {"pipelined loop variable", "k", "kk"},
      {"parallel loop variable", "j", "col"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.kind);
    Cosmetic edit;
    edit.rename = {{c.from, c.to}};
    Program renamed = edit(base);
    ASSERT_NE(renamed, base);
    EXPECT_EQ(Canonicalize(renamed), canonical);
  }
}

// The user's names of symbols and parameters are the kernel's interface
// (launch metadata shows them): renaming one changes the canonical form, and
// only in that user name.
TEST(CanonicalizeTest, RenamingTheInterfaceChangesOnlyItsUserName) {
  const Program canonical = Canonicalize(Valid());
  struct Case {
    const char* kind;
    std::string from, to;
  };
  const std::vector<Case> cases = {
      {"symbol", "M", "N_rows"},
      {"tensor parameter", "A", "lhs"},
      {"scalar parameter", "alpha", "max"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.kind);
    Cosmetic edit;
    edit.rename = {{c.from, c.to}};
    edit.user_names = true;
    Program renamed = Canonicalize(edit(Valid()));
    ASSERT_NE(renamed, canonical);
    int changed = 0;
    for (size_t i = 0; i < renamed.symbols.size(); ++i) {
      if (renamed.symbols[i].user_name == c.to) ++changed;
      renamed.symbols[i].user_name = canonical.symbols[i].user_name;
    }
    for (size_t i = 0; i < renamed.params.size(); ++i) {
      if (renamed.params[i].user_name == c.to) ++changed;
      renamed.params[i].user_name = canonical.params[i].user_name;
    }
    EXPECT_EQ(changed, 1);
    EXPECT_EQ(renamed, canonical);
  }
}

TEST(CanonicalizeTest, SimplifiesExpressionsAfterRenaming) {
  Program p = Valid();
  // by*128 + (i + 1) - 1: terms are ordered by canonical names, so renaming
  // `by` to `zz` (which sorts after `i`) does not change the result.
  Stmt& store = ParStore(p);
  store.indices[0] = Binary(BinOp::kSub, Add(Mul(V("by"), I(0)), Add(V("i"), I(1))), I(1));
  Program c = Canonicalize(p);
  EXPECT_EQ(c.kernel.body[kPar].body[0].indices[0], VarRef("i1"));
  Cosmetic edit;
  edit.rename = {{"by", "zz"}, {"i", "a"}};
  EXPECT_EQ(Canonicalize(edit(p)), c);
  // Grid extent (M + 127) // 128 stays symbolic but simplified.
  EXPECT_EQ(c.kernel.grid[0], IntImm(2));
}

TEST(CanonicalizeTest, ThreadIrRenamesAddressesAndKeepsIntrinsics) {
  Program c = Canonicalize(ThreadProgram());
  const std::vector<Stmt>& body = c.kernel.body;
  EXPECT_EQ(body[kAllocFrag].buffer.name, "t5");
  const Stmt& ld = body[kLdmatrix];
  EXPECT_EQ(ld.name, "ldmatrix_x4");
  EXPECT_EQ(ld.indices[0], Address("t5", kF16, I(0)));
  EXPECT_EQ(ld.indices[1].name, "t0");
  EXPECT_EQ(body[kAtomicAdd].indices[0], Address("p2", kF16, V("b0")));
  EXPECT_EQ(body[kWait].indices[0], I(0, DType::kInt64)); // a literal stays a literal
  EXPECT_FALSE(AnyLocation(body));
  EXPECT_TRUE(Verify(c).ok()) << Verify(c);

  // Cosmetic edits, including a buffer named like an intrinsic, keep the
  // canonical form: the intrinsic is not renamed with the buffer.
  Cosmetic edit;
  edit.rename = {{"A_frag", "sync_threads"}, {"A_s", "ldmatrix_x4"}, {"bx", "col"}};
  edit.line_shift = 7;
  Program edited = edit(ThreadProgram());
  ASSERT_TRUE(Verify(edited).ok()) << Verify(edited);
  EXPECT_EQ(Canonicalize(edited), c);
  EXPECT_EQ(Canonicalize(CosmeticallyEdited(ThreadProgram())), c);
}

TEST(CanonicalizeTest, SimplifiesCallArguments) {
  Program p = ThreadProgram();
  // &A_frag[(bx + 1) * 2 - bx * 2 - 2] is &A_frag[0].
  CallAt(p, kLdmatrix).indices[0].args[0] = Binary(
      BinOp::kSub, Binary(BinOp::kSub, Mul(Add(V("bx"), I(1)), I(2)), Mul(V("bx"), I(2))), I(2));
  CallAt(p, kAtomicAdd).indices[1] =
      Binary(BinOp::kMul, Load("A_frag", kF16, {Add(I(0), I(1))}), FloatImm(1.0, kF16));
  EXPECT_EQ(Canonicalize(p), Canonicalize(ThreadProgram()));

  // The simplify pass does the same, keeping locations.
  ASSERT_TRUE(passes::RunPasses(p, {"simplify", "verify"}).ok());
  EXPECT_EQ(CallAt(p, kLdmatrix).indices[0], Address("A_frag", kF16, I(0, kI32), L(26, 26)));
  EXPECT_EQ(CallAt(p, kAtomicAdd).indices[1], Load("A_frag", kF16, {I(1)}));
}

TEST(CanonicalizeTest, Idempotent) {
  for (const Program& p : {Valid(), CosmeticallyEdited(Valid()), ThreadProgram()}) {
    Program once = Canonicalize(p);
    EXPECT_EQ(Canonicalize(once), once);
  }
}

TEST(CanonicalizeTest, Passes) {
  Program p = Valid();
  ASSERT_TRUE(passes::RunPasses(p, {"verify", "simplify", "canonicalize", "verify"}).ok());
  EXPECT_EQ(p, Canonicalize(Valid()));

  Program q = Valid();
  ParStore(q).indices[1] = Binary(BinOp::kSub, Add(V("j"), I(5)), I(5), L(18, 20));
  ASSERT_TRUE(passes::RunPasses(q, {"simplify"}).ok());
  EXPECT_EQ(ParStore(q).indices[1], V("j", DType::kInt32, L(18, 20)));
  EXPECT_EQ(ParStore(q).loc, L(18, 13)) << "simplify keeps statement locations";

  Program bad = Valid();
  bad.kernel.threads = {0};
  absl::Status status = passes::RunPasses(bad, {"verify"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

} // namespace
} // namespace kiln::ir
