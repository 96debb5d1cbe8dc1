#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/printer.h"
#include "gtest/gtest.h"

namespace kiln::ir {
namespace {

Expr X() { return VarRef("x"); }
Expr Y() { return VarRef("y"); }
Expr Z() { return VarRef("z"); }
Expr P() { return VarRef("p", DType::kBool); }
Expr Q() { return VarRef("q", DType::kBool); }
Expr R() { return VarRef("r", DType::kBool); }
Expr I(int64_t v) { return IntImm(v); }
Expr F(double v) { return FloatImm(v); }
Expr Add(Expr a, Expr b) { return Binary(BinOp::kAdd, std::move(a), std::move(b)); }
Expr Sub(Expr a, Expr b) { return Binary(BinOp::kSub, std::move(a), std::move(b)); }
Expr Mul(Expr a, Expr b) { return Binary(BinOp::kMul, std::move(a), std::move(b)); }

struct ExprCase {
  std::string name;
  Expr expr;
  std::string text;
};

TEST(PrintExprTest, Table) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<ExprCase> cases = {
      // Literals of every form.
      {"int32", I(5), "5"},
      {"negative int32", I(-5), "-5"},
      {"int64 min", IntImm(std::numeric_limits<int64_t>::min(), DType::kInt64),
       "int64(-9223372036854775808)"},
      {"true", BoolImm(true), "true"},
      {"false", BoolImm(false), "false"},
      {"odd bool", IntImm(2, DType::kBool), "bool(2)"},
      {"float half", F(0.5), "0.5"},
      {"float whole", F(1.0), "1.0"},
      {"float negative", F(-2.25), "-2.25"},
      {"float big", F(1e20), "1e+20"},
      {"float small", F(2e-05), "2e-05"},
      {"float tenth", F(0.1), "0.1"},
      {"inf", F(inf), "inf"},
      {"-inf", F(-inf), "-inf"},
      {"nan", F(std::nan("")), "nan"},
      {"float16", FloatImm(0.5, DType::kFloat16), "float16(0.5)"},
      {"bfloat16 -inf", FloatImm(-inf, DType::kBFloat16), "bfloat16(-inf)"},
      {"float64", FloatImm(3.0, DType::kFloat64), "float64(3.0)"},
      {"int64", IntImm(3, DType::kInt64), "int64(3)"},
      {"uint8", IntImm(255, DType::kUInt8), "uint8(255)"},
      {"int-valued float32", IntImm(3, DType::kFloat32), "float32(3)"},
      {"float-valued int32", FloatImm(1.0, DType::kInt32), "int32(1.0)"},
      // Unary minus versus negative literals.
      {"neg literal", Unary(UnOp::kNeg, I(5)), "-(5)"},
      {"neg negative literal", Unary(UnOp::kNeg, I(-5)), "-(-5)"},
      {"neg var", Unary(UnOp::kNeg, X()), "-(x)"},
      {"neg sum", Unary(UnOp::kNeg, Add(X(), Y())), "-(x + y)"},
      {"minus negative literal", Sub(X(), I(-5)), "x - -5"},
      {"times neg", Mul(X(), Unary(UnOp::kNeg, Y())), "x * -(y)"},
      {"not", Unary(UnOp::kNot, P()), "!p"},
      {"not cmp", Unary(UnOp::kNot, Binary(BinOp::kLt, X(), Y())), "!(x < y)"},
      {"bitnot", Unary(UnOp::kBitNot, X()), "~x"},
      {"bitnot negative literal", Unary(UnOp::kBitNot, I(-1)), "~-1"},
      // Precedence and associativity.
      {"mul binds tighter", Add(X(), Mul(Y(), Z())), "x + y * z"},
      {"parens for add under mul", Mul(Add(X(), Y()), Z()), "(x + y) * z"},
      {"left assoc", Sub(Sub(X(), Y()), Z()), "x - y - z"},
      {"right nested", Sub(X(), Sub(Y(), Z())), "x - (y - z)"},
      {"div mod floordiv",
       Binary(BinOp::kFloorMod, Binary(BinOp::kFloorDiv, X(), Y()), Binary(BinOp::kDiv, Y(), Z())),
       "x // y % (y / z)"},
      {"shift vs add", Binary(BinOp::kShl, X(), Add(Y(), I(1))), "x << y + 1"},
      {"shift under add", Add(Binary(BinOp::kShr, X(), Y()), I(1)), "(x >> y) + 1"},
      {"cmp under eq",
       Binary(BinOp::kEq, Binary(BinOp::kLt, X(), Y()), Binary(BinOp::kGe, Y(), X())),
       "x < y == y >= x"},
      {"ne le gt", Binary(BinOp::kNe, Binary(BinOp::kLe, X(), Y()), Binary(BinOp::kGt, Z(), X())),
       "x <= y != z > x"},
      {"and or", Binary(BinOp::kOr, Binary(BinOp::kAnd, P(), Q()), R()), "p && q || r"},
      {"or under and", Binary(BinOp::kAnd, P(), Binary(BinOp::kOr, Q(), R())), "p && (q || r)"},
      {"bit ops",
       Binary(BinOp::kBitOr, Binary(BinOp::kBitAnd, X(), Y()), Binary(BinOp::kBitXor, Z(), X())),
       "x & y | z ^ x"},
      {"bitor under bitand", Binary(BinOp::kBitAnd, X(), Binary(BinOp::kBitOr, Y(), Z())),
       "x & (y | z)"},
      {"xor under and", Binary(BinOp::kBitAnd, Binary(BinOp::kBitXor, X(), Y()), Z()),
       "(x ^ y) & z"},
      {"min max", Add(Binary(BinOp::kMin, X(), Y()), Binary(BinOp::kMax, I(0), Z())),
       "min(x, y) + max(0, z)"},
      {"min of sum", Binary(BinOp::kMin, Add(X(), Y()), Z()), "min(x + y, z)"},
      // Calls, casts, select, loads, thread_idx.
      {"pow", Call(Intrinsic::kPow, {F(2.0), Cast(DType::kFloat32, X())}),
       "pow(2.0, cast<float32>(x))"},
      {"cast", Cast(DType::kFloat16, Add(X(), I(1))), "cast<float16>(x + 1)"},
      {"select", Select(Binary(BinOp::kLt, X(), I(4)), F(1.0), F(0.0)), "select(x < 4, 1.0, 0.0)"},
      {"load", Load("A", DType::kFloat16, {Add(Mul(VarRef("bx"), I(64)), X()), I(3)}),
       "A[bx * 64 + x, 3]"},
      {"thread_idx", Add(ThreadIdx(0), ThreadIdx(2)), "thread_idx(0) + thread_idx(2)"},
      // Thread IR: an address (valid only as a call argument, printed anyway).
      {"address", Address("A_shared", DType::kFloat16, Add(Mul(X(), I(8)), Y())),
       "&A_shared[x * 8 + y]"},
  };
  const std::vector<std::pair<Intrinsic, std::string>> intrinsics = {
      {Intrinsic::kExp, "exp"},     {Intrinsic::kExp2, "exp2"},   {Intrinsic::kLog, "log"},
      {Intrinsic::kLog2, "log2"},   {Intrinsic::kSqrt, "sqrt"},   {Intrinsic::kRsqrt, "rsqrt"},
      {Intrinsic::kAbs, "abs"},     {Intrinsic::kTanh, "tanh"},   {Intrinsic::kFloor, "floor"},
      {Intrinsic::kCeil, "ceil"},   {Intrinsic::kSin, "sin"},     {Intrinsic::kCos, "cos"},
      {Intrinsic::kRound, "round"}, {Intrinsic::kTrunc, "trunc"}, {Intrinsic::kSigmoid, "sigmoid"},
  };
  for (const auto& [fn, name] : intrinsics) {
    cases.push_back({name, Call(fn, {Load("X", DType::kFloat32, {X()})}), name + "(X[x])"});
  }
  for (const ExprCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(PrintExpr(c.expr), c.text);
  }
}

TEST(PrintExprTest, CorruptTreesDoNotCrash) {
  Expr bad = Binary(BinOp::kAdd, X(), Y());
  bad.args.pop_back();
  EXPECT_EQ(PrintExpr(bad), "x + ?");
}

Stmt Alloc(std::string name, Scope scope, DType dtype, std::vector<Expr> shape) {
  Stmt s;
  s.kind = StmtKind::kAlloc;
  s.buffer.name = std::move(name);
  s.buffer.scope = scope;
  s.buffer.dtype = dtype;
  s.buffer.shape = std::move(shape);
  return s;
}

Region Reg(std::string buffer, std::vector<Range> ranges) {
  Region r;
  r.buffer = std::move(buffer);
  r.ranges = std::move(ranges);
  return r;
}

Program SmallProgram() {
  Program p;
  p.name = "scale";
  p.attrs["fast_math"] = "true";
  p.attrs["tl.note"] = "a \"quoted\"\tvalue\n";
  p.symbols.push_back(Symbol{"n", DType::kInt32, {}});
  Param x;
  x.buffer.name = "X";
  x.buffer.dtype = DType::kFloat32;
  x.buffer.shape = {VarRef("n")};
  p.params.push_back(x);
  Param alpha;
  alpha.is_scalar = true;
  alpha.buffer.name = "alpha";
  alpha.buffer.dtype = DType::kFloat32;
  p.params.push_back(alpha);
  Param y = x;
  y.buffer.name = "Y";
  y.is_output = true;
  p.params.push_back(y);
  p.kernel.grid = {Binary(BinOp::kFloorDiv, Add(VarRef("n"), I(127)), I(128))};
  p.kernel.block_vars = {"bx"};
  p.kernel.threads = {128};
  Stmt loop;
  loop.kind = StmtKind::kFor;
  loop.for_kind = ForKind::kParallel;
  loop.loop_vars = {"i"};
  loop.extents = {I(128)};
  Stmt guard;
  guard.kind = StmtKind::kIf;
  Expr idx = Add(Mul(VarRef("bx"), I(128)), VarRef("i"));
  guard.cond = Binary(BinOp::kLt, idx, VarRef("n"));
  Stmt store;
  store.kind = StmtKind::kStore;
  store.name = "Y";
  store.indices = {idx};
  store.has_value = true;
  store.value = Mul(Load("X", DType::kFloat32, {idx}), VarRef("alpha", DType::kFloat32));
  guard.body.push_back(store);
  loop.body.push_back(guard);
  p.kernel.body.push_back(loop);
  return p;
}

TEST(PrintProgramTest, Layout) {
  EXPECT_EQ(PrintProgram(SmallProgram()), "program @scale {\n"
                                          "  attr fast_math = \"true\"\n"
                                          "  attr tl.note = \"a \\\"quoted\\\"\\tvalue\\n\"\n"
                                          "  sym n: int32\n"
                                          "  param X: global float32[n]\n"
                                          "  param alpha: scalar float32\n"
                                          "  param Y: global float32[n] out\n"
                                          "  kernel grid((n + 127) // 128) threads(128) as (bx) {\n"
                                          "    for i in parallel(128) {\n"
                                          "      if bx * 128 + i < n {\n"
                                          "        Y[bx * 128 + i] = X[bx * 128 + i] * alpha\n"
                                          "      }\n"
                                          "    }\n"
                                          "  }\n"
                                          "}\n");
}

TEST(PrintProgramTest, EveryStatementForm) {
  Program p;
  p.name = "all";
  p.kernel.grid = {I(4), I(2), I(1)};
  p.kernel.block_vars = {"bx", "by", "bz"};
  p.kernel.threads = {32, 4, 1};
  std::vector<Stmt>& b = p.kernel.body;
  b.push_back(Alloc("S", Scope::kSharedDyn, DType::kFloat16, {I(64), I(32)}));
  Stmt v = Alloc("acc", Scope::kVar, DType::kFloat32, {I(1)});
  v.buffer.has_init = true;
  v.buffer.init = F(0.0);
  b.push_back(v);
  Stmt gemm;
  gemm.kind = StmtKind::kGemm;
  gemm.regions = {Reg("S", {{I(0), I(64)}, {I(0), I(32)}}),
                  Reg("S", {{I(0), I(64)}, {I(0), I(32)}}),
                  Reg("C", {{I(0), I(64)}, {I(0), I(64)}})};
  gemm.transpose_b = true;
  gemm.k_pack = 2;
  gemm.policy = GemmPolicy::kFullCol;
  b.push_back(gemm);
  Stmt red;
  red.kind = StmtKind::kReduce;
  red.reduce_kind = ReduceKind::kAbsMax;
  red.regions = {Reg("C", {{I(0), I(64)}, {I(0), I(64)}}), Reg("M", {{I(0), I(64)}})};
  red.dim = 1;
  red.clear = false;
  b.push_back(red);
  Stmt at1;
  at1.kind = StmtKind::kAtomic;
  at1.atomic_op = AtomicOp::kMax;
  at1.regions = {Reg("G", {{VarRef("bx"), I(1)}})};
  at1.has_value = true;
  at1.value = F(1.5);
  b.push_back(at1);
  Stmt at2;
  at2.kind = StmtKind::kAtomic;
  at2.atomic_op = AtomicOp::kMin;
  at2.regions = {Reg("G", {{I(0), I(64)}}), Reg("M", {{I(0), I(64)}})};
  b.push_back(at2);
  Stmt pipe;
  pipe.kind = StmtKind::kFor;
  pipe.for_kind = ForKind::kPipelined;
  pipe.loop_vars = {"k"};
  pipe.extents = {I(8)};
  pipe.num_stages = 3;
  pipe.order = {0, 1, -1};
  pipe.stage = {0, 0, 1};
  Stmt unroll;
  unroll.kind = StmtKind::kFor;
  unroll.for_kind = ForKind::kUnroll;
  unroll.loop_vars = {"u"};
  unroll.extents = {I(2)};
  pipe.body.push_back(unroll);
  b.push_back(pipe);
  Stmt iff;
  iff.kind = StmtKind::kIf;
  iff.cond = BoolImm(true);
  Stmt ann;
  ann.kind = StmtKind::kAnnotateLayout;
  ann.name = "S";
  ann.layout = "swizzled";
  iff.body.push_back(ann);
  Stmt sw;
  sw.kind = StmtKind::kUseSwizzle;
  sw.panel_size = 8;
  sw.swizzle_order = "col";
  sw.enable = false;
  iff.else_body.push_back(sw);
  b.push_back(iff);
  EXPECT_EQ(PrintProgram(p),
            "program @all {\n"
            "  kernel grid(4, 2, 1) threads(32, 4, 1) as (bx, by, bz) {\n"
            "    alloc S: shared.dyn float16[64, 32]\n"
            "    alloc acc: var float32[1] = 0.0\n"
            "    gemm S[0 +: 64, 0 +: 32], S[0 +: 64, 0 +: 32], C[0 +: 64, 0 +: 64] "
            "transpose_a=false transpose_b=true clear_accum=false k_pack=2 policy=full_col\n"
            "    reduce_absmax C[0 +: 64, 0 +: 64] -> M[0 +: 64] dim=1 clear=false\n"
            "    atomic_max G[bx +: 1], 1.5\n"
            "    atomic_min G[0 +: 64] <- M[0 +: 64]\n"
            "    for k in pipelined(8) stages=3 order=[0, 1, -1] stage=[0, 0, 1] {\n"
            "      for u in unroll(2) {\n"
            "      }\n"
            "    }\n"
            "    if true {\n"
            "      annotate_layout S swizzled\n"
            "    } else {\n"
            "      use_swizzle panel=8 order=col enable=false\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(PrintProgramTest, ThreadIrCalls) {
  Program p;
  p.name = "lowered";
  p.kernel.grid = {I(1)};
  p.kernel.block_vars = {"bx"};
  p.kernel.threads = {32};
  Expr tid = ThreadIdx(0);
  std::vector<Stmt>& b = p.kernel.body;
  b.push_back(CallStmt("sync_threads", {}));
  b.push_back(CallStmt("ldmatrix_x4", {Address("A_frag", DType::kFloat16, I(0)),
                                       Address("A_shared", DType::kFloat16, Mul(tid, I(8)))}));
  b.push_back(CallStmt("cp_async_wait", {I(0)}));
  b.push_back(CallStmt("shfl_xor", {Address("acc", DType::kFloat32, I(1)),
                                    Load("acc", DType::kFloat32, {I(0)}), I(16)}));
  std::string text = PrintProgram(p);
  EXPECT_EQ(text, "program @lowered {\n"
                  "  kernel grid(1) threads(32) as (bx) {\n"
                  "    call sync_threads()\n"
                  "    call ldmatrix_x4(&A_frag[0], &A_shared[thread_idx(0) * 8])\n"
                  "    call cp_async_wait(0)\n"
                  "    call shfl_xor(&acc[1], acc[0], 16)\n"
                  "  }\n"
                  "}\n");

  // Location mode: ` loc(...)` on the statement, `@L:C` on an argument
  // (or inside it) whose location differs from the statement's.
  b.resize(2);
  b[0].loc = {3, 5};
  b[1].loc = {4, 5};
  b[1].indices[0].loc = {4, 5};
  b[1].indices[0].args[0].loc = {4, 5};
  b[1].indices[1].loc = {4, 30};
  b[1].indices[1].args[0].loc = {4, 30};
  b[1].indices[1].args[0].args[0].loc = {4, 41};
  b[1].indices[1].args[0].args[1].loc = {4, 30};
  EXPECT_EQ(PrintProgram(p, PrintOptions{.locations = true}),
            "program @lowered {\n"
            "  kernel grid(1) threads(32) as (bx) loc(0:0) {\n"
            "    call sync_threads() loc(3:5)\n"
            "    call ldmatrix_x4(&A_frag[0], &A_shared[thread_idx(0)@4:41 * 8]@4:30) loc(4:5)\n"
            "  }\n"
            "}\n");
}

TEST(PrintProgramTest, CorruptStatementKindPrintsAsQuestionMark) {
  Program p;
  p.kernel.grid = {I(1)};
  p.kernel.threads = {1};
  Stmt bad;
  bad.kind = static_cast<StmtKind>(200);
  p.kernel.body.push_back(bad);
  EXPECT_NE(PrintProgram(p).find("\n    ?\n"), std::string::npos) << PrintProgram(p);
}

void SetLoc(Expr* e, Loc loc) {
  e->loc = loc;
  for (Expr& a : e->args) SetLoc(&a, loc);
}

TEST(PrintProgramTest, LocationsAreAnnotatedWhereTheyDifferFromTheParent) {
  Program p = SmallProgram();
  p.attrs.clear();
  p.symbols[0].loc = {2, 3};
  p.params[0].buffer.loc = {3, 1};
  p.params[0].buffer.shape[0].loc = {3, 9};
  p.kernel.loc = {5, 3};
  p.kernel.grid[0].loc = {5, 3}; // same as the parent: no annotation
  Stmt& loop = p.kernel.body[0];
  loop.loc = {6, 5};
  Stmt& guard = loop.body[0];
  guard.loc = {7, 7};
  guard.cond.loc = {7, 7};
  SetLoc(&guard.cond.args[0], {7, 10});
  guard.body[0].loc = {8, 9};
  SetLoc(&guard.body[0].value, {8, 16});
  std::string text = PrintProgram(p, PrintOptions{.locations = true});
  EXPECT_EQ(text, "program @scale {\n"
                  "  sym n: int32 loc(2:3)\n"
                  "  param X: global float32[n@3:9] loc(3:1)\n"
                  "  param alpha: scalar float32 loc(0:0)\n"
                  "  param Y: global float32[n] out loc(0:0)\n"
                  "  kernel grid((n + 127)@0:0 // 128@0:0) threads(128) as (bx) loc(5:3) {\n"
                  "    for i in parallel(128@0:0) loc(6:5) {\n"
                  "      if (bx * 128 + i)@7:10 < n@0:0 loc(7:7) {\n"
                  "        Y[(bx * 128 + i)@0:0] = (X[bx * 128 + i] * alpha)@8:16 loc(8:9)\n"
                  "      }\n"
                  "    }\n"
                  "  }\n"
                  "}\n");
}

TEST(PrintProgramTest, NonIdentifierNamesAreQuoted) {
  Program p = SmallProgram();
  p.name = "my kernel";
  p.attrs = {{"key with space", "v"}};
  std::string text = PrintProgram(p);
  EXPECT_EQ(text.substr(0, text.find('\n', text.find('\n') + 1)),
            "program @\"my kernel\" {\n  attr \"key with space\" = \"v\"");
}

} // namespace
} // namespace kiln::ir
