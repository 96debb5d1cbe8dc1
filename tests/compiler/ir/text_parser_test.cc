#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/text_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::ir {
namespace {

constexpr char kSoup[] = "(){}[]@:,-+*/<>=!~&|^\"#0123456789 \nxyz";

constexpr DType kI32 = DType::kInt32;
constexpr DType kI64 = DType::kInt64;
constexpr DType kF16 = DType::kFloat16;
constexpr DType kF32 = DType::kFloat32;
constexpr DType kBool = DType::kBool;

// --- builders for statements -------------------------------------------------

Expr I(int64_t v) { return IntImm(v); }
Expr F(double v) { return FloatImm(v); }
Expr V(const std::string& name, DType t = kI32) { return VarRef(name, t); }
Expr Bin(BinOp op, Expr a, Expr b) { return Binary(op, std::move(a), std::move(b)); }
Expr Ld(const std::string& buf, DType t, std::vector<Expr> idx) {
  return Load(buf, t, std::move(idx));
}

Region Rg(const std::string& buffer, std::vector<std::pair<Expr, Expr>> ranges) {
  Region r;
  r.buffer = buffer;
  for (auto& [min, extent] : ranges) r.ranges.push_back(Range{min, extent});
  return r;
}

Region Whole(const std::string& buffer, std::vector<int64_t> shape) {
  std::vector<std::pair<Expr, Expr>> ranges;
  for (int64_t n : shape) ranges.push_back({I(0), I(n)});
  return Rg(buffer, ranges);
}

Stmt AllocS(const std::string& name, Scope scope, DType t, std::vector<Expr> shape) {
  Stmt s;
  s.kind = StmtKind::kAlloc;
  s.buffer.name = name;
  s.buffer.scope = scope;
  s.buffer.dtype = t;
  s.buffer.shape = std::move(shape);
  return s;
}

Stmt VarAlloc(const std::string& name, DType t, Expr init) {
  Stmt s = AllocS(name, Scope::kVar, t, {I(1)});
  s.buffer.has_init = true;
  s.buffer.init = std::move(init);
  return s;
}

Stmt Op(StmtKind kind, std::vector<Region> regions) {
  Stmt s;
  s.kind = kind;
  s.regions = std::move(regions);
  return s;
}

Stmt FillS(Region dst, Expr value) {
  Stmt s = Op(StmtKind::kFill, {std::move(dst)});
  s.has_value = true;
  s.value = std::move(value);
  return s;
}

Stmt Gemm(Region a, Region b, Region c, bool ta, bool tb, bool clear, int k_pack, GemmPolicy p) {
  Stmt s = Op(StmtKind::kGemm, {std::move(a), std::move(b), std::move(c)});
  s.transpose_a = ta;
  s.transpose_b = tb;
  s.clear_accum = clear;
  s.k_pack = k_pack;
  s.policy = p;
  return s;
}

Stmt Reduce(ReduceKind kind, Region src, Region dst, int dim, bool clear) {
  Stmt s = Op(StmtKind::kReduce, {std::move(src), std::move(dst)});
  s.reduce_kind = kind;
  s.dim = dim;
  s.clear = clear;
  return s;
}

Stmt AtomicValue(AtomicOp op, Region dst, Expr value) {
  Stmt s = Op(StmtKind::kAtomic, {std::move(dst)});
  s.atomic_op = op;
  s.has_value = true;
  s.value = std::move(value);
  return s;
}

Stmt AtomicTile(AtomicOp op, Region dst, Region src) {
  Stmt s = Op(StmtKind::kAtomic, {std::move(dst), std::move(src)});
  s.atomic_op = op;
  return s;
}

Stmt For(ForKind kind, std::vector<std::string> vars, std::vector<Expr> extents,
         std::vector<Stmt> body) {
  Stmt s;
  s.kind = StmtKind::kFor;
  s.for_kind = kind;
  s.loop_vars = std::move(vars);
  s.extents = std::move(extents);
  s.body = std::move(body);
  return s;
}

Stmt If(Expr cond, std::vector<Stmt> then_body, std::vector<Stmt> else_body = {}) {
  Stmt s;
  s.kind = StmtKind::kIf;
  s.cond = std::move(cond);
  s.body = std::move(then_body);
  s.else_body = std::move(else_body);
  return s;
}

Stmt Store(const std::string& buf, std::vector<Expr> idx, Expr value) {
  Stmt s;
  s.kind = StmtKind::kStore;
  s.name = buf;
  s.indices = std::move(idx);
  s.has_value = true;
  s.value = std::move(value);
  return s;
}

Param TensorParam(const std::string& name, DType t, std::vector<Expr> shape, bool out = false) {
  Param p;
  p.buffer.name = name;
  p.buffer.dtype = t;
  p.buffer.shape = std::move(shape);
  p.is_output = out;
  return p;
}

Param ScalarParam(const std::string& name, DType t) {
  Param p;
  p.is_scalar = true;
  p.buffer.name = name;
  p.buffer.dtype = t;
  return p;
}

// A program that uses every statement kind, every field and every
// expression kind.
Program FullProgram() {
  Program p;
  p.name = "everything";
  p.source_name = "full.kir";
  p.attrs = {{"fast_math", "true"},
             {"tl.disable_tma", "false"},
             {"note", std::string("tab\there \"q\" \\ \x01 \xc3\xa9")}};
  p.symbols = {Symbol{"M", kI32, {}}, Symbol{"K", kI64, {}, "in"}};
  p.params = {TensorParam("A", kF16, {V("M"), I(64)}),
              TensorParam("B", kF16, {I(64), I(64)}),
              TensorParam("C", kF32, {V("M"), I(64)}, /*out=*/true),
              TensorParam("Cnt", kI32, {I(8)}),
              ScalarParam("alpha", kF32),
              ScalarParam("flag", kBool)};
  // User names (`as "..."`), keywords of the text among them.
  p.params[2].user_name = "out";
  p.params[4].user_name = "max";
  Kernel& k = p.kernel;
  k.grid = {Bin(BinOp::kFloorDiv, Bin(BinOp::kAdd, V("M"), I(63)), I(64)), I(1),
            Cast(kI32, V("K", kI64))};
  k.block_vars = {"bx", "by", "bz"};
  k.threads = {128, 1, 1};
  Expr row0 = Bin(BinOp::kMul, V("bx"), I(64));
  Expr kk = Bin(BinOp::kMul, V("k"), I(32));
  Expr cf_ij = Ld("C_f", kF32, {V("i"), V("j")});
  Expr max_i = Ld("row_max", kF32, {V("i")});
  Stmt swizzle;
  swizzle.kind = StmtKind::kUseSwizzle;
  swizzle.panel_size = 10;
  swizzle.swizzle_order = "col";
  swizzle.enable = false;
  Stmt annotate;
  annotate.kind = StmtKind::kAnnotateLayout;
  annotate.name = "A_s";
  annotate.layout = "swizzled";
  Stmt pipelined =
      For(ForKind::kPipelined, {"k"}, {I(2)},
          {Op(StmtKind::kCopy, {Rg("A", {{row0, I(64)}, {kk, I(32)}}), Whole("A_s", {64, 32})}),
           Op(StmtKind::kCopy, {Rg("B", {{kk, I(32)}, {I(0), I(64)}}), Whole("B_s", {32, 64})}),
           Gemm(Whole("A_s", {64, 32}), Whole("B_s", {32, 64}), Whole("C_f", {64, 64}), false, true,
                true, 2, GemmPolicy::kFullRow)});
  pipelined.num_stages = 3;
  pipelined.order = {0, 1, 2};
  pipelined.stage = {0, 0, -1};
  Stmt plain_pipe = For(ForKind::kPipelined, {"k2"}, {I(2)}, {});
  k.body = {
      swizzle,
      AllocS("A_s", Scope::kShared, kF16, {I(64), I(32)}),
      AllocS("B_s", Scope::kSharedDyn, kF16, {I(32), I(64)}),
      AllocS("C_f", Scope::kFragment, kF32, {I(64), I(64)}),
      AllocS("row_max", Scope::kFragment, kF32, {I(64)}),
      AllocS("tmp", Scope::kLocal, kF32, {I(4)}),
      VarAlloc("cnt", kI32, I(0)),
      VarAlloc("scale", kF32, Bin(BinOp::kMul, V("alpha", kF32), F(0.5))),
      annotate,
      FillS(Whole("C_f", {64, 64}), F(0.0)),
      pipelined,
      plain_pipe,
      Reduce(ReduceKind::kMax, Whole("C_f", {64, 64}), Whole("row_max", {64}), 1, true),
      Reduce(ReduceKind::kSum, Whole("C_f", {64, 64}), Whole("row_max", {64}), 1, false),
      Reduce(ReduceKind::kMin, Whole("C_f", {64, 64}), Whole("row_max", {64}), 0, true),
      Reduce(ReduceKind::kAbsSum, Whole("C_f", {64, 64}), Whole("row_max", {64}), -1, false),
      Reduce(ReduceKind::kAbsMax, Whole("C_f", {64, 64}), Whole("row_max", {64}), 1, true),
      For(ForKind::kParallel, {"i", "j"}, {I(64), I(64)},
          {Store("C_f", {V("i"), V("j")},
                 Bin(BinOp::kMul,
                     Select(Bin(BinOp::kGt, cf_ij, max_i),
                            Call(Intrinsic::kExp, {Bin(BinOp::kSub, cf_ij, max_i)}), F(0.0)),
                     Ld("scale", kF32, {I(0)})))}),
      For(ForKind::kSerial, {"t"}, {I(4)}, {Store("tmp", {V("t")}, Cast(kF32, V("t")))}),
      For(ForKind::kUnroll, {"u"}, {I(4)},
          {Store("tmp", {V("u")},
                 Call(Intrinsic::kPow,
                      {Call(Intrinsic::kAbs, {Ld("tmp", kF32, {V("u")})}), F(2.0)}))}),
      For(ForKind::kVectorized, {"w"}, {I(4)},
          {Store(
              "tmp", {V("w")},
              Unary(UnOp::kNeg, Bin(BinOp::kMax, Ld("tmp", kF32, {V("w")}),
                                    FloatImm(-std::numeric_limits<double>::infinity(), kF32))))}),
      If(Bin(BinOp::kAnd, Bin(BinOp::kLt, row0, V("M")), Unary(UnOp::kNot, V("flag", kBool))),
         {Op(StmtKind::kCopy, {Whole("C_f", {64, 64}), Rg("C", {{row0, I(64)}, {I(0), I(64)}})})},
         {AtomicValue(AtomicOp::kAdd, Rg("Cnt", {{V("bx"), I(1)}}), I(1)),
          Store("cnt", {I(0)},
                Bin(BinOp::kBitXor, Ld("cnt", kI32, {I(0)}),
                    Unary(UnOp::kBitNot, Bin(BinOp::kShl, V("by"), I(2)))))}),
      If(Bin(BinOp::kEq, ThreadIdx(0), I(0)),
         {AtomicTile(AtomicOp::kMax, Rg("C", {{row0, I(64)}, {I(0), I(64)}}),
                     Whole("C_f", {64, 64})),
          AtomicTile(AtomicOp::kMin, Rg("C", {{row0, I(64)}, {I(0), I(64)}}),
                     Whole("C_f", {64, 64})),
          AtomicValue(AtomicOp::kMax, Rg("Cnt", {{V("bz"), I(1)}}),
                      Bin(BinOp::kFloorMod, V("K", kI64), IntImm(7, kI64)))}),
      Gemm(Whole("A_s", {64, 32}), Whole("B_s", {32, 64}), Whole("C_f", {64, 64}), true, false,
           false, 1, GemmPolicy::kSquare),
      Gemm(Whole("A_s", {64, 32}), Whole("B_s", {32, 64}), Whole("C_f", {64, 64}), false, false,
           false, 1, GemmPolicy::kFullCol),
      // Thread IR (as after lowering): every argument kind.
      CallStmt("sync_threads", {}),
      CallStmt("ldmatrix_x4", {Address("tmp", kF32, I(0)),
                               Address("A_s", kF16, Bin(BinOp::kMul, ThreadIdx(0), I(8)))}),
      CallStmt("cp_async_16",
               {Address("B_s", kF16, Bin(BinOp::kAdd, V("bx"), I(-4))),
                Address("B", kF16, Bin(BinOp::kMul, V("by"), I(64))), Cast(kI32, V("K", kI64))}),
      CallStmt("cp_async_wait", {I(0)}),
      CallStmt("shfl_xor", {Address("tmp", kF32, I(1)), Ld("tmp", kF32, {I(0)}), IntImm(16, kI64)}),
  };
  return p;
}

// Gives every location in `p` a distinct value (line = a counter), except
// that one in `unknown_every` is left unknown (0 = none left unknown).
class LocAssigner {
 public:
  explicit LocAssigner(int unknown_every) : unknown_every_(unknown_every) {}

  void Run(Program* p) {
    for (Symbol& s : p->symbols) s.loc = Next();
    for (Param& param : p->params) param.buffer.loc = Next();
    p->kernel.loc = Next();
    Stmts(&p->kernel.body);
    RewriteExprs(p, [&](Expr e) {
      e.loc = Next();
      return e;
    });
  }

 private:
  Loc Next() {
    ++n_;
    if (unknown_every_ > 0 && n_ % unknown_every_ == 0) return Loc{};
    return Loc{n_, n_ % 80 + 1};
  }
  void Stmts(std::vector<Stmt>* stmts) {
    for (Stmt& s : *stmts) {
      s.loc = Next();
      if (s.kind == StmtKind::kAlloc) s.buffer.loc = n_ % 3 == 0 ? s.loc : Next();
      for (Region& r : s.regions) r.loc = Next();
      Stmts(&s.body);
      Stmts(&s.else_body);
    }
  }
  int unknown_every_;
  int n_ = 0;
};

absl::StatusOr<Program> Parse(const std::string& text, const std::string& file = "t.kir") {
  return ParseProgramText(text, file);
}

Program Stripped(Program p) {
  StripLocations(&p);
  return p;
}

// --- whole programs ------------------------------------------------------------

TEST(TextParserTest, FullProgramRoundTripsWithoutLocations) {
  Program p = FullProgram();
  std::string text = PrintProgram(p);
  absl::StatusOr<Program> q = Parse(text, "full.kir");
  ASSERT_TRUE(q.ok()) << q.status() << "\n" << text;
  EXPECT_EQ(Stripped(*q), Stripped(p)) << text << "\n---\n" << PrintProgram(*q);
  EXPECT_EQ(PrintProgram(*q), text);
}

TEST(TextParserTest, FullProgramRoundTripsWithLocations) {
  for (int unknown_every : {0, 2, 5, 1}) {
    SCOPED_TRACE(unknown_every);
    Program p = FullProgram();
    LocAssigner(unknown_every).Run(&p);
    std::string text = PrintProgram(p, PrintOptions{.locations = true});
    absl::StatusOr<Program> q = Parse(text, "full.kir");
    ASSERT_TRUE(q.ok()) << q.status() << "\n" << text;
    EXPECT_EQ(*q, p) << text << "\n---\n" << PrintProgram(*q, PrintOptions{.locations = true});
    EXPECT_EQ(PrintProgram(*q, PrintOptions{.locations = true}), text);
  }
}

TEST(TextParserTest, GridAndThreadRanks) {
  for (int rank = 1; rank <= 3; ++rank) {
    SCOPED_TRACE(rank);
    Program p;
    p.name = "g";
    p.source_name = "g.kir";
    const char* names[] = {"bx", "by", "bz"};
    for (int d = 0; d < rank; ++d) {
      p.kernel.grid.push_back(I(d + 2));
      p.kernel.block_vars.push_back(names[d]);
      p.kernel.threads.push_back(32 >> d);
    }
    p.kernel.body.push_back(
        AllocS("s", Scope::kShared, kF32, {V(names[rank - 1]), p.kernel.grid.back()}));
    absl::StatusOr<Program> q = Parse(PrintProgram(p), "g.kir");
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(Stripped(*q), p);
  }
}

TEST(TextParserTest, KernelWithoutBlockVariables) {
  Program p;
  p.name = "nobind";
  p.source_name = "t.kir";
  p.kernel.grid = {I(1)};
  p.kernel.threads = {64};
  std::string text = PrintProgram(p);
  EXPECT_EQ(text, "program @nobind {\n  kernel grid(1) threads(64) {\n  }\n}\n");
  absl::StatusOr<Program> q = Parse(text);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(Stripped(*q), p);
}

TEST(TextParserTest, QuotedProgramNameAndAttrKey) {
  Program p = FullProgram();
  p.name = "not an identifier";
  p.attrs["a key"] = "";
  absl::StatusOr<Program> q = Parse(PrintProgram(p), "full.kir");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(Stripped(*q), Stripped(p));
}

constexpr char kCanonical[] = R"(program @softmax {
  attr fast_math = "true"
  sym N: int32
  param X: global float32[N, 128]
  param Y: global float32[N, 128] out
  kernel grid(N) threads(128) as (bx) {
    alloc x: fragment float32[128]
    alloc m: fragment float32[1]
    copy X[bx +: 1, 0 +: 128] -> x[0 +: 128]
    reduce_max x[0 +: 128] -> m[0 +: 1] dim=0 clear=true
    for i in parallel(128) {
      x[i] = exp2((x[i] - m[0]) * 1.4426950408889634)
    }
    copy x[0 +: 128] -> Y[bx +: 1, 0 +: 128]
  }
}
)";

TEST(TextParserTest, UserNamesParseAndPrintBack) {
  const std::string text = "program @t {\n"
                           "  sym in_ as \"in\": int32\n"
                           "  param A as \"A\": global float32[in_]\n"
                           "  param out_ as \"out\": global float32[in_] out\n"
                           "  kernel grid(in_) threads(128) as (bx) {\n"
                           "    out_[bx] = A[bx]\n"
                           "  }\n"
                           "}\n";
  absl::StatusOr<Program> p = Parse(text);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->symbols[0].name, "in_");
  EXPECT_EQ(p->symbols[0].user_name, "in");
  EXPECT_EQ(p->params[0].user_name, "") << "the IR's own name is no user name";
  EXPECT_EQ(p->params[1].user_name, "out");
  std::string printed = PrintProgram(*p);
  EXPECT_THAT(printed, ::testing::HasSubstr("  param A: global float32[in_]\n"));
  EXPECT_THAT(printed, ::testing::HasSubstr("  param out_ as \"out\": global float32[in_] out\n"));
  absl::StatusOr<Program> again = Parse(printed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Stripped(*again), Stripped(*p));
}

TEST(TextParserTest, CanonicalTextPrintsBackUnchanged) {
  absl::StatusOr<Program> p = Parse(kCanonical);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(PrintProgram(*p), kCanonical);
  EXPECT_EQ(p->source_name, "t.kir");
}

TEST(TextParserTest, UnannotatedLocationsArePositionsInTheText) {
  absl::StatusOr<Program> p = Parse(kCanonical);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->symbols[0].loc, (Loc{3, 3}));
  EXPECT_EQ(p->params[1].buffer.loc, (Loc{5, 3}));
  EXPECT_EQ(p->kernel.loc, (Loc{6, 3}));
  const Stmt& copy = p->kernel.body[2];
  EXPECT_EQ(copy.loc, (Loc{9, 5}));
  EXPECT_EQ(copy.regions[0].loc, (Loc{9, 5})); // inherited from the statement
  EXPECT_EQ(copy.regions[0].ranges[0].min.loc, (Loc{9, 5}));
  const Stmt& store = p->kernel.body[4].body[0];
  EXPECT_EQ(store.loc, (Loc{12, 7}));
  EXPECT_EQ(store.value.args[0].args[1].loc, (Loc{12, 7}));
}

TEST(TextParserTest, ExplicitLocationsAreRestored) {
  absl::StatusOr<Program> p = Parse("program @t {\n"
                                    "  sym n: int32 loc(10:2)\n"
                                    "  param A: global float32[n@11:30] loc(11:5)\n"
                                    "  kernel grid(1) threads(32) as (bx) loc(12:3) {\n"
                                    "    alloc s@14:9: shared float32[4] loc(14:5)\n"
                                    "    copy A[(n - 4)@15:12 +: 4]@15:10 -> s[0 +: 4] loc(15:5)\n"
                                    "    if (bx@16:8 == 0)@16:8 loc(16:5) {\n"
                                    "      s[0] = (-(A[0]@17:16))@17:14 + -(A[1])@17:30 loc(17:7)\n"
                                    "    }\n"
                                    "  }\n"
                                    "}\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->symbols[0].loc, (Loc{10, 2}));
  EXPECT_EQ(p->params[0].buffer.loc, (Loc{11, 5}));
  EXPECT_EQ(p->params[0].buffer.shape[0].loc, (Loc{11, 30}));
  EXPECT_EQ(p->kernel.loc, (Loc{12, 3}));
  EXPECT_EQ(p->kernel.grid[0].loc, (Loc{12, 3}));
  const Stmt& alloc = p->kernel.body[0];
  EXPECT_EQ(alloc.loc, (Loc{14, 5}));
  EXPECT_EQ(alloc.buffer.loc, (Loc{14, 9}));
  EXPECT_EQ(alloc.buffer.shape[0].loc, (Loc{14, 9}));
  const Stmt& copy = p->kernel.body[1];
  EXPECT_EQ(copy.regions[0].loc, (Loc{15, 10}));
  EXPECT_EQ(copy.regions[0].ranges[0].min.loc, (Loc{15, 12}));
  EXPECT_EQ(copy.regions[0].ranges[0].min.args[1].loc, (Loc{15, 12}));
  EXPECT_EQ(copy.regions[0].ranges[0].extent.loc, (Loc{15, 10}));
  EXPECT_EQ(copy.regions[1].loc, (Loc{15, 5}));
  const Stmt& iff = p->kernel.body[2];
  EXPECT_EQ(iff.cond.loc, (Loc{16, 8}));
  EXPECT_EQ(iff.cond.args[1].loc, (Loc{16, 8}));
  const Stmt& store = iff.body[0];
  const Expr& neg = store.value.args[0];
  EXPECT_EQ(neg.kind, ExprKind::kUnary);
  EXPECT_EQ(neg.loc, (Loc{17, 14}));
  EXPECT_EQ(neg.args[0].loc, (Loc{17, 16}));
  // A postfix annotation binds to the operand of a prefix operator.
  EXPECT_EQ(store.value.args[1].loc, (Loc{17, 7}));
  EXPECT_EQ(store.value.args[1].args[0].loc, (Loc{17, 30}));
  EXPECT_EQ(store.indices[0].loc, (Loc{17, 7}));
}

TEST(TextParserTest, CommentsAndLenientSpelling) {
  absl::StatusOr<Program> p = Parse("// RUN: kiln-opt %s | FileCheck %s\n"
                                    "program @t {  # trailing comment\n"
                                    "  // a full-line comment\n"
                                    "  param A: global int32[8]\n"
                                    "  kernel grid(1) threads(32) as (bx) {\n"
                                    "    gemm A[0 +: 8], A[0 +: 8], A[0 +: 8]   # flags default\n"
                                    "    for k in pipelined(4) {\n"
                                    "    }\n"
                                    "    A[0] = A[1] // 2 # floor division, then a comment\n"
                                    "    A[1]=-A[2]+-3\n"
                                    "    use_swizzle enable=false panel=4\n"
                                    "  }\n"
                                    "}\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(PrintProgram(*p),
            "program @t {\n"
            "  param A: global int32[8]\n"
            "  kernel grid(1) threads(32) as (bx) {\n"
            "    gemm A[0 +: 8], A[0 +: 8], A[0 +: 8] transpose_a=false transpose_b=false "
            "clear_accum=false k_pack=1 policy=square\n"
            "    for k in pipelined(4) stages=0 {\n"
            "    }\n"
            "    A[0] = A[1] // 2\n"
            "    A[1] = -(A[2]) + -3\n"
            "    use_swizzle panel=4 order=row enable=false\n"
            "  }\n"
            "}\n");
}

constexpr char kThreadIr[] = R"(program @lowered {
  param A: global float16[64, 64]
  kernel grid(1) threads(128) as (bx) {
    alloc A_shared: shared float16[512]
    alloc A_frag: local float16[8]
    call cp_async_16(&A_shared[thread_idx(0) * 4], &A[bx * 64 + thread_idx(0) * 4], 8)
    call cp_async_commit()
    call cp_async_wait(0)
    call sync_threads()
    call ldmatrix_x4(&A_frag[0], &A_shared[thread_idx(0) % 16 * 32])
    call atomic_add(&A[thread_idx(0)], A_frag[1])
  }
}
)";

void SetLocs(Expr* e, Loc loc) {
  e->loc = loc;
  for (Expr& a : e->args) SetLocs(&a, loc);
}

TEST(TextParserTest, ThreadIrParsesAndPrintsBack) {
  absl::StatusOr<Program> p = Parse(kThreadIr);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(PrintProgram(*p), kThreadIr);
  const std::vector<Stmt>& b = p->kernel.body;
  ASSERT_EQ(b.size(), 8u);
  const Stmt& cp = b[2];
  EXPECT_EQ(cp.kind, StmtKind::kCall);
  EXPECT_EQ(cp.name, "cp_async_16");
  ASSERT_EQ(cp.indices.size(), 3u);
  EXPECT_EQ(cp.indices[0].kind, ExprKind::kAddress);
  EXPECT_EQ(cp.indices[0].name, "A_shared");
  EXPECT_EQ(cp.indices[0].dtype, kF16); // the buffer's element type
  ASSERT_EQ(cp.indices[0].args.size(), 1u);
  EXPECT_EQ(cp.indices[0].args[0].dtype, kI32);
  EXPECT_EQ(cp.indices[2], IntImm(8, kI32, Loc{6, 5}));
  EXPECT_EQ(cp.loc, (Loc{6, 5}));
  EXPECT_EQ(cp.indices[1].loc, (Loc{6, 5})); // inherited from the statement
  EXPECT_EQ(b[3].indices.size(), 0u);
  const Stmt& atomic = b[7];
  EXPECT_EQ(atomic.name, "atomic_add"); // an intrinsic, not the atomic_add statement
  EXPECT_EQ(atomic.indices[1].kind, ExprKind::kLoad);

  // Locations round-trip, annotated arguments included.
  std::string with_locs = PrintProgram(*p, PrintOptions{.locations = true});
  absl::StatusOr<Program> q = Parse(with_locs);
  ASSERT_TRUE(q.ok()) << q.status() << "\n" << with_locs;
  EXPECT_EQ(*q, *p);
  Program moved = *p;
  Expr& addr = moved.kernel.body[6].indices[1];
  SetLocs(&addr, {20, 3});
  SetLocs(&addr.args[0].args[0], {21, 4});
  with_locs = PrintProgram(moved, PrintOptions{.locations = true});
  EXPECT_NE(with_locs.find("&A_shared[(thread_idx(0) % 16)@21:4 * 32]@20:3) loc(10:5)"),
            std::string::npos)
      << with_locs;
  q = Parse(with_locs);
  ASSERT_TRUE(q.ok()) << q.status() << "\n" << with_locs;
  EXPECT_EQ(*q, moved);
}

// --- expressions ---------------------------------------------------------------

// Wraps an expression as the stored value on line 13 (the value starts at
// column 14) of a program that defines names of several dtypes.
std::string InProgram(const std::string& expr) {
  return "program @t {\n"
         "  sym n: int32\n"
         "  sym m: int64\n"
         "  param A: global float16[n, 64]\n"
         "  param X: global float32[16]\n"
         "  param O: global float32[1] out\n"
         "  param alpha: scalar float32\n"
         "  param p: scalar bool\n"
         "  param q: scalar bool\n"
         "  param r: scalar bool\n"
         "  kernel grid(n) threads(128) as (bx) {\n"
         "    for x, y, z in parallel(4, 4, 4) {\n"
         "      O[0] = " +
         expr +
         "\n"
         "    }\n"
         "  }\n"
         "}\n";
}

absl::StatusOr<Expr> ParseExprText(const std::string& expr) {
  absl::StatusOr<Program> p = Parse(InProgram(expr));
  if (!p.ok()) return p.status();
  StripLocations(&*p);
  return p->kernel.body[0].body[0].value;
}

struct ExprCase {
  std::string text;      // input
  Expr expected;         // with dtypes as the parser must compute them
  std::string canonical; // printed form; empty = same as text
};

TEST(TextParserTest, ExpressionsParseWithDTypesAndPrintBack) {
  const double inf = std::numeric_limits<double>::infinity();
  Expr x = V("x"), y = V("y"), z = V("z");
  Expr p = V("p", kBool), q = V("q", kBool), r = V("r", kBool);
  Expr alpha = V("alpha", kF32), m = V("m", kI64);
  Expr a00 = Ld("A", kF16, {I(0), I(0)});
  std::vector<ExprCase> cases = {
      // Literals.
      {"5", I(5), ""},
      {"-5", I(-5), ""},
      {"- 5", Unary(UnOp::kNeg, I(5)), "-(5)"},
      {"-(5)", Unary(UnOp::kNeg, I(5)), ""},
      {"-(-5)", Unary(UnOp::kNeg, I(-5)), ""},
      {"--5", Unary(UnOp::kNeg, I(-5)), "-(-5)"},
      {"-9223372036854775808", I(std::numeric_limits<int64_t>::min()), ""},
      {"true", BoolImm(true), ""},
      {"false", BoolImm(false), ""},
      {"0.5", F(0.5), ""},
      {"1.0", F(1.0), ""},
      {"1E3", F(1000.0), "1000.0"},
      {"1e+20", F(1e20), ""},
      {"2e-05", F(2e-05), ""},
      {"-2.5", F(-2.5), ""},
      {"inf", F(inf), ""},
      {"-inf", F(-inf), ""},
      {"-(inf)", Unary(UnOp::kNeg, F(inf)), ""},
      {"float16(0.5)", FloatImm(0.5, kF16), ""},
      {"bfloat16(-inf)", FloatImm(-inf, DType::kBFloat16), ""},
      {"int64(-3)", IntImm(-3, kI64), ""},
      {"uint64(18446744)", IntImm(18446744, DType::kUInt64), ""},
      {"float32(3)", IntImm(3, kF32), ""},
      {"int32(1.0)", FloatImm(1.0, kI32), ""},
      {"int32(7)", I(7), "7"},
      {"bool(true)", BoolImm(true), "true"},
      {"bool(2)", IntImm(2, kBool), ""},
      {"float8_e4m3(1.5)", FloatImm(1.5, DType::kFloat8E4M3), ""},
      // Names and loads take the dtype of their definition.
      {"x", x, ""},
      {"m", m, ""},
      {"alpha", alpha, ""},
      {"p", p, ""},
      {"bx", V("bx"), ""},
      {"A[bx * 64 + x, 3]",
       Ld("A", kF16, {Bin(BinOp::kAdd, Bin(BinOp::kMul, V("bx"), I(64)), x), I(3)}), ""},
      {"X[A[0, 0]]", Ld("X", kF32, {a00}), ""},
      // Operators and precedence.
      {"x + y * z", Bin(BinOp::kAdd, x, Bin(BinOp::kMul, y, z)), ""},
      {"x+y*z", Bin(BinOp::kAdd, x, Bin(BinOp::kMul, y, z)), "x + y * z"},
      {"(x + y) * z", Bin(BinOp::kMul, Bin(BinOp::kAdd, x, y), z), ""},
      {"x - y - z", Bin(BinOp::kSub, Bin(BinOp::kSub, x, y), z), ""},
      {"x - (y - z)", Bin(BinOp::kSub, x, Bin(BinOp::kSub, y, z)), ""},
      {"((x))", x, "x"},
      {"x -5", Bin(BinOp::kSub, x, I(5)), "x - 5"},
      {"x - -5", Bin(BinOp::kSub, x, I(-5)), ""},
      {"x<-5", Bin(BinOp::kLt, x, I(-5)), "x < -5"},
      {"x / y // z % 2",
       Bin(BinOp::kFloorMod, Bin(BinOp::kFloorDiv, Bin(BinOp::kDiv, x, y), z), I(2)), ""},
      {"x << y + 1", Bin(BinOp::kShl, x, Bin(BinOp::kAdd, y, I(1))), ""},
      {"(x >> y) - 1", Bin(BinOp::kSub, Bin(BinOp::kShr, x, y), I(1)), ""},
      {"x < y == y >= x", Bin(BinOp::kEq, Bin(BinOp::kLt, x, y), Bin(BinOp::kGe, y, x)), ""},
      {"x <= y != z > x", Bin(BinOp::kNe, Bin(BinOp::kLe, x, y), Bin(BinOp::kGt, z, x)), ""},
      {"p && q || r", Bin(BinOp::kOr, Bin(BinOp::kAnd, p, q), r), ""},
      {"p && (q || r)", Bin(BinOp::kAnd, p, Bin(BinOp::kOr, q, r)), ""},
      {"x & y | z ^ x", Bin(BinOp::kBitOr, Bin(BinOp::kBitAnd, x, y), Bin(BinOp::kBitXor, z, x)),
       ""},
      {"(x | y) & z", Bin(BinOp::kBitAnd, Bin(BinOp::kBitOr, x, y), z), ""},
      {"!p", Unary(UnOp::kNot, p), ""},
      {"!(x < y)", Unary(UnOp::kNot, Bin(BinOp::kLt, x, y)), ""},
      {"~x", Unary(UnOp::kBitNot, x), ""},
      {"-x", Unary(UnOp::kNeg, x), "-(x)"},
      {"-(alpha)", Unary(UnOp::kNeg, alpha), ""},
      {"m * int64(2)", Bin(BinOp::kMul, m, IntImm(2, kI64)), ""},
      {"min(x, y) + max(m, int64(0))",
       Bin(BinOp::kAdd, Bin(BinOp::kMin, x, y), Bin(BinOp::kMax, m, IntImm(0, kI64))), ""},
      // Calls, casts, select, thread_idx.
      {"pow(alpha, 2.0)", Call(Intrinsic::kPow, {alpha, F(2.0)}), ""},
      {"exp(A[0, 0])", Call(Intrinsic::kExp, {a00}), ""},
      {"cast<float32>(A[0, 0]) * alpha", Bin(BinOp::kMul, Cast(kF32, a00), alpha), ""},
      {"cast<int64>(x + 1)", Cast(kI64, Bin(BinOp::kAdd, x, I(1))), ""},
      {"select(p, A[0, 0], float16(0.0))", Select(p, a00, FloatImm(0.0, kF16)), ""},
      {"thread_idx(0) + thread_idx(1) * thread_idx(2)",
       Bin(BinOp::kAdd, ThreadIdx(0), Bin(BinOp::kMul, ThreadIdx(1), ThreadIdx(2))), ""},
  };
  for (const char* fn : {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "tanh", "floor",
                         "ceil", "sin", "cos", "round", "trunc", "sigmoid"}) {
    Expr e;
    e.kind = ExprKind::kCall;
    e.dtype = kF16;
    absl::StatusOr<Expr> parsed = ParseExprText(std::string(fn) + "(A[0, 0])");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->kind, ExprKind::kCall) << fn;
    EXPECT_EQ(parsed->dtype, kF16) << fn;
    EXPECT_EQ(PrintExpr(*parsed), std::string(fn) + "(A[0, 0])");
  }
  for (const ExprCase& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<Expr> e = ParseExprText(c.text);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(*e, c.expected) << PrintExpr(*e);
    EXPECT_EQ(PrintExpr(*e), c.canonical.empty() ? c.text : c.canonical);
  }
}

TEST(TextParserTest, EveryDTypeLiteralRoundTrips) {
  for (DType t : AllDTypes()) {
    for (Expr e : {IntImm(1, t), IntImm(-7, t), FloatImm(1.5, t), FloatImm(-0.25, t)}) {
      std::string text = PrintExpr(e);
      SCOPED_TRACE(text);
      absl::StatusOr<Expr> back = ParseExprText(text);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(*back, e);
    }
  }
}

TEST(TextParserTest, FloatsRoundTripExactly) {
  const std::vector<double> values = {0.1,
                                      1.0 / 3.0,
                                      2.0 / 3.0,
                                      1e-300,
                                      5e-324,
                                      std::numeric_limits<double>::max(),
                                      std::numeric_limits<double>::min(),
                                      123456789.125,
                                      0.0,
                                      -0.0,
                                      1e16,
                                      9007199254740993.0,
                                      3.4028234663852886e38,
                                      6.103515625e-05,
                                      -1.4426950408889634};
  for (double v : values) {
    for (DType t : {kF32, kF16, DType::kFloat64}) {
      Expr e = FloatImm(v, t);
      std::string text = PrintExpr(e);
      SCOPED_TRACE(text);
      absl::StatusOr<Expr> back = ParseExprText(text);
      ASSERT_TRUE(back.ok()) << back.status();
      ASSERT_EQ(back->kind, ExprKind::kFloat);
      EXPECT_EQ(back->dtype, t);
      EXPECT_EQ(std::memcmp(&back->fval, &v, sizeof(double)), 0) << back->fval;
    }
  }
  absl::StatusOr<Expr> nan = ParseExprText("float16(nan)");
  ASSERT_TRUE(nan.ok()) << nan.status();
  EXPECT_TRUE(std::isnan(nan->fval));
  EXPECT_EQ(PrintExpr(*nan), "float16(nan)");
}

TEST(TextParserTest, AllocVarMayBeReadByItsBareName) {
  absl::StatusOr<Program> p = Parse("program @t {\n"
                                    "  param O: global float16[4]\n"
                                    "  kernel grid(1) threads(32) as (bx) {\n"
                                    "    alloc acc: var float16[1] = float16(0.0)\n"
                                    "    O[0] = acc + acc[0]\n"
                                    "  }\n"
                                    "}\n");
  ASSERT_TRUE(p.ok()) << p.status();
  const Expr& v = p->kernel.body[1].value;
  EXPECT_EQ(v.args[0].kind, ExprKind::kVar);
  EXPECT_EQ(v.args[0].dtype, kF16);
  EXPECT_EQ(v.args[1].kind, ExprKind::kLoad);
  EXPECT_EQ(v.dtype, kF16);
}

TEST(TextParserTest, ScopesFollowBlocks) {
  // Loop and block variables shadow outer names and vanish after their block.
  absl::StatusOr<Program> p = Parse("program @t {\n"
                                    "  sym i: int64\n"
                                    "  param O: global int64[4]\n"
                                    "  kernel grid(1) threads(32) as (bx) {\n"
                                    "    for i in serial(4) {\n"
                                    "      O[i] = cast<int64>(i)\n"
                                    "    }\n"
                                    "    O[0] = i\n"
                                    "  }\n"
                                    "}\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kernel.body[0].body[0].indices[0].dtype, kI32);
  EXPECT_EQ(p->kernel.body[1].value.dtype, kI64);
}

// --- errors --------------------------------------------------------------------

// A program whose kernel body is `lines`; body line k is line 5 + k and
// starts at column 5.
std::string WithBody(const std::vector<std::string>& lines) {
  std::string s = "program @t {\n"
                  "  sym n: int32\n"
                  "  param A: global float32[n]\n"
                  "  kernel grid(n) threads(128) as (bx) {\n";
  for (const std::string& l : lines) s += "    " + l + "\n";
  return s + "  }\n}\n";
}

// As WithBody, with a local buffer named `call` allocated first.
std::string WithBodyAndLocal(std::vector<std::string> lines) {
  lines.insert(lines.begin(), "alloc call: local float32[4]");
  return WithBody(lines);
}

TEST(TextParserTest, CallIsNotReserved) {
  // `call` starts a call statement only when a name follows.
  absl::StatusOr<Program> p = Parse(WithBodyAndLocal({"call[0] = 1.0"}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kernel.body[1].kind, StmtKind::kStore);
  EXPECT_EQ(p->kernel.body[1].name, "call");
}

struct ErrorCase {
  std::string name;
  std::string text;
  std::string message; // the full status message
};

std::string Repeat(const std::string& s, int n);

TEST(TextParserTest, MalformedTextGivesLocatedErrors) {
  const std::vector<ErrorCase> cases = {
      {"empty input", "", "t.kir:1:1: expected 'program', got end of input"},
      {"not a program", "kernel grid(1)", "t.kir:1:1: expected 'program', got 'kernel'"},
      {"unknown name", WithBody({"A[0] = y + 1.0"}), "t.kir:5:12: unknown name 'y'"},
      {"unknown buffer in store", WithBody({"B[0] = 1.0"}), "t.kir:5:5: unknown buffer 'B'"},
      {"unknown buffer in region", WithBody({"copy A[0 +: 4] -> S[0 +: 4]"}),
       "t.kir:5:23: unknown buffer 'S'"},
      {"unknown buffer in load", WithBody({"A[0] = Q[1]"}), "t.kir:5:12: unknown buffer 'Q'"},
      {"loop variable out of scope", WithBody({"for i in serial(4) {", "}", "A[i] = 1.0"}),
       "t.kir:7:7: unknown name 'i'"},
      {"alloc out of scope",
       WithBody({"if bx == 0 {", "  alloc s: shared float32[4]", "}", "fill s[0 +: 4], 0.0"}),
       "t.kir:8:10: unknown buffer 's'"},
      {"buffer used as a value", WithBody({"A[0] = A"}),
       "t.kir:5:12: 'A' is a buffer; index it as A[...]"},
      {"pow arity", WithBody({"A[0] = pow(1.0)"}), "t.kir:5:12: 'pow' takes 2 arguments, got 1"},
      {"exp arity", WithBody({"A[0] = exp(1.0, 2.0)"}),
       "t.kir:5:12: 'exp' takes 1 argument, got 2"},
      {"select arity", WithBody({"A[0] = select(true, 1.0)"}),
       "t.kir:5:12: 'select' takes 3 arguments, got 2"},
      {"min arity", WithBody({"A[0] = min(1.0)"}), "t.kir:5:12: 'min' takes 2 arguments, got 1"},
      {"cast arity", WithBody({"A[0] = cast<float32>()"}),
       "t.kir:5:12: 'cast' takes 1 argument, got 0"},
      {"unknown function", WithBody({"A[0] = foo(1.0)"}), "t.kir:5:12: unknown function 'foo'"},
      {"dtype form needs a literal", WithBody({"A[0] = float16(n)"}),
       "t.kir:5:20: expected a literal in 'float16(...)'; write cast<float16>(x) to convert an "
       "expression"},
      {"thread_idx range", WithBody({"A[0] = cast<float32>(thread_idx(3))"}),
       "t.kir:5:37: thread_idx dimension must be 0, 1 or 2"},
      {"bad character", WithBody({"A[0] = 1.0 $ 2.0"}), "t.kir:5:16: unexpected character '$'"},
      {"control byte", WithBody({std::string("A[0] = \x01")}), "t.kir:5:12: unexpected byte 0x01"},
      {"malformed number", WithBody({"A[0] = 12abc"}), "t.kir:5:12: malformed number"},
      {"integer out of range", WithBody({"A[0] = 99999999999999999999"}),
       "t.kir:5:12: integer literal out of range"},
      {"float out of range", WithBody({"A[0] = 1e999"}), "t.kir:5:12: float literal out of range"},
      {"missing operand", WithBody({"A[0] = 1.0 +"}), "t.kir:6:3: expected an expression, got '}'"},
      {"user name not a string", "program @t {\n  param A as B: global float32[4]\n",
       "t.kir:2:14: expected the user's name as a string (as \"out\"), got 'B'"},
      {"user name not an identifier", "program @t {\n  sym n as \"2n\": int32\n",
       "t.kir:2:12: a user name must be an identifier (letters, digits and '_', not starting "
       "with a digit)"},
      {"unbalanced parenthesis", WithBody({"A[0] = (1.0 + 2.0"}),
       "t.kir:6:3: expected ')', got '}'"},
      {"unknown statement", WithBody({"frobnicate A"}),
       "t.kir:5:5: unknown statement 'frobnicate'"},
      {"else without if", WithBody({"else {", "}"}), "t.kir:5:5: unknown statement 'else'"},
      {"statement starting with a number", WithBody({"42"}),
       "t.kir:5:5: expected a statement or '}', got '42'"},
      {"unknown gemm flag", WithBody({"gemm A[0 +: 4], A[0 +: 4], A[0 +: 4] transpos_a=true"}),
       "t.kir:5:42: unknown flag 'transpos_a' for gemm (expected one of: transpose_a, "
       "transpose_b, clear_accum, k_pack, policy, wg_wait)"},
      {"duplicate flag", WithBody({"reduce_sum A[0 +: 4] -> A[0 +: 4] dim=0 dim=1"}),
       "t.kir:5:45: duplicate flag 'dim'"},
      {"bad flag value", WithBody({"reduce_sum A[0 +: 4] -> A[0 +: 4] clear=yes"}),
       "t.kir:5:45: expected 'true' or 'false', got 'yes'"},
      {"unknown gemm policy", WithBody({"gemm A[0 +: 4], A[0 +: 4], A[0 +: 4] policy=diagonal"}),
       "t.kir:5:49: unknown gemm policy 'diagonal'"},
      {"stages on a serial loop", WithBody({"for i in serial(4) stages=2 {", "}"}),
       "t.kir:5:24: unknown flag 'stages' for 'serial' loops"},
      {"unknown loop kind", WithBody({"for i in sequential(4) {", "}"}),
       "t.kir:5:14: unknown loop kind 'sequential'"},
      {"parallel arity", WithBody({"for i, j in parallel(4) {", "}"}),
       "t.kir:5:17: loop has 2 variables but 1 extents"},
      {"serial with two variables", WithBody({"for i, j in serial(4, 4) {", "}"}),
       "t.kir:5:17: a serial loop has one variable; only parallel loops have more"},
      {"unknown dtype", WithBody({"alloc s: shared float17[4]"}),
       "t.kir:5:21: unknown dtype 'float17'"},
      {"unknown scope", WithBody({"alloc s: shard float32[4]"}),
       "t.kir:5:14: unknown scope 'shard'"},
      {"region without +:", WithBody({"copy A[0] -> A[0 +: 4]"}),
       "t.kir:5:13: expected '+:', got ']'"},
      {"atomic separator", WithBody({"atomic_add A[0 +: 1] 1.0"}),
       "t.kir:5:26: expected ',' or '<-', got '1.0'"},
      {"unterminated block",
       "program @t {\n  kernel grid(1) threads(32) as (bx) {\n    for i in serial(4) {\n",
       "t.kir:4:1: unterminated loop body: expected '}' to close the '{' at 3:24, got end of "
       "input"},
      {"unterminated kernel", "program @t {\n  kernel grid(1) threads(32) as (bx) {\n    fill",
       "t.kir:3:9: expected a buffer name, got end of input"},
      {"unterminated program", "program @t {\n  kernel grid(1) threads(32) as (bx) {\n  }\n",
       "t.kir:4:1: unterminated program: expected '}' to close the '{' at 1:12, got end of input"},
      {"trailing tokens", WithBody({}) + "extra", "t.kir:7:1: expected end of input, got 'extra'"},
      {"grid rank", "program @t {\n  kernel grid(1, 1, 1, 1) threads(32) {\n  }\n}\n",
       "t.kir:2:10: grid takes 1 to 3 extents, got 4"},
      {"block variable count", "program @t {\n  kernel grid(1, 1) threads(32) as (bx) {\n  }\n}\n",
       "t.kir:2:33: kernel has 2 grid extents but 1 block variables"},
      {"unterminated string", "program @t {\n  attr a = \"abc\n",
       "t.kir:2:12: unterminated string"},
      {"bad escape", "program @t {\n  attr a = \"a\\qb\"\n",
       "t.kir:2:14: invalid escape in string"},
      {"duplicate attribute", "program @t {\n  attr a = \"1\"\n  attr a = \"2\"\n",
       "t.kir:3:8: duplicate attribute 'a'"},
      {"unknown declaration", "program @t {\n  buffer A\n",
       "t.kir:2:3: expected 'attr', 'sym', 'param', 'workspace' or 'kernel', got 'buffer'"},
      {"duplicate annotation", WithBody({"A[0] = 1.0@1:2@3:4"}),
       "t.kir:5:19: duplicate location annotation"},
      {"bad loc", WithBody({"A[0] = 1.0 loc(1)"}), "t.kir:5:21: expected ':', got ')'"},
      // Thread IR.
      {"unknown intrinsic", WithBody({"call foo(&A[0])"}), "t.kir:5:10: unknown intrinsic 'foo'"},
      {"call without a name", WithBody({"call (1)"}),
       "t.kir:5:10: expected an intrinsic name, got '('"},
      {"tile statement is not an intrinsic", WithBody({"call copy(&A[0], &A[1])"}),
       "t.kir:5:10: unknown intrinsic 'copy'"},
      {"call arity", WithBody({"call sync_threads(1)"}),
       "t.kir:5:10: 'sync_threads' takes 0 arguments, got 1"},
      {"call too few arguments", WithBody({"call ldmatrix_x4(&A[0])"}),
       "t.kir:5:10: 'ldmatrix_x4' takes 2 arguments, got 1"},
      {"address argument expected", WithBody({"call atomic_add(A[0], 1.0)"}),
       "t.kir:5:21: argument 1 of 'atomic_add' must be an address (&BUF[i])"},
      {"value argument expected", WithBody({"call atomic_add(&A[0], &A[1])"}),
       "t.kir:5:28: argument 2 of 'atomic_add' must be a value, not an address"},
      {"integer literal expected", WithBody({"call cp_async_wait(n)"}),
       "t.kir:5:24: argument 1 of 'cp_async_wait' must be an integer literal"},
      {"float is not an integer literal", WithBody({"call cp_async_wait(1.0)"}),
       "t.kir:5:24: argument 1 of 'cp_async_wait' must be an integer literal"},
      {"bool is not an integer literal", WithBody({"call cp_async_wait(true)"}),
       "t.kir:5:24: argument 1 of 'cp_async_wait' must be an integer literal"},
      {"address of an unknown buffer", WithBody({"call atomic_add(&B[0], 1.0)"}),
       "t.kir:5:22: unknown buffer 'B'"},
      {"address of a scalar", WithBody({"call atomic_add(&n[0], 1.0)"}),
       "t.kir:5:22: unknown buffer 'n'"},
      {"address outside a call", WithBody({"A[0] = &A[1]"}),
       "t.kir:5:12: an address (&BUF[i]) is only allowed as an argument of a 'call' statement"},
      {"address inside an argument", WithBody({"call atomic_add(&A[0], 1.0 + &A[1])"}),
       "t.kir:5:34: an address (&BUF[i]) is only allowed as an argument of a 'call' statement"},
      {"unterminated call", WithBody({"call sync_threads("}),
       "t.kir:6:3: expected an expression, got '}'"},
      {"call argument separator", WithBody({"call atomic_add(&A[0] 1.0)"}),
       "t.kir:5:27: expected ',' or ')', got '1.0'"},
      // Programs of several kernels and workspaces (ir.h).
      {"too many kernels",
       "program @t {\n" + Repeat("  kernel grid(1) threads(32) {\n  }\n", 17) + "}\n",
       "t.kir:34:3: a program has at most 16 kernels"},
      {"too many workspaces", "program @t {\n" + Repeat("  workspace w: float32[4]\n", 17) + "}\n",
       "t.kir:18:3: a program has at most 16 workspaces"},
      {"workspace without shape", "program @t {\n  workspace w: float32\n",
       "t.kir:3:1: expected '[', got end of input"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Program> p = Parse(c.text);
    ASSERT_FALSE(p.ok()) << PrintProgram(*p);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(p.status().message()), c.message);
  }
}

// --- hostile input ---------------------------------------------------------------

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(TextParserTest, NestingIsBounded) {
  const std::string too_deep = "t.kir:13:"; // errors point into the stored value's line
  struct DepthCase {
    std::string name;
    std::string ok_expr;
    std::string deep_expr;
  };
  const std::vector<DepthCase> cases = {
      {"parentheses", Repeat("(", 200) + "x" + Repeat(")", 200),
       Repeat("(", 100000) + "x" + Repeat(")", 100000)},
      {"unary operators", Repeat("~", 200) + "x", Repeat("~", 100000) + "x"},
      {"calls", Repeat("abs(", 200) + "x" + Repeat(")", 200),
       Repeat("abs(", 50000) + "x" + Repeat(")", 50000)},
      {"loads", Repeat("X[", 200) + "0" + Repeat("]", 200),
       Repeat("X[", 50000) + "0" + Repeat("]", 50000)},
      {"left-associative chain", "x" + Repeat(" + x", 200), "x" + Repeat(" + x", 100000)},
      {"right-nested chain", Repeat("x + (", 100) + "x" + Repeat(")", 100),
       Repeat("x + (", 50000) + "x" + Repeat(")", 50000)},
  };
  for (const DepthCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(ParseExprText(c.ok_expr).ok()) << ParseExprText(c.ok_expr).status();
    absl::StatusOr<Expr> deep = ParseExprText(c.deep_expr);
    ASSERT_FALSE(deep.ok());
    EXPECT_EQ(std::string(deep.status().message()).substr(0, too_deep.size()), too_deep);
    EXPECT_NE(deep.status().message().find("nesting too deep (more than 256 levels)"),
              std::string::npos)
        << deep.status();
  }
  absl::StatusOr<Program> blocks =
      Parse(WithBody({Repeat("if true { ", 60000) + Repeat("} ", 60000)}));
  ASSERT_FALSE(blocks.ok());
  EXPECT_NE(blocks.status().message().find("nesting too deep"), std::string::npos);
  EXPECT_TRUE(Parse(WithBody({Repeat("if true { ", 200) + Repeat("} ", 200)})).ok());
}

// Long texts: a 16 MB text of one-byte tokens took 2.7 GB and 5 s to lex
// before the parser saw its first error; a program may hold at most 2^18
// tokens and 2^15 statements, and the error is located at the first one too
// many.
TEST(TextParserTest, LengthIsBounded) {
  // 15,000 statements of 20 tokens (`A[0] = 1.0 + 1.0 ...`): past the token
  // limit. The header is 30 tokens; the 262,145th token is then on line
  // 5 + (262144 - 30) / 20 of the text, its token (262144 - 30) % 20 = 14:
  // the `+` at column 40.
  const int first_line = 5; // the body's first line
  const std::string sum = "A[0] = 1.0" + Repeat(" + 1.0", 7);
  absl::StatusOr<Program> tokens = Parse(WithBody(std::vector<std::string>(15000, sum)));
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(tokens.status().message()),
            absl::StrCat("t.kir:", first_line + (262144 - 30) / 20,
                         ":40: program text too long (more than 262144 tokens)"));
  EXPECT_TRUE(Parse(WithBody(std::vector<std::string>(13000, sum))).ok());
  // 40,000 one-token statements: past the statement limit, at the 32769th.
  std::vector<std::string> swizzles(40000, "use_swizzle");
  absl::StatusOr<Program> statements = Parse(WithBody(swizzles));
  ASSERT_FALSE(statements.ok());
  EXPECT_EQ(
      std::string(statements.status().message()),
      absl::StrCat("t.kir:", first_line + 32768, ":5: too many statements (more than 32768)"));
  // Nested statements count too.
  std::vector<std::string> nested(20000, "if true { use_swizzle }");
  absl::StatusOr<Program> nested_statements = Parse(WithBody(nested));
  ASSERT_FALSE(nested_statements.ok());
  EXPECT_EQ(
      std::string(nested_statements.status().message()),
      absl::StrCat("t.kir:", first_line + 16384, ":5: too many statements (more than 32768)"));
  // At the limit, programs parse.
  EXPECT_TRUE(Parse(WithBody(std::vector<std::string>(32768, "use_swizzle"))).ok());
}

// Parsing arbitrary bytes never crashes; whatever parses prints and parses
// back to the same program.
void CheckStable(const std::string& text) {
  absl::StatusOr<Program> p = Parse(text);
  if (!p.ok()) {
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    return;
  }
  std::string printed = PrintProgram(*p);
  absl::StatusOr<Program> q = Parse(printed);
  ASSERT_TRUE(q.ok()) << q.status() << "\n" << printed;
  EXPECT_EQ(Stripped(*q), Stripped(*p));
  EXPECT_EQ(PrintProgram(*q), printed);
}

// Found by the fuzzer: a chain of ~130 unary operators parses, but printed
// with locations each operator is parenthesised, two recursion levels per
// tree level; the printed form must parse again.
TEST(TextParserTest, LocatedUnaryChainParsesAfterPrinting) {
  std::string chain = "x";
  for (int i = 0; i < 200; ++i) chain = "(-" + chain + ")@1:" + std::to_string(i + 1);
  absl::StatusOr<Expr> deep = ParseExprText(chain);
  ASSERT_TRUE(deep.ok()) << deep.status();
  absl::StatusOr<Program> p = Parse(WithBody({"A[0] = " + Repeat("-", 250) + "A[1]"}));
  ASSERT_TRUE(p.ok()) << p.status();
  LocAssigner(7).Run(&*p);
  const std::string printed = PrintProgram(*p, PrintOptions{.locations = true});
  absl::StatusOr<Program> q = Parse(printed);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(PrintProgram(*q, PrintOptions{.locations = true}), printed);
}

TEST(TextParserTest, MutatedInputNeverCrashes) {
  std::mt19937 rng(12345);
  const std::string base = PrintProgram(FullProgram());
  const std::string base_locs = [] {
    Program p = FullProgram();
    LocAssigner(3).Run(&p);
    return PrintProgram(p, PrintOptions{.locations = true});
  }();
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s = iter % 2 ? base : base_locs;
    int edits = 1 + rng() % 4;
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t at = rng() % s.size();
      size_t len = 1 + rng() % 12;
      switch (rng() % 5) {
      case 0:
        s.erase(at, len);
        break;
      case 1:
        s.insert(at, 1, static_cast<char>(rng() % 256));
        break;
      case 2:
        s.insert(at, s.substr(rng() % s.size(), len));
        break;
      case 3:
        s[at] = kSoup[rng() % (sizeof(kSoup) - 1)];
        break;
      case 4:
        s.resize(at);
        break;
      }
    }
    SCOPED_TRACE(s);
    CheckStable(s);
    if (HasFatalFailure()) return;
  }
  for (int iter = 0; iter < 500; ++iter) {
    std::string s(rng() % 200, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 256);
    CheckStable(iter % 2 ? s : "program @x { kernel grid(1) threads(1) { " + s);
  }
}

TEST(TextParserTest, LooksLikeIrText) {
  EXPECT_TRUE(LooksLikeIrText("program @gemm {"));
  EXPECT_TRUE(LooksLikeIrText("// RUN: kiln-opt %s\n\n  program  @\"x\" {"));
  EXPECT_TRUE(LooksLikeIrText("# comment\nprogram @x"));
  EXPECT_FALSE(LooksLikeIrText(""));
  EXPECT_FALSE(LooksLikeIrText("import tilelang\n"));
  EXPECT_FALSE(LooksLikeIrText("program = make_program()\n"));
  EXPECT_FALSE(LooksLikeIrText("programs @x"));
  EXPECT_FALSE(LooksLikeIrText("@T.prim_func\ndef program(): pass"));
}

} // namespace
} // namespace kiln::ir
