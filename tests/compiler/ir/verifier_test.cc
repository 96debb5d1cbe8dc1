#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/verifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/compiler/ir/gemm_program.h"

namespace kiln::ir {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace ::kiln::ir::test; // NOLINT: the test program and its builders

TEST(VerifierTest, ValidProgramPasses) {
  Program p = Valid();
  EXPECT_TRUE(Verify(p).ok()) << Verify(p);
}

TEST(VerifierTest, SymbolicExtentsAreAccepted) {
  Program p = Valid();
  // Unknown extents (a tail tile) are not provably different from 128.
  Pipe(p, kCopyA).regions[0].ranges[0].extent =
      Binary(BinOp::kMin, I(128), Binary(BinOp::kSub, V("M"), Mul(V("by"), I(128))));
  EXPECT_TRUE(Verify(p).ok()) << Verify(p);
  // Unit dimensions are skipped when matching: A[r, 0:32] -> A_s[0:1, 0:32].
  Program q = Valid();
  q.kernel.body[kAllocA].buffer.shape = {I(1), I(32)};
  Pipe(q, kCopyA).regions[0].ranges[0].extent = I(1);
  Pipe(q, kCopyA).regions[1] = Whole("A_s", {1, 32});
  Pipe(q, kGemm).regions[0] = Whole("A_s", {1, 32});
  q.kernel.body[kPipe].body.pop_back(); // the gemm no longer fits
  EXPECT_TRUE(Verify(q).ok()) << Verify(q);
}

struct Case {
  std::string name;
  std::function<void(Program&)> mutate;
  std::string where;   // "line:col"
  std::string message; // a substring of the message
};

std::vector<Case> Cases() {
  return {
      {"duplicate buffer", [](Program& p) { p.kernel.body[kAllocB].buffer.name = "A_s"; }, "8:9",
       "duplicate name 'A_s' (first defined at 7:9)"},
      {"loop variable shadows a symbol", [](Program& p) { p.kernel.body[kPipe].loop_vars = {"M"}; },
       "13:9", "duplicate name 'M' (first defined at 1:1)"},
      {"invalid identifier", [](Program& p) { p.kernel.body[kAllocR].buffer.name = "2r"; }, "10:9",
       "buffer name '2r' is not a valid identifier"},
      {"reserved word", [](Program& p) { p.kernel.block_vars[0] = "for"; }, "6:5",
       "block variable name 'for' is reserved"},
      {"duplicate user name", [](Program& p) { p.params[2].user_name = "A"; }, "4:1",
       "parameter 'C' and parameter 'A' have the same user name 'A'"},
      {"user name of a symbol shared", [](Program& p) { p.params[3].user_name = "M"; }, "5:1",
       "parameter 'alpha' and symbol 'M' have the same user name 'M'"},
      {"user name not an identifier", [](Program& p) { p.params[0].user_name = "a b"; }, "2:1",
       "parameter 'A': its user name is not a valid identifier"},
      {"undefined name",
       [](Program& p) { Pipe(p, kCopyA).regions[0].ranges[1].min.args[0].name = "kk"; }, "14:30",
       "undefined name 'kk'"},
      {"loop variable outside its loop",
       [](Program& p) { p.kernel.body[kIf].cond.args[0].args[0].name = "k"; }, "20:12",
       "'k' is not in scope here (defined at 13:9)"},
      {"buffer used before its allocation",
       [](Program& p) { std::swap(p.kernel.body[kAllocR], p.kernel.body[kReduce]); }, "19:9",
       "'R' is not in scope here"},
      {"load with too few indices",
       [](Program& p) { ParStore(p).value.args[0].args[0].args.pop_back(); }, "18:13",
       "load of 'C_l' has 1 index but the buffer has 2 dimensions"},
      {"store with too many indices", [](Program& p) { ParStore(p).indices.push_back(I(0)); },
       "18:13", "store to 'C_l' has 3 indices but the buffer has 2 dimensions"},
      {"region rank", [](Program& p) { Pipe(p, kCopyA).regions[0].ranges.pop_back(); }, "14:13",
       "copy: source region of 'A' has 1 range but the buffer has 2 dimensions"},
      {"binary operand dtypes",
       [](Program& p) { ParStore(p).value.args[0].args[1] = FloatImm(0.0, kF16); }, "18:13",
       "operands of 'max' have different dtypes float32 and float16"},
      {"if condition not bool", [](Program& p) { p.kernel.body[kIf].cond = Mul(V("by"), I(128)); },
       "20:9", "if condition must be bool, got int32"},
      {"logical operator on integers",
       [](Program& p) { p.kernel.body[kIf].cond = Binary(BinOp::kAnd, V("by"), I(1), L(20, 15)); },
       "20:15", "operands of '&&' must be bool, got int32"},
      {"select condition not bool",
       [](Program& p) {
         ParStore(p).value = Select(V("i"), FloatImm(1.0), FloatImm(0.0), L(18, 25));
       },
       "18:25", "select condition must be bool, got int32"},
      {"store value dtype", [](Program& p) { ParStore(p).value = FloatImm(1.0, kF16); }, "18:13",
       "store to 'C_l': value has dtype float16 but 'C_l' holds float32"},
      {"zero extent", [](Program& p) { p.kernel.body[kAllocA].buffer.shape[0] = I(0); }, "7:9",
       "buffer 'A_s' has extent 0 in dimension 0; extents must be positive"},
      {"float shape", [](Program& p) { p.kernel.body[kAllocA].buffer.shape[1] = FloatImm(32.0); },
       "7:9", "extent of 'A_s' must be an integer, got float32"},
      {"gemm accumulator in shared",
       [](Program& p) { p.kernel.body[kAllocC].buffer.scope = Scope::kShared; }, "16:13",
       "gemm: operand C ('C_l') is in shared scope; it must be in fragment or local scope"},
      {"gemm operand in global",
       [](Program& p) {
         Pipe(p, kGemm).regions[0] = Whole("A", {1, 512});
       },
       "16:13", "gemm: operand A ('A') is in global scope; it must be in shared or fragment scope"},
      {"gemm K mismatch", [](Program& p) { Pipe(p, kGemm).transpose_b = true; }, "16:13",
       "gemm: A has K = 32 but B has K = 128"},
      {"gemm k_pack", [](Program& p) { Pipe(p, kGemm).k_pack = 0; }, "16:13",
       "gemm: k_pack must be >= 1, got 0"},
      {"copy extent mismatch",
       [](Program& p) { Pipe(p, kCopyA).regions[0].ranges[1].extent = I(64); }, "14:13",
       "copy: source extent 64 does not match destination extent 32 in dimension 1"},
      {"copy symbolic extent provably different",
       [](Program& p) {
         Pipe(p, kCopyA).regions[0].ranges[0].extent = Add(V("M"), I(1));
         Pipe(p, kCopyA).regions[1] = Reg("A_s", {{I(0), V("M")}, {I(0), I(32)}});
       },
       "14:13", "copy: source extent M + 1 does not match destination extent M in dimension 0"},
      {"copy non-unit dimension count",
       [](Program& p) { Pipe(p, kCopyA).regions[1] = Whole("R", {128}); }, "14:13",
       "copy: source has 2 non-unit extents [128, 32] but destination has 1 [128]"},
      {"copy within one shared buffer",
       [](Program& p) {
         Pipe(p, kCopyA).regions[0] = Whole("A_s", {128, 32});
       },
       "14:13", "copy: source and destination are the same shared buffer 'A_s'"},
      {"region out of bounds", [](Program& p) { Pipe(p, kCopyA).regions[1].ranges[1].min = I(16); },
       "14:13", "copy: destination region [16, 48) of 'A_s' exceeds its extent 32 in dimension 1"},
      {"reduce dim out of range", [](Program& p) { p.kernel.body[kReduce].dim = 2; }, "19:9",
       "reduce: dim 2 is out of range for the 2 dimensions of source 'C_l'"},
      {"reduce from global",
       [](Program& p) {
         p.kernel.body[kReduce].regions[0] = Reg("C", {{I(0), I(128)}, {I(0), I(128)}});
       },
       "19:9", "reduce: source 'C' is in global scope; it must be in fragment or shared scope"},
      {"reduce shape",
       [](Program& p) {
         p.kernel.body[kAllocR].buffer.shape = {I(64)};
         p.kernel.body[kReduce].regions[1] = Whole("R", {64});
       },
       "19:9", "reduce: source extent 128 does not match destination extent 64 in dimension 0"},
      {"fill value dtype", [](Program& p) { p.kernel.body[kFill].value = FloatImm(0.0, kF16); },
       "12:9", "fill: value has dtype float16 but 'C_l' holds float32"},
      {"parallel loop without variables",
       [](Program& p) {
         p.kernel.body[kPar].loop_vars.clear();
         p.kernel.body[kPar].extents.clear();
       },
       "17:9", "a parallel loop needs at least one variable, got 0"},
      {"serial loop with two variables",
       [](Program& p) {
         p.kernel.body[kPipe].loop_vars = {"k", "k2"};
         p.kernel.body[kPipe].extents = {I(16), I(2)};
       },
       "13:9", "a pipelined loop takes exactly one variable, got 2"},
      {"negative num_stages", [](Program& p) { p.kernel.body[kPipe].num_stages = -1; }, "13:9",
       "pipelined loop: num_stages must be >= 0, got -1"},
      {"stages on a serial loop",
       [](Program& p) { p.kernel.body[kPipe].for_kind = ForKind::kSerial; }, "13:9",
       "num_stages, order and stage apply only to pipelined loops"},
      {"four grid dimensions",
       [](Program& p) {
         p.kernel.grid.push_back(I(1));
         p.kernel.grid.push_back(I(1));
         p.kernel.block_vars.push_back("bz");
         p.kernel.block_vars.push_back("bw");
       },
       "6:5", "the kernel grid must have 1 to 3 dimensions, got 4"},
      {"block variables do not match grid", [](Program& p) { p.kernel.block_vars.pop_back(); },
       "6:5", "the kernel binds 1 block variable but its grid has 2 dimensions"},
      {"too many threads",
       [](Program& p) {
         p.kernel.threads = {64, 32};
       },
       "6:5", "more than 1024 threads per block (64 x 32)"},
      {"zero threads", [](Program& p) { p.kernel.threads = {0}; }, "6:5",
       "thread extent 0 must be positive"},
      {"tensor parameter in shared scope",
       [](Program& p) { p.params[1].buffer.scope = Scope::kShared; }, "3:1",
       "tensor parameter 'B' must be in global scope, not shared"},
      {"symbol used with another dtype",
       [](Program& p) {
         p.kernel.body[kIf].cond =
             Binary(BinOp::kLt, I(0, DType::kInt64), V("M", DType::kInt64, L(20, 20)));
       },
       "20:20", "'M' is used as int64 but is declared int32"},
      {"tensor used as a scalar",
       [](Program& p) { ParStore(p).value.args[1] = V("A", kF32, L(18, 40)); }, "18:40",
       "'A' is a tensor; index it as A[...]"},
      {"thread_idx out of range",
       [](Program& p) { ParStore(p).indices[0] = ThreadIdx(1, L(18, 15)); }, "18:15",
       "thread_idx(1) is out of range: the kernel has 1 thread dimension"},
      {"use_swizzle panel", [](Program& p) { p.kernel.body[kSwizzle].panel_size = 0; }, "23:9",
       "use_swizzle: panel size must be positive, got 0"},
      {"var buffer shape", [](Program& p) { p.kernel.body[kAllocCnt].buffer.shape = {I(2)}; },
       "11:9", "var buffer 'cnt' must have shape [1]"},
      {"annotate unknown buffer", [](Program& p) { p.kernel.body[kLayout].name = "Q"; }, "22:9",
       "undefined name 'Q'"},
      // A store without its value (a wire IR store, or a pass's, whose
      // has_value was left false): consumers that read the value only when
      // set would drop it (a missing barrier before the loop that reads it).
      {"store without a value", [](Program& p) { ParStore(p).has_value = false; }, "18:13",
       "store to 'C_l' has no value"},
      {"expression nested too deeply",
       [](Program& p) {
         Expr e = V("i");
         for (int d = 0; d < 300; ++d) e = Add(std::move(e), I(1));
         ParStore(p).indices[0] = std::move(e);
       },
       "18:13", "expression is nested too deeply"},
  };
}

TEST(VerifierTest, InvalidPrograms) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    Program p = Valid();
    c.mutate(p);
    absl::Status status = Verify(p);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), StartsWith("gemm.py:" + c.where + ": "));
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

// --- Thread IR ------------------------------------------------------------------

TEST(VerifierTest, ThreadIrPasses) {
  Program p = ThreadProgram();
  EXPECT_TRUE(Verify(p).ok()) << Verify(p);
}

std::vector<Case> ThreadCases() {
  return {
      {"unknown intrinsic", [](Program& p) { CallAt(p, kLdmatrix).name = "ldmatrix_x3"; }, "26:9",
       "unknown intrinsic 'ldmatrix_x3'"},
      {"tile op name is not an intrinsic", [](Program& p) { CallAt(p, kSync).name = "copy"; },
       "25:9", "unknown intrinsic 'copy'"},
      {"too many arguments", [](Program& p) { CallAt(p, kSync).indices.push_back(I(0)); }, "25:9",
       "'sync_threads' takes 0 arguments, got 1"},
      {"too few arguments", [](Program& p) { CallAt(p, kCpAsync).indices.pop_back(); }, "27:9",
       "'cp_async_16' takes 3 arguments, got 2"},
      {"value where an address is expected",
       [](Program& p) {
         CallAt(p, kLdmatrix).indices[1] = Load("A_s", kF16, {I(0), I(0)});
       },
       "26:9", "argument 2 of 'ldmatrix_x4' must be an address (&BUF[i])"},
      {"address where a value is expected",
       [](Program& p) { CallAt(p, kAtomicAdd).indices[1] = Address("A_frag", kF16, I(1)); }, "30:9",
       "argument 2 of 'atomic_add' must be a value, not an address"},
      {"variable where an integer literal is expected",
       [](Program& p) { CallAt(p, kWait).indices[0] = V("bx"); }, "28:9",
       "argument 1 of 'cp_async_wait' must be an integer literal"},
      {"address where an integer literal is expected",
       [](Program& p) { CallAt(p, kWait).indices[0] = Address("A_frag", kF16, I(0)); }, "28:9",
       "argument 1 of 'cp_async_wait' must be an integer literal"},
      {"bool literal where an integer literal is expected",
       [](Program& p) { CallAt(p, kShfl).indices[2] = BoolImm(true); }, "29:9",
       "argument 3 of 'shfl_xor' must be an integer literal"},
      {"ill-typed value argument",
       [](Program& p) {
         CallAt(p, kShfl).indices[1] = Load("R", kF32, {I(1), I(2)}, L(29, 30));
       },
       "29:30", "load of 'R' has 2 indices but the buffer has 1 dimension"},
      {"address of an undefined buffer",
       [](Program& p) { CallAt(p, kLdmatrix).indices[0].name = "Q"; }, "26:26",
       "undefined name 'Q'"},
      {"address of a buffer out of scope",
       [](Program& p) { std::swap(p.kernel.body[kAllocFrag], p.kernel.body[kLdmatrix]); }, "26:26",
       "'A_frag' is not in scope here"},
      {"address of a scalar",
       [](Program& p) {
         CallAt(p, kLdmatrix).indices[0] = Address("alpha", kF32, I(0), L(26, 26));
       },
       "26:26", "address: 'alpha' is not a buffer"},
      {"address with two indices",
       [](Program& p) { CallAt(p, kLdmatrix).indices[1].args.push_back(I(0)); }, "26:38",
       "address of 'A_s' takes 1 flat element index, got 2"},
      {"address without an index", [](Program& p) { CallAt(p, kLdmatrix).indices[0].args.clear(); },
       "26:26", "address of 'A_frag' takes 1 flat element index, got 0"},
      {"address with a float index",
       [](Program& p) { CallAt(p, kLdmatrix).indices[0].args[0] = FloatImm(0.0); }, "26:26",
       "index of '&A_frag' must be an integer, got float32"},
      {"address with the wrong dtype",
       [](Program& p) { CallAt(p, kLdmatrix).indices[0].dtype = kF32; }, "26:26",
       "address of 'A_frag' has dtype float32 but the buffer holds float16"},
      {"address in a store",
       [](Program& p) { ParStore(p).value = Address("C_l", kF32, I(0), L(18, 20)); }, "18:20",
       "an address (&C_l[...]) is only valid as an argument of a call statement"},
      {"address nested in a value argument",
       [](Program& p) {
         CallAt(p, kAtomicAdd).indices[1] = Binary(BinOp::kAdd, Load("A_frag", kF16, {I(1)}),
                                                   Address("A_frag", kF16, I(2)), L(30, 35));
       },
       "30:35", "an address (&A_frag[...]) is only valid as an argument of a call statement"},
      {"address nested in an address index",
       [](Program& p) {
         CallAt(p, kLdmatrix).indices[0].args[0] = Address("A_frag", kF16, I(2), L(26, 33));
       },
       "26:33", "an address (&A_frag[...]) is only valid as an argument of a call statement"},
  };
}

TEST(VerifierTest, InvalidThreadIr) {
  for (const Case& c : ThreadCases()) {
    SCOPED_TRACE(c.name);
    Program p = ThreadProgram();
    c.mutate(p);
    absl::Status status = Verify(p);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), StartsWith("gemm.py:" + c.where + ": "));
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

TEST(VerifierTest, UnknownLocationPrintsFileOnly) {
  Program p = Valid();
  p.kernel.loc = {};
  p.kernel.threads = {2048};
  absl::Status status = Verify(p);
  EXPECT_THAT(std::string(status.message()), StartsWith("gemm.py: the kernel asks for more"));
}

TEST(VerifierTest, DeeplyNestedStatementsAreAnError) {
  Program p = Valid();
  Stmt s = Loop(ForKind::kSerial, {"x0"}, {I(2)}, {}, L(30, 1));
  for (int d = 1; d < 300; ++d) {
    s = Loop(ForKind::kSerial, {"x" + std::to_string(d)}, {I(2)}, {std::move(s)}, L(30, 1));
  }
  p.kernel.body.push_back(std::move(s));
  absl::Status status = Verify(p);
  EXPECT_THAT(std::string(status.message()), HasSubstr("nested too deeply"));
}

} // namespace
} // namespace kiln::ir
