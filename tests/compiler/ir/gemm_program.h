// A valid tiled GEMM program in the tile IR, with locations on every node
// that tests point at, the same with thread IR appended, and small builders.
// Shared by the verifier, canonicalization and hash tests (header-only).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/ir.h"

namespace kiln::ir::test {

inline constexpr DType kI32 = DType::kInt32;
inline constexpr DType kF16 = DType::kFloat16;
inline constexpr DType kF32 = DType::kFloat32;

inline Loc L(int line, int col) { return Loc{line, col}; }
inline Expr V(const std::string& name, DType t = kI32, Loc loc = {}) {
  return VarRef(name, t, loc);
}
inline Expr I(int64_t v, DType t = kI32) { return IntImm(v, t); }
inline Expr Mul(Expr a, Expr b) { return Binary(BinOp::kMul, std::move(a), std::move(b)); }
inline Expr Add(Expr a, Expr b) { return Binary(BinOp::kAdd, std::move(a), std::move(b)); }

inline Buffer Buf(const std::string& name, Scope scope, DType dtype, std::vector<Expr> shape,
                  Loc loc) {
  Buffer b;
  b.name = name;
  b.scope = scope;
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.loc = loc;
  return b;
}

inline Stmt Alloc(Buffer b) {
  Stmt s;
  s.kind = StmtKind::kAlloc;
  s.loc = b.loc;
  s.buffer = std::move(b);
  return s;
}

inline Region Reg(const std::string& buffer, std::vector<std::pair<Expr, Expr>> ranges) {
  Region r;
  r.buffer = buffer;
  for (auto& [min, extent] : ranges) r.ranges.push_back(Range{min, extent});
  return r;
}

inline Region Whole(const std::string& buffer, std::vector<int64_t> shape) {
  Region r;
  r.buffer = buffer;
  for (int64_t e : shape) r.ranges.push_back(Range{I(0), I(e)});
  return r;
}

inline Stmt Op(StmtKind kind, std::vector<Region> regions, Loc loc) {
  Stmt s;
  s.kind = kind;
  s.regions = std::move(regions);
  s.loc = loc;
  return s;
}

inline Stmt Loop(ForKind kind, std::vector<std::string> vars, std::vector<Expr> extents,
                 std::vector<Stmt> body, Loc loc) {
  Stmt s;
  s.kind = StmtKind::kFor;
  s.for_kind = kind;
  s.loop_vars = std::move(vars);
  s.extents = std::move(extents);
  s.body = std::move(body);
  s.loc = loc;
  return s;
}

// Statement indices in the kernel body of Valid().
enum : int {
  kAllocA = 0,
  kAllocB,
  kAllocC,
  kAllocR,
  kAllocCnt,
  kFill,
  kPipe,
  kPar,
  kReduce,
  kIf,
  kLayout,
  kSwizzle,
};
// Inside the pipelined loop.
enum : int { kCopyA = 0, kCopyB, kGemm };

// A tiled GEMM with a ReLU epilogue, a row max and the usual trimmings;
// every node that errors below has a location.
inline Program Valid() {
  Program p;
  p.name = "gemm";
  p.source_name = "gemm.py";
  p.symbols.push_back(Symbol{"M", kI32, L(1, 1)});
  auto param = [&](Buffer b, bool scalar) {
    Param prm;
    prm.buffer = std::move(b);
    prm.is_scalar = scalar;
    p.params.push_back(std::move(prm));
  };
  param(Buf("A", Scope::kGlobal, kF16, {V("M"), I(512)}, L(2, 1)), false);
  param(Buf("B", Scope::kGlobal, kF16, {I(512), I(256)}, L(3, 1)), false);
  param(Buf("C", Scope::kGlobal, kF16, {V("M"), I(256)}, L(4, 1)), false);
  param(Buf("alpha", Scope::kGlobal, kF32, {}, L(5, 1)), true);
  p.params.back().buffer.scope = Scope::kGlobal;

  Kernel& k = p.kernel;
  k.loc = L(6, 5);
  k.grid = {I(2), Binary(BinOp::kFloorDiv, Add(V("M"), I(127)), I(128))};
  k.block_vars = {"bx", "by"};
  k.threads = {128};

  k.body.push_back(Alloc(Buf("A_s", Scope::kShared, kF16, {I(128), I(32)}, L(7, 9))));
  k.body.push_back(Alloc(Buf("B_s", Scope::kShared, kF16, {I(32), I(128)}, L(8, 9))));
  k.body.push_back(Alloc(Buf("C_l", Scope::kFragment, kF32, {I(128), I(128)}, L(9, 9))));
  k.body.push_back(Alloc(Buf("R", Scope::kFragment, kF32, {I(128)}, L(10, 9))));
  Buffer cnt = Buf("cnt", Scope::kVar, kI32, {I(1)}, L(11, 9));
  cnt.has_init = true;
  cnt.init = I(0);
  k.body.push_back(Alloc(cnt));

  Stmt fill = Op(StmtKind::kFill, {Whole("C_l", {128, 128})}, L(12, 9));
  fill.has_value = true;
  fill.value = FloatImm(0.0, kF32);
  k.body.push_back(fill);

  std::vector<Stmt> pipe_body;
  pipe_body.push_back(
      Op(StmtKind::kCopy,
         {Reg("A", {{Mul(V("by"), I(128)), I(128)}, {Mul(V("k", kI32, L(14, 30)), I(32)), I(32)}}),
          Whole("A_s", {128, 32})},
         L(14, 13)));
  pipe_body.push_back(Op(StmtKind::kCopy,
                         {Reg("B", {{Mul(V("k"), I(32)), I(32)}, {Mul(V("bx"), I(128)), I(128)}}),
                          Whole("B_s", {32, 128})},
                         L(15, 13)));
  pipe_body.push_back(
      Op(StmtKind::kGemm,
         {Whole("A_s", {128, 32}), Whole("B_s", {32, 128}), Whole("C_l", {128, 128})}, L(16, 13)));
  Stmt pipe = Loop(ForKind::kPipelined, {"k"}, {I(16)}, std::move(pipe_body), L(13, 9));
  pipe.num_stages = 3;
  k.body.push_back(pipe);

  Stmt store;
  store.kind = StmtKind::kStore;
  store.loc = L(18, 13);
  store.name = "C_l";
  store.indices = {V("i"), V("j")};
  store.has_value = true;
  store.value = Mul(Binary(BinOp::kMax, Load("C_l", kF32, {V("i"), V("j")}), FloatImm(0.0, kF32)),
                    V("alpha", kF32));
  k.body.push_back(Loop(ForKind::kParallel, {"i", "j"}, {I(128), I(128)}, {store}, L(17, 9)));

  Stmt reduce = Op(StmtKind::kReduce, {Whole("C_l", {128, 128}), Whole("R", {128})}, L(19, 9));
  reduce.reduce_kind = ReduceKind::kMax;
  reduce.dim = 1;
  k.body.push_back(reduce);

  Stmt iff;
  iff.kind = StmtKind::kIf;
  iff.loc = L(20, 9);
  iff.cond = Binary(BinOp::kLt, Mul(V("by"), I(128)), V("M"), L(20, 12));
  iff.body.push_back(Op(StmtKind::kCopy,
                        {Whole("C_l", {128, 128}), Reg("C", {{Mul(V("by"), I(128)), I(128)},
                                                             {Mul(V("bx"), I(128)), I(128)}})},
                        L(21, 13)));
  k.body.push_back(iff);

  Stmt layout;
  layout.kind = StmtKind::kAnnotateLayout;
  layout.loc = L(22, 9);
  layout.name = "A_s";
  layout.layout = "swizzled";
  k.body.push_back(layout);

  Stmt swizzle;
  swizzle.kind = StmtKind::kUseSwizzle;
  swizzle.loc = L(23, 9);
  swizzle.panel_size = 10;
  k.body.push_back(swizzle);
  return p;
}

inline Stmt& Pipe(Program& p, int i) { return p.kernel.body[kPipe].body[i]; }
inline Stmt& ParStore(Program& p) { return p.kernel.body[kPar].body[0]; }

// Valid() with lowered-looking statements appended: a flattened local
// buffer and calls of every argument kind.
enum : int { kAllocFrag = kSwizzle + 1, kSync, kLdmatrix, kCpAsync, kWait, kShfl, kAtomicAdd };

inline Program ThreadProgram() {
  Program p = Valid();
  std::vector<Stmt>& b = p.kernel.body;
  b.push_back(Alloc(Buf("A_frag", Scope::kLocal, kF16, {I(8)}, L(24, 9))));
  b.push_back(CallStmt("sync_threads", {}, L(25, 9)));
  b.push_back(CallStmt("ldmatrix_x4",
                       {Address("A_frag", kF16, I(0), L(26, 26)),
                        Address("A_s", kF16, Mul(ThreadIdx(0), I(8)), L(26, 38))},
                       L(26, 9)));
  // A 2-D global tensor and a 2-D shared buffer, addressed by flat offsets.
  b.push_back(
      CallStmt("cp_async_16",
               {Address("A_s", kF16, Mul(ThreadIdx(0), I(8))),
                Address("A", kF16, Add(Mul(V("by"), I(65536)), Mul(ThreadIdx(0), I(8)))), I(16)},
               L(27, 9)));
  b.push_back(CallStmt("cp_async_wait", {I(0, DType::kInt64)}, L(28, 9)));
  b.push_back(CallStmt(
      "shfl_xor", {Address("R", kF32, I(0)), Load("R", kF32, {I(1)}, L(29, 30)), I(16)}, L(29, 9)));
  b.push_back(CallStmt("atomic_add",
                       {Address("C", kF16, V("bx")), Load("A_frag", kF16, {I(1)}, L(30, 35))},
                       L(30, 9)));
  return p;
}

inline Stmt& CallAt(Program& p, int i) { return p.kernel.body[i]; }

// Applies `rename` to every definition and use of a name, and `reloc` to
// every location: a cosmetic edit of the program. A renamed symbol or
// parameter keeps the name its user knows it by (its user_name, ir.h), as
// when the frontend renames a reserved word; with `user_names` the user's
// names change too, which is not cosmetic (launch metadata shows them).
struct Cosmetic {
  std::map<std::string, std::string> rename;
  int line_shift = 0;
  bool user_names = false;

  // Renames an interface name, keeping or renaming the user's name.
  void Interface(std::string* n, std::string* user_name) const {
    auto it = rename.find(*n);
    if (it == rename.end()) return;
    if (user_names) {
      user_name->clear();
    } else if (user_name->empty()) {
      *user_name = *n;
    }
    *n = it->second;
  }

  void Name(std::string* n) const {
    auto it = rename.find(*n);
    if (it != rename.end()) *n = it->second;
  }
  void At(Loc* loc) const {
    if (loc->line > 0) loc->line += line_shift;
  }
  void Apply(Expr* e) const {
    At(&e->loc);
    if (e->kind == ExprKind::kVar || e->kind == ExprKind::kLoad || e->kind == ExprKind::kAddress) {
      Name(&e->name);
    }
    for (Expr& a : e->args) Apply(&a);
  }
  void Apply(Buffer* b) const {
    Name(&b->name);
    At(&b->loc);
    for (Expr& e : b->shape) Apply(&e);
    Apply(&b->init);
  }
  void Apply(std::vector<Stmt>* stmts) const {
    for (Stmt& s : *stmts) {
      At(&s.loc);
      Apply(&s.buffer);
      for (Region& r : s.regions) {
        Name(&r.buffer);
        At(&r.loc);
        for (Range& range : r.ranges) {
          Apply(&range.min);
          Apply(&range.extent);
        }
      }
      Apply(&s.value);
      Apply(&s.cond);
      for (std::string& v : s.loop_vars) Name(&v);
      for (Expr& e : s.extents) Apply(&e);
      if (s.kind != StmtKind::kCall) Name(&s.name); // a call names an intrinsic
      for (Expr& e : s.indices) Apply(&e);
      Apply(&s.body);
      Apply(&s.else_body);
    }
  }
  Program operator()(Program p) const {
    for (Symbol& s : p.symbols) {
      Interface(&s.name, &s.user_name);
      At(&s.loc);
    }
    for (Param& prm : p.params) {
      std::string name = prm.buffer.name;
      Interface(&name, &prm.user_name);
      Apply(&prm.buffer);
    }
    for (Expr& e : p.kernel.grid) Apply(&e);
    for (std::string& v : p.kernel.block_vars) Name(&v);
    At(&p.kernel.loc);
    Apply(&p.kernel.body);
    return p;
  }
};

// Renames every name of Valid() so that the alphabetical order of names
// flips, moves every line, and renames the program and its file.
inline Program CosmeticallyEdited(Program p) {
  Cosmetic c;
  c.rename = {{"M", "rows"},     {"A", "z_a"},   {"B", "y_b"},    {"C", "x_c"},
              {"alpha", "s"},    {"bx", "col"},  {"by", "row"},   {"A_s", "tile_a"},
              {"B_s", "tile_b"}, {"C_l", "acc"}, {"R", "rowmax"}, {"cnt", "counter"},
              {"k", "ko"},       {"i", "yy"},    {"j", "xx"}};
  c.line_shift = 3;
  p = c(std::move(p));
  p.name = "my_gemm";
  p.source_name = "other.py";
  return p;
}

} // namespace kiln::ir::test
