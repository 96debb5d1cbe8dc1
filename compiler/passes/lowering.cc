// Tile-op lowering, part 1: the driver, statements, expressions, T.Parallel
// and serial loops, and barrier placement.
//
// 1. Buffers: fragments become per-thread register arrays of their layout's
//    size; shared buffers become flat arrays (x stages when a pipeline
//    multi-buffers them; padded to whole 128-byte lines when swizzled).
// 2. Statements are lowered in order. Before each op that touches shared
//    memory, Touch() inserts a barrier if the access could race with one
//    since the last barrier; a loop whose body writes shared memory (or
//    reads what is dirty) starts each iteration with a barrier.
// 3. A T.Parallel loop becomes an unrolled loop over the registers of its
//    layout; its variables become the element index of (thread, register);
//    fragments are indexed by register through the projection of the loop's
//    layout, so register indices are compile-time constants after
//    unrolling. A fully replicated fragment (every thread holds all of it)
//    may also be indexed element by element, outside a T.Parallel loop or
//    by any index expressions: its register is the element's place in the
//    layout. Every thread runs a statement outside T.Parallel, so a store
//    there updates every copy.
// 4. A reducer (T.alloc_reducer, compiler/ir/reducer.h) is fully replicated
//    and private to each thread until T.finalize_reducer: inside a
//    T.Parallel loop `r[i] = r[i] (op) v` updates the executing thread's own
//    copy (a sum's contribution by the first replica of the loop's
//    iteration only, so each counts once); lower_reduce.cc combines the
//    copies. Before finalize only its updates and T.fill read or write it;
//    after, it is read-only.
#include "compiler/passes/lowering.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/reducer.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/global_layout.h"
#include "compiler/passes/warp_groups.h"
#include "util/status_macros.h"

namespace kiln::passes::lowering {

using ir::BinOp;
using ir::Expr;
using ir::ExprKind;
using ir::Stmt;
using ir::StmtKind;

// --- builders ----------------------------------------------------------------

Expr I(int64_t v) { return ir::IntImm(v); }
Expr Add(Expr a, Expr b) { return ir::Binary(BinOp::kAdd, std::move(a), std::move(b)); }
Expr Mul(Expr a, Expr b) { return ir::Binary(BinOp::kMul, std::move(a), std::move(b)); }
Expr Div(Expr a, int64_t b) { return ir::Binary(BinOp::kFloorDiv, std::move(a), I(b)); }
Expr Mod(Expr a, int64_t b) { return ir::Binary(BinOp::kFloorMod, std::move(a), I(b)); }
Expr Lt(Expr a, Expr b) { return ir::Binary(BinOp::kLt, std::move(a), std::move(b)); }
Expr And(Expr a, Expr b) {
  if (IsTrue(a)) return b;
  if (IsTrue(b)) return a;
  return ir::Binary(BinOp::kAnd, std::move(a), std::move(b));
}
Expr Var(const std::string& name) { return ir::VarRef(name); }
Expr ZeroOf(ir::DType t) { return ir::IsFloat(t) ? ir::FloatImm(0.0, t) : ir::IntImm(0, t); }

Stmt For(const std::string& var, const Expr& extent, ir::ForKind kind, std::vector<Stmt> body) {
  Stmt s;
  s.kind = StmtKind::kFor;
  s.for_kind = kind;
  s.loop_vars = {var};
  s.extents = {ir::Simplify(extent)};
  s.body = std::move(body);
  return s;
}

Stmt Call(const std::string& name, std::vector<Expr> args) {
  Stmt s;
  s.kind = StmtKind::kCall;
  s.name = name;
  s.indices = std::move(args);
  return s;
}

Stmt Store(const std::string& buffer, std::vector<Expr> idx, const Expr& value) {
  Stmt s;
  s.kind = StmtKind::kStore;
  s.name = buffer;
  for (Expr& e : idx) e = ir::Simplify(e);
  s.indices = std::move(idx);
  s.has_value = true;
  s.value = ir::Simplify(value);
  return s;
}

bool IsTrue(const Expr& e) {
  return e.kind == ExprKind::kInt && e.dtype == ir::DType::kBool && e.ival == 1;
}

void Guarded(Expr cond, std::vector<Stmt> body, std::vector<Stmt>* out) {
  cond = ir::Simplify(cond);
  if (body.empty()) return;
  if (IsTrue(cond)) {
    for (Stmt& s : body) out->push_back(std::move(s));
    return;
  }
  if (cond.kind == ExprKind::kInt && cond.ival == 0) return;
  Stmt s;
  s.kind = StmtKind::kIf;
  s.cond = std::move(cond);
  s.body = std::move(body);
  out->push_back(std::move(s));
}

bool IsMultipleOf(const Expr& e, int64_t v) {
  if (v == 1) return true;
  switch (e.kind) {
  case ExprKind::kInt:
    return e.ival % v == 0;
  case ExprKind::kCast:
    return IsMultipleOf(e.args[0], v);
  case ExprKind::kBinary:
    if (e.bop == BinOp::kAdd || e.bop == BinOp::kSub) {
      return IsMultipleOf(e.args[0], v) && IsMultipleOf(e.args[1], v);
    }
    if (e.bop == BinOp::kMul) return IsMultipleOf(e.args[0], v) || IsMultipleOf(e.args[1], v);
    return false;
  default:
    return false;
  }
}

// --- setup ---------------------------------------------------------------------

namespace {

void CollectNames(const ir::Program& p, std::set<std::string>* names) {
  for (const ir::Symbol& s : p.symbols) names->insert(s.name);
  for (const ir::Param& s : p.params) names->insert(s.buffer.name);
  for (const std::string& v : p.kernel.block_vars) names->insert(v);
  ir::ForEachStmt(p.kernel.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::kAlloc) names->insert(s.buffer.name);
    for (const std::string& v : s.loop_vars) names->insert(v);
  });
  ir::ForEachExpr(p, [&](const Expr& e) {
    if (e.kind == ExprKind::kVar) names->insert(e.name);
  });
}

} // namespace

Lowering::Lowering(ir::Program& program, const Target& target, LayoutMap layouts)
    : program_(program), target_(target), layouts_(std::move(layouts)) {}

absl::Status Lowering::Error(ir::Loc loc, const std::string& message) const {
  return ir::ErrorAt(program_.source_name, loc, message);
}

std::string Lowering::Fresh(const std::string& base) {
  for (;;) {
    std::string name = absl::StrCat("kiln_", base, fresh_++);
    if (names_.insert(name).second) return name;
  }
}

const Buf* Lowering::FindBuf(const std::string& name) const {
  auto it = bufs_.find(name);
  return it == bufs_.end() ? nullptr : &it->second;
}

Stmt Lowering::LocalAlloc(const std::string& name, ir::DType dtype, int64_t size) {
  Stmt s;
  s.kind = StmtKind::kAlloc;
  s.buffer.name = name;
  s.buffer.dtype = dtype;
  s.buffer.scope = ir::Scope::kLocal;
  s.buffer.shape = {I(size)};
  Buf b;
  b.name = name;
  b.dtype = dtype;
  b.scope = ir::Scope::kLocal;
  b.shape = {size};
  b.shape_expr = {I(size)};
  b.size = size;
  bufs_[name] = b;
  return s;
}

absl::Status Lowering::Run() {
  threads_ = BlockThreads(program_);
  const std::vector<int64_t>& t = program_.kernel.threads;
  tid_ = ir::ThreadIdx(0);
  if (t.size() > 1) tid_ = Add(tid_, Mul(ir::ThreadIdx(1), I(t[0])));
  if (t.size() > 2) tid_ = Add(tid_, Mul(ir::ThreadIdx(2), I(t[0] * t[1])));
  tid_ = ir::Simplify(tid_);
  CollectNames(program_, &names_);
  for (size_t d = 0; d < program_.kernel.block_vars.size(); ++d) {
    if (std::optional<int64_t> g = ir::ConstInt(ir::Simplify(program_.kernel.grid[d]))) {
      var_max_[program_.kernel.block_vars[d]] = *g - 1;
    }
  }

  for (const ir::Param& p : program_.params) {
    Buf b;
    b.name = p.buffer.name;
    b.dtype = p.buffer.dtype;
    b.scope = p.is_scalar ? ir::Scope::kVar : ir::Scope::kGlobal;
    b.shape_expr = p.buffer.shape;
    b.loc = p.buffer.loc;
    RETURN_IF_ERROR(AttachGlobalLayout(p, program_.source_name, &b)); // T.Layout (index_layout)
    if (!p.is_scalar) bufs_[b.name] = b;
  }
  {
    auto g = program_.attrs.find(kGemmAttr);
    wgmma_ = g != program_.attrs.end() && g->second == "wgmma";
  }
  std::map<std::string, int> stages;
  CollectPipelineStages(program_.kernel.body, &stages);
  std::vector<const Stmt*> allocs;
  ir::ForEachStmt(program_.kernel.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::kAlloc) allocs.push_back(&s);
  });
  for (const Stmt* s : allocs) {
    Buf b;
    b.name = s->buffer.name;
    b.dtype = s->buffer.dtype;
    b.scope = s->buffer.scope == ir::Scope::kSharedDyn ? ir::Scope::kShared : s->buffer.scope;
    b.shape_expr = s->buffer.shape;
    b.loc = s->loc;
    b.size = 1;
    for (const Expr& e : s->buffer.shape) {
      std::optional<int64_t> v = ir::ConstInt(ir::Simplify(e));
      if (!v || *v <= 0) {
        return Error(s->loc, absl::StrCat("buffer '", b.name, "' needs a constant shape"));
      }
      b.shape.push_back(*v);
      b.size *= *v;
    }
    if (b.scope == ir::Scope::kFragment) {
      auto it = layouts_.find(b.name);
      if (it == layouts_.end()) {
        return Error(s->loc, absl::StrCat("fragment '", b.name, "' has no layout"));
      }
      b.layout = &it->second;
    }
    if (b.scope == ir::Scope::kShared) {
      auto it = program_.attrs.find(absl::StrCat("layout.", b.name));
      const int64_t line = 128 / std::max(1, ir::DTypeBits(b.dtype) / 8);
      if (it != program_.attrs.end() && it->second == kSwizzleLayout) {
        b.swizzle = true;
        b.size = (b.size + line - 1) / line * line;
      }
      if (it != program_.attrs.end() && it->second.rfind(kWgmmaLayoutPrefix, 0) == 0) {
        const std::string w = it->second.substr(std::string_view(kWgmmaLayoutPrefix).size());
        // W elements of 2 (f16/bf16) or 1 (fp8) bytes: a 128-, 64- or
        // 32-byte swizzle row.
        const int64_t eb = ir::DTypeBits(b.dtype) / 8;
        b.wgmma_block = w == "128" ? 128 : w == "64" ? 64 : w == "32" ? 32 : w == "16" ? 16 : 0;
        const int64_t row = b.wgmma_block * eb;
        if (b.wgmma_block == 0 || b.shape.size() != 2 || b.shape[0] % 8 != 0 ||
            b.shape[1] % b.wgmma_block != 0 || (eb != 1 && eb != 2) ||
            (row != 128 && row != 64 && row != 32)) {
          return Error(s->loc, absl::StrCat("buffer '", b.name, "': layout ", it->second,
                                            " needs a 2-d 16-bit or 8-bit tile with rows a "
                                            "multiple of 8 and columns of the block width, ",
                                            "whose block is 128, 64 or 32 bytes"));
        }
        // Aligned to the swizzle period (the emitter reads this).
        program_.attrs[absl::StrCat("kiln.smem_align.", b.name)] = "1024";
      }
      auto st = stages.find(b.name);
      if (st != stages.end()) b.stages = st->second;
    }
    bufs_[b.name] = b;
  }
  std::map<std::string, ir::ReduceKind> reducers;
  ir::CollectReducers(program_.kernel.body, &reducers);
  for (const auto& [name, kind] : reducers) {
    auto it = bufs_.find(name);
    if (it == bufs_.end() || it->second.scope != ir::Scope::kFragment ||
        !FullyReplicated(*it->second.layout)) {
      return Error(
          it == bufs_.end() ? ir::Loc{} : it->second.loc,
          absl::StrCat("'", name, "' is marked a reducer but is not a fully replicated fragment"));
    }
    it->second.reducer = kind;
  }

  // A program with its own T.ws regions and barriers keeps its schedule.
  own_sync_ = HasExplicitSync(program_.kernel.body);
  ws_overlap_ = program_.attrs.count(kWsOverlapAttr) > 0;
  if (auto t = program_.attrs.find(kTmaStoreAttr); t != program_.attrs.end()) {
    tma_store_ = true;
    tma_store_auto_ = t->second == "auto";
    program_.attrs.erase(t);
  }
  if (auto c = program_.attrs.find(kClusterAttr); c != program_.attrs.end()) {
    cluster_ = std::atoll(c->second.c_str());
    program_.attrs.erase(c);
  }
  ws_ = !own_sync_ && WarpSpecializable();
  if (ws_) {
    const std::vector<const Stmt*> nest = PipelinedNest().value_or(std::vector<const Stmt*>{});
    ws_nest_.insert(nest.begin(), nest.end());
  }

  std::vector<Stmt> body;
  RETURN_IF_ERROR(LowerStmts(program_.kernel.body, &body));
  std::vector<Stmt> full = std::move(top_allocs_);
  for (Stmt& s : body) full.push_back(std::move(s));
  if (!ws_producer_.empty()) {
    SplitWarpGroups(&full);
  } else if (program_.attrs.count(kPipelineAttr)) {
    program_.attrs[kPipelineAttr] = kPipelineCpAsync; // asked for TMA, fell back
  }
  program_.attrs.erase(kWsBlocksAttr); // read by the register plan (SplitWarpGroups) only
  program_.attrs.erase(kWsOverlapAttr);
  program_.kernel.body = std::move(full);
  program_.attrs["kiln.level"] = "thread";
  return absl::OkStatus();
}

// --- indexing --------------------------------------------------------------------

Expr Lowering::GlobalFlat(const Buf& b, const std::vector<Expr>& idx) {
  if (b.index_layout) return GlobalLayoutFlat(b, idx); // T.Layout: global_layout.h
  Expr flat = ir::IntImm(0, ir::DType::kInt64);
  Expr stride = ir::IntImm(1, ir::DType::kInt64);
  for (size_t d = idx.size(); d-- > 0;) {
    flat = Add(flat, Mul(ir::Cast(ir::DType::kInt64, idx[d]), stride));
    stride = Mul(stride, ir::Cast(ir::DType::kInt64, b.shape_expr[d]));
  }
  return ir::Simplify(flat);
}

Expr Lowering::SharedPhys(const Buf& b, const std::vector<Expr>& idx) {
  Expr flat = I(0);
  int64_t stride = 1;
  for (size_t d = idx.size(); d-- > 0;) {
    flat = Add(flat, Mul(idx[d], I(stride)));
    stride *= b.shape[d];
  }
  flat = ir::Simplify(flat);
  if (b.wgmma_block > 0 && idx.size() == 2) {
    // Column block c / W of R x W elements, row r at r * W; 16-byte chunk
    // (c % W) / E (E = 16 / element bytes) XORed with the address bits from
    // 128 bytes up (r / (128 / row bytes), modulo the row's chunks): wgmma's
    // 128/64/32-byte swizzle.
    const int64_t eb = std::max(1, ir::DTypeBits(b.dtype) / 8);
    const int64_t w = b.wgmma_block, e = 16 / eb, nb = w / e, rows = b.shape[0];
    const Expr& r = idx[0];
    const Expr& c = idx[1];
    Expr key = Mod(Div(r, 128 / (w * eb)), nb);
    Expr chunk = ir::Binary(BinOp::kBitXor, Div(Mod(c, w), e), key);
    flat = Add(Add(Add(Mul(Div(c, w), I(rows * w)), Mul(r, I(w))), Mul(chunk, I(e))), Mod(c, e));
  } else if (b.swizzle) {
    const int64_t bytes = std::max(1, ir::DTypeBits(b.dtype) / 8);
    const int64_t chunk = 16 / bytes, line = 128 / bytes;
    const int64_t row = b.shape.back();
    Expr key = row * bytes >= 128 ? Mod(Div(flat, row), 8) : Mod(Div(flat, line), 8);
    Expr chunk_ix = ir::Binary(BinOp::kBitXor, Mod(Div(flat, chunk), line / chunk), key);
    flat = Add(Add(Mul(Div(flat, line), I(line)), Mul(chunk_ix, I(chunk))), Mod(flat, chunk));
  }
  auto st = stage_.find(b.name);
  if (st != stage_.end()) flat = Add(flat, Mul(st->second, I(b.size)));
  return ir::Simplify(flat);
}

absl::StatusOr<Expr> Lowering::FlatIndex(const Buf& b, const std::vector<Expr>& idx) {
  switch (b.scope) {
  case ir::Scope::kShared:
  case ir::Scope::kSharedDyn:
    return SharedPhys(b, idx);
  case ir::Scope::kLocal:
  case ir::Scope::kVar:
  case ir::Scope::kBarrier: {
    Expr flat = I(0);
    int64_t stride = 1;
    for (size_t d = idx.size(); d-- > 0;) {
      flat = Add(flat, Mul(idx[d], I(stride)));
      stride *= b.shape.empty() ? 1 : b.shape[d];
    }
    return ir::Simplify(flat);
  }
  case ir::Scope::kGlobal:
    return GlobalFlat(b, idx);
  case ir::Scope::kFragment:
    break;
  }
  return Error(b.loc, absl::StrCat("internal: fragment '", b.name, "' indexed without a layout"));
}

absl::StatusOr<Expr> Lowering::FragmentReg(const Buf& b, const std::vector<Expr>& original,
                                           ir::Loc loc, bool write) {
  std::optional<std::vector<int>> dims;
  if (b.reducer) {
    // Each thread's own copy, element by element (overview, 4.).
    if (write && b.reducer_final) {
      return Error(loc, absl::StrCat("reducer '", b.name,
                                     "' is written after T.finalize_reducer; it is read-only "
                                     "from then on (copy it to a fragment to change it)"));
    }
    if (!write && !b.reducer_final && reducer_update_ != b.name) {
      return Error(loc, absl::StrCat("reducer '", b.name,
                                     "' is read before T.finalize_reducer; until then each "
                                     "thread holds only its own part of it"));
    }
  } else if (loop_) {
    dims = LoopDims(original, loop_->vars);
  }
  if (dims) {
    const FragmentLayout projected = Project(loop_->layout, *dims, b.shape);
    if (projected == Normalize(*b.layout)) {
      std::vector<bool> kept(loop_->layout.shape.size(), false);
      for (int d : *dims) kept[d] = true;
      Expr reg = I(0);
      int64_t place = 1;
      for (size_t k = 0; k < loop_->layout.reg.size(); ++k) {
        const LayoutDigit& d = loop_->layout.reg[k];
        if (!kept[d.dim]) continue;
        reg = Add(reg, Mul(RegDigit(loop_->layout, k, loop_->reg), I(place)));
        place *= d.size;
      }
      return ir::Simplify(reg);
    }
    if (write || !FullyReplicated(*b.layout)) {
      return Error(loc, absl::StrCat("fragment '", b.name, "' has layout ", b.layout->ToString(),
                                     " but this T.Parallel loop runs with ", projected.ToString()));
    }
  }
  // Element by element: only a fully replicated fragment (every thread
  // holds every element) can be indexed so; layout inference gives such
  // fragments that layout or a located error.
  if (!FullyReplicated(*b.layout)) {
    return Error(loc, absl::StrCat("fragment '", b.name, "' (layout ", b.layout->ToString(),
                                   ") is spread over threads: index it only inside a T.Parallel "
                                   "loop, by distinct variables of the loop"));
  }
  // A write must reach every thread's copy: outside a T.Parallel loop every
  // thread runs it; inside one, only when every thread runs every iteration.
  if (write && loop_ && !b.reducer && !FullyReplicated(loop_->layout)) {
    return Error(loc, absl::StrCat("fragment '", b.name,
                                   "' is written by indices that are not distinct variables of "
                                   "the enclosing T.Parallel loop, whose iterations are spread "
                                   "over threads: each thread would update only its own copy "
                                   "(write it outside the loop, or index it by the loop's "
                                   "variables)"));
  }
  std::vector<Expr> idx;
  for (const Expr& a : original) {
    ASSIGN_OR_RETURN(Expr x, LowerExpr(a));
    idx.push_back(std::move(x));
  }
  return RegisterOf(*b.layout, idx);
}

absl::StatusOr<Expr> Lowering::ElementLoad(const Buf& b, const std::vector<Expr>& idx) {
  if (b.scope == ir::Scope::kGlobal && !b.index_layout) return ir::Load(b.name, b.dtype, idx);
  ASSIGN_OR_RETURN(Expr flat, FlatIndex(b, idx));
  return ir::Load(b.name, b.dtype, {flat});
}

absl::StatusOr<Stmt> Lowering::ElementStore(const Buf& b, const std::vector<Expr>& idx,
                                            Expr value) {
  if (value.dtype != b.dtype) value = ir::Cast(b.dtype, value);
  if (b.scope == ir::Scope::kGlobal && !b.index_layout) return Store(b.name, idx, value);
  ASSIGN_OR_RETURN(Expr flat, FlatIndex(b, idx));
  return Store(b.name, {flat}, value);
}

Expr Lowering::Address(const Buf& b, const Expr& flat) {
  Expr e;
  e.kind = ExprKind::kAddress;
  e.dtype = b.dtype;
  e.name = b.name;
  e.args = {ir::Simplify(flat)};
  return e;
}

// --- barriers ----------------------------------------------------------------------

void Lowering::Barrier(std::vector<Stmt>* out) {
  out->push_back(named_barrier_ > 0 ? Call("named_barrier_sync", {I(named_barrier_), I(threads_)})
                                    : Call("sync_threads", {}));
  dirty_.clear();
  read_.clear();
  atomic_only_.clear();
}

void Lowering::Touch(const std::set<std::string>& reads, const std::set<std::string>& writes,
                     std::vector<Stmt>* out, bool atomic) {
  bool hazard = false;
  for (const std::string& r : reads) hazard = hazard || dirty_.count(r) > 0;
  for (const std::string& w : writes) {
    // Atomics after atomics need no barrier between them.
    const bool atomics_only = atomic && atomic_only_.count(w) > 0;
    hazard = hazard || (dirty_.count(w) > 0 && !atomics_only) || read_.count(w) > 0;
  }
  if (hazard) Barrier(out);
  for (const std::string& w : writes) {
    if (!atomic) {
      atomic_only_.erase(w);
    } else if (!dirty_.count(w)) {
      atomic_only_.insert(w);
    }
  }
  proxy_dirty_ = proxy_dirty_ || !writes.empty();
  dirty_.insert(writes.begin(), writes.end());
  read_.insert(reads.begin(), reads.end());
}

void Lowering::SharedAccesses(const Stmt& s, std::set<std::string>* reads,
                              std::set<std::string>* writes) const {
  auto shared = [&](const std::string& name) {
    const Buf* b = FindBuf(name);
    return b && b->scope == ir::Scope::kShared;
  };
  std::function<void(const Expr&)> on_expr = [&](const Expr& e) {
    if ((e.kind == ExprKind::kLoad || e.kind == ExprKind::kAddress) && shared(e.name)) {
      reads->insert(e.name);
    }
    for (const Expr& a : e.args) on_expr(a);
  };
  std::function<void(const Stmt&)> on_stmt = [&](const Stmt& st) {
    switch (st.kind) {
    case StmtKind::kCopy:
    case StmtKind::kAtomic:
      if (!st.regions.empty() && shared(st.regions[0].buffer)) {
        (st.kind == StmtKind::kCopy ? reads : writes)->insert(st.regions[0].buffer);
      }
      if (st.regions.size() > 1 && shared(st.regions[1].buffer)) {
        (st.kind == StmtKind::kCopy ? writes : reads)->insert(st.regions[1].buffer);
      }
      break;
    case StmtKind::kGemm:
      for (int k = 0; k < 2; ++k) {
        if (shared(st.regions[k].buffer)) reads->insert(st.regions[k].buffer);
      }
      break;
    case StmtKind::kFill:
      if (shared(st.regions[0].buffer)) writes->insert(st.regions[0].buffer);
      break;
    case StmtKind::kStore:
      if (shared(st.name)) writes->insert(st.name);
      break;
    default:
      break;
    }
    for (const ir::Region& r : st.regions) {
      for (const ir::Range& rg : r.ranges) {
        on_expr(rg.min);
        on_expr(rg.extent);
      }
    }
    if (st.has_value) on_expr(st.value);
    for (const Expr& e : st.indices) on_expr(e);
    for (const Expr& e : st.extents) on_expr(e);
    if (st.kind == StmtKind::kIf || st.kind == StmtKind::kAssert) on_expr(st.cond);
    for (const Stmt& b : st.body) on_stmt(b);
    for (const Stmt& b : st.else_body) on_stmt(b);
  };
  on_stmt(s);
}

// --- statements ----------------------------------------------------------------------

absl::Status Lowering::LowerStmts(const std::vector<Stmt>& in, std::vector<Stmt>* out) {
  for (size_t i = 0; i < in.size();) {
    if (in[i].kind == StmtKind::kWarpSpecialize) {
      size_t end = i + 1;
      while (end < in.size() && in[end].kind == StmtKind::kWarpSpecialize) ++end;
      RETURN_IF_ERROR(LowerRegionRun(in, i, end, out));
      i = end;
      continue;
    }
    RETURN_IF_ERROR(LowerStmt(in[i], out));
    ++i;
  }
  return absl::OkStatus();
}

absl::StatusOr<Expr> Lowering::LowerExpr(const Expr& e) {
  if (e.kind == ExprKind::kVar) {
    auto it = env_.find(e.name);
    if (it != env_.end()) return it->second;
    return e;
  }
  if (e.kind == ExprKind::kLoad) {
    const Buf* b = FindBuf(e.name);
    if (!b) return Error(e.loc, absl::StrCat("unknown buffer '", e.name, "'"));
    if (b->scope == ir::Scope::kFragment) {
      ASSIGN_OR_RETURN(Expr reg, FragmentReg(*b, e.args, e.loc, /*write=*/false));
      return ir::Load(b->name, b->dtype, {reg}, e.loc);
    }
    std::vector<Expr> idx;
    for (const Expr& a : e.args) {
      ASSIGN_OR_RETURN(Expr x, LowerExpr(a));
      idx.push_back(std::move(x));
    }
    ASSIGN_OR_RETURN(Expr load, ElementLoad(*b, idx));
    load.loc = e.loc;
    return load;
  }
  Expr out = e;
  for (Expr& a : out.args) {
    ASSIGN_OR_RETURN(a, LowerExpr(a));
  }
  return out;
}

absl::Status Lowering::LowerStore(const Stmt& s, std::vector<Stmt>* out) {
  const Buf* b = FindBuf(s.name);
  if (!b) return Error(s.loc, absl::StrCat("unknown buffer '", s.name, "'"));
  if (!loop_) {
    std::set<std::string> reads, writes;
    SharedAccesses(s, &reads, &writes);
    Touch(reads, writes, out);
  }
  if (b->reducer && !b->reducer_final) {
    RETURN_IF_ERROR(CheckReducerUpdate(*b, s));
    reducer_update_ = b->name;
  }
  absl::StatusOr<Expr> lowered = LowerExpr(s.value);
  reducer_update_.clear();
  ASSIGN_OR_RETURN(Expr value, std::move(lowered));
  Stmt st;
  if (b->scope == ir::Scope::kFragment) {
    ASSIGN_OR_RETURN(Expr reg, FragmentReg(*b, s.indices, s.loc, /*write=*/true));
    if (value.dtype != b->dtype) value = ir::Cast(b->dtype, value);
    st = Store(b->name, {reg}, value);
  } else {
    std::vector<Expr> idx;
    for (const Expr& a : s.indices) {
      ASSIGN_OR_RETURN(Expr x, LowerExpr(a));
      idx.push_back(std::move(x));
    }
    ASSIGN_OR_RETURN(st, ElementStore(*b, idx, value));
  }
  st.loc = s.loc;
  const bool shared_or_global = b->scope == ir::Scope::kGlobal || b->scope == ir::Scope::kShared;
  if (b->reducer == ir::ReduceKind::kSum) {
    // A contribution counts once: by the first of the threads that run
    // this iteration (outside a T.Parallel loop every thread runs it).
    Guarded(loop_ ? IsFirstReplica(loop_->layout, tid_) : IsFirstReplica(*b->layout, tid_),
            {std::move(st)}, out);
  } else if (loop_ && shared_or_global && loop_->layout.HasReplication()) {
    Guarded(IsFirstReplica(loop_->layout, tid_), {std::move(st)}, out);
  } else {
    out->push_back(std::move(st));
  }
  return absl::OkStatus();
}

absl::Status Lowering::CheckReducerOperands(const Stmt& s) const {
  for (size_t k = 0; k < s.regions.size(); ++k) {
    const Buf* b = FindBuf(s.regions[k].buffer);
    if (!b || !b->reducer) continue;
    const size_t dst_at = s.kind == StmtKind::kAtomic ? 0 : s.kind == StmtKind::kGemm ? 2 : 1;
    const bool dst = k == dst_at;
    const ir::Loc loc = s.regions[k].loc.line ? s.regions[k].loc : s.loc;
    if (s.kind == StmtKind::kFill) {
      if (b->reducer_final) {
        return Error(loc, absl::StrCat("reducer '", b->name,
                                       "' is written after T.finalize_reducer; it is read-only "
                                       "from then on (copy it to a fragment to change it)"));
      }
      continue;
    }
    if (dst) {
      return Error(loc, absl::StrCat("reducer '", b->name,
                                     "' can only be written by T.fill/T.clear and updates "
                                     "r[i] = r[i] (op) v inside T.Parallel"));
    }
    if (!b->reducer_final) {
      return Error(loc, absl::StrCat("reducer '", b->name,
                                     "' is read before T.finalize_reducer; until then each "
                                     "thread holds only its own part of it"));
    }
  }
  return absl::OkStatus();
}

absl::Status Lowering::CheckReducerFill(const Stmt& s) const {
  const Buf* b = FindBuf(s.regions[0].buffer);
  if (!b || b->reducer != ir::ReduceKind::kSum) return absl::OkStatus();
  // Every thread's copy starts at the value and finalize adds the copies:
  // only 0 means what it says (max and min take any starting value).
  std::optional<double> v;
  const Expr value = ir::Simplify(s.value);
  if (value.kind == ExprKind::kInt) v = static_cast<double>(value.ival);
  if (value.kind == ExprKind::kFloat) v = value.fval;
  if (!v || *v != 0) {
    return Error(s.loc, absl::StrCat("a sum reducer ('", b->name,
                                     "') must start at 0 (T.clear): each thread's copy starts "
                                     "at the fill value and T.finalize_reducer adds the copies"));
  }
  return absl::OkStatus();
}

absl::Status Lowering::CheckReducerUpdate(const Buf& b, const Stmt& s) const {
  // r[idx] = r[idx] (op) v, either operand order, v not reading r; the
  // conversions the frontend puts around r and the result when v has
  // another dtype do not count.
  auto uncast = [](const Expr& e) -> const Expr& {
    return e.kind == ExprKind::kCast && e.args.size() == 1 ? e.args[0] : e;
  };
  const Expr& value = uncast(s.value);
  const BinOp op = *b.reducer == ir::ReduceKind::kMax   ? BinOp::kMax
                   : *b.reducer == ir::ReduceKind::kMin ? BinOp::kMin
                                                        : BinOp::kAdd;
  auto is_self = [&](const Expr& operand) {
    const Expr& e = uncast(operand);
    if (e.kind != ExprKind::kLoad || e.name != b.name || e.args.size() != s.indices.size()) {
      return false;
    }
    for (size_t k = 0; k < e.args.size(); ++k) {
      if (!ir::ProvablyEqual(e.args[k], s.indices[k])) return false;
    }
    return true;
  };
  std::function<bool(const Expr&)> reads_self = [&](const Expr& e) {
    if (e.kind == ExprKind::kLoad && e.name == b.name) return true;
    for (const Expr& a : e.args) {
      if (reads_self(a)) return true;
    }
    return false;
  };
  const bool ok = value.kind == ExprKind::kBinary && value.bop == op && value.args.size() == 2 &&
                  ((is_self(value.args[0]) && !reads_self(value.args[1])) ||
                   (is_self(value.args[1]) && !reads_self(value.args[0])));
  if (ok) return absl::OkStatus();
  const char* form = op == BinOp::kAdd   ? "r[i] += v"
                     : op == BinOp::kMax ? "r[i] = T.max(r[i], v)"
                                         : "r[i] = T.min(r[i], v)";
  return Error(s.loc,
               absl::StrCat("a store to reducer '", b.name, "' must combine it with its op (", form,
                            ", the same indices on both sides)"));
}

absl::Status Lowering::LowerAtomicElement(const Stmt& s, std::vector<Stmt>* out) {
  const ir::Region& dst = s.regions[0];
  const Buf* b = FindBuf(dst.buffer);
  if (!b || (b->scope != ir::Scope::kGlobal && b->scope != ir::Scope::kShared)) {
    return Error(s.loc, "atomic: the destination must be a global or shared buffer");
  }
  // One element, or a row of `lanes` consecutive ones in the last dimension
  // (T.atomic_addx2/x4: from a region source of the same row), added one
  // element at a time.
  int64_t lanes = 1;
  for (size_t k = 0; k < dst.ranges.size(); ++k) {
    std::optional<int64_t> ext = ir::ConstInt(ir::Simplify(dst.ranges[k].extent));
    const bool last = k + 1 == dst.ranges.size();
    if (ext && *ext == 1) continue;
    if (ext && last && (*ext == 2 || *ext == 4) && !s.has_value && s.regions.size() > 1) {
      lanes = *ext;
      continue;
    }
    return Error(s.loc, "atomic inside T.Parallel: the destination must be one element");
  }
  const auto shifted = [](const ir::Region& region, int64_t lane) {
    std::vector<Expr> idx;
    for (const ir::Range& r : region.ranges) idx.push_back(r.min);
    if (lane > 0 && !idx.empty()) {
      idx.back() = Add(idx.back(), ir::IntImm(lane, idx.back().dtype, idx.back().loc));
    }
    return idx;
  };
  const char* name = s.atomic_op == ir::AtomicOp::kAdd   ? "atomic_add"
                     : s.atomic_op == ir::AtomicOp::kMax ? "atomic_max"
                                                         : "atomic_min";
  std::vector<Stmt> calls;
  for (int64_t lane = 0; lane < lanes; ++lane) {
    std::vector<Expr> idx;
    for (const Expr& e : shifted(dst, lane)) {
      ASSIGN_OR_RETURN(Expr x, LowerExpr(e));
      idx.push_back(std::move(x));
    }
    Expr value;
    if (s.has_value) {
      ASSIGN_OR_RETURN(value, LowerExpr(s.value));
    } else if (s.regions.size() > 1) {
      const ir::Region& src = s.regions[1];
      ASSIGN_OR_RETURN(
          value, LowerExpr(ir::Load(src.buffer, FindBuf(src.buffer)->dtype, shifted(src, lane))));
    } else {
      return Error(s.loc, "atomic: missing value");
    }
    if (value.dtype != b->dtype) value = ir::Cast(b->dtype, value);
    ASSIGN_OR_RETURN(Expr flat, FlatIndex(*b, idx));
    Stmt call = Call(name, {Address(*b, flat), ir::Simplify(value)});
    call.loc = s.loc;
    calls.push_back(std::move(call));
  }
  if (!loop_) {
    // Every thread runs it: a write of the destination by another thread
    // since the last barrier (the program's `if tk == 0: s[tn] = 0`) or a
    // read of it must be ordered before it, and later reads after it
    // (T.Parallel loops order their own accesses: LowerParallel).
    std::set<std::string> reads, writes;
    SharedAccesses(s, &reads, &writes);
    Touch(reads, writes, out, /*atomic=*/true);
  }
  if (loop_ && loop_->layout.HasReplication()) {
    Guarded(IsFirstReplica(loop_->layout, tid_), std::move(calls), out);
  } else {
    for (Stmt& c : calls) out->push_back(std::move(c));
  }
  return absl::OkStatus();
}

absl::Status Lowering::LowerParallel(const Stmt& s, std::vector<Stmt>* out) {
  // Layout inference fuses perfect nests; a program lowered without it
  // (layouts given as attrs) gets the same loop here.
  if (IsParallelNest(s)) return LowerParallel(FuseParallelNest(s), out);
  if (loop_) {
    return Error(s.loc, "a T.Parallel loop nested in another must be the whole body of the outer "
                        "one (then the two run as one multi-dimensional T.Parallel)");
  }
  ASSIGN_OR_RETURN(FragmentLayout layout,
                   LoopLayout(program_, s, layouts_, std::nullopt, threads_));
  std::set<std::string> reads, writes;
  SharedAccesses(s, &reads, &writes);
  Touch(reads, writes, out);

  const std::string r = Fresh("r");
  var_max_[r] = layout.NumRegs() - 1;
  const std::vector<Expr> idx = ElementIndex(layout, tid_, Var(r));
  std::map<std::string, Expr> saved = env_;
  for (size_t k = 0; k < s.loop_vars.size(); ++k) env_[s.loop_vars[k]] = idx[k];
  loop_ = LoopCtx{layout, Var(r), s.loop_vars};
  std::vector<Stmt> body;
  absl::Status st = LowerStmts(s.body, &body);
  loop_.reset();
  env_ = std::move(saved);
  RETURN_IF_ERROR(st);
  std::vector<Stmt> loop_body;
  Guarded(layout.HasPadding() ? InBounds(layout, idx) : ir::BoolImm(true), std::move(body),
          &loop_body);
  Stmt loop = For(r, I(layout.NumRegs()), ir::ForKind::kUnroll, std::move(loop_body));
  loop.loc = s.loc;
  out->push_back(std::move(loop));
  return absl::OkStatus();
}

absl::Status Lowering::LowerSerialFor(const Stmt& s, std::vector<Stmt>* out) {
  Stmt loop = s;
  loop.body.clear();
  if (loop.for_kind != ir::ForKind::kUnroll) loop.for_kind = ir::ForKind::kSerial;
  loop.num_stages = 0;
  loop.order.clear();
  loop.stage.clear();
  for (Expr& e : loop.extents) {
    ASSIGN_OR_RETURN(e, LowerExpr(e));
  }
  if (std::optional<int64_t> n = MaxOf(loop.extents[0])) {
    var_max_[loop.loop_vars[0]] = *n - 1;
  }
  // A gemm the body leaves in flight may be at the top of the next
  // iteration.
  const std::set<std::string> body_async = AsyncAccumulators(s.body);
  inflight_.insert(body_async.begin(), body_async.end());
  if (loop_) {
    RETURN_IF_ERROR(LowerStmts(s.body, &loop.body));
    out->push_back(std::move(loop));
    return absl::OkStatus();
  }
  std::set<std::string> reads, writes;
  SharedAccesses(s, &reads, &writes);
  // What the body writes is unfenced at the top of the next iteration.
  proxy_dirty_ = proxy_dirty_ || !writes.empty();
  bool need = !writes.empty();
  for (const std::string& r : reads) need = need || dirty_.count(r) > 0;
  const std::set<std::string> entry_dirty = dirty_, entry_read = read_;
  Stmt header = loop;
  if (need) Barrier(&loop.body);
  RETURN_IF_ERROR(LowerNestBody(s, header, s.body, &loop.body));
  if (!inflight_.empty() && loop.for_kind == ir::ForKind::kSerial) {
    // The body leaves gemms in flight at its end: its last iteration waits
    // for them itself. ptxas was seen to move reads of the accumulators
    // above a wait placed after the loop (docs/design/codegen.md, the
    // epilogue bug), not above one inside it. What follows the loop still
    // counts them in flight (a loop may run no iteration). An unrolled loop
    // has no back edge, and keeping its gemms in flight past it is what its
    // program asks for (FlashMLA's QK^T in pieces).
    const std::set<std::string> inflight = inflight_;
    std::vector<Stmt> drain;
    WaitWgmma(0, &drain);
    inflight_ = inflight;
    Guarded(ir::Binary(ir::BinOp::kEq, ir::Simplify(Add(Var(loop.loop_vars[0]), I(1))),
                       loop.extents[0]),
            std::move(drain), &loop.body);
  }
  dirty_.insert(entry_dirty.begin(), entry_dirty.end());
  read_.insert(entry_read.begin(), entry_read.end());
  out->push_back(std::move(loop));
  return absl::OkStatus();
}

absl::Status Lowering::LowerStmt(const Stmt& s, std::vector<Stmt>* out) {
  auto tile_op_outside = [&](const char* what) -> absl::Status {
    if (!loop_) return absl::OkStatus();
    return Error(s.loc, absl::StrCat(what, " cannot appear inside a T.Parallel loop"));
  };
  switch (s.kind) {
  case StmtKind::kAlloc: {
    const Buf* b = FindBuf(s.buffer.name);
    if (b->scope == ir::Scope::kBarrier) return LowerBarrierAlloc(s, out);
    Stmt a = s;
    if (b->scope == ir::Scope::kFragment) {
      a.buffer.scope = ir::Scope::kLocal;
      a.buffer.shape = {I(b->layout->NumRegs())};
    } else if (b->scope == ir::Scope::kShared) {
      a.buffer.scope = ir::Scope::kSharedDyn;
      a.buffer.shape = {I(b->size * b->stages)};
      // A pipeline's stage buffer allocated in the loop body (TileLang's
      // gemv example) is filled by the prologue before the loop: allocate
      // it with the kernel's own buffers.
      const bool top_level =
          std::any_of(program_.kernel.body.begin(), program_.kernel.body.end(),
                      [&](const Stmt& t) { return t.kind == StmtKind::kAlloc && &t == &s; });
      if (b->stages > 1 && !top_level) {
        top_allocs_.push_back(std::move(a));
        return absl::OkStatus();
      }
    } else if (b->scope == ir::Scope::kLocal) {
      a.buffer.shape = {I(b->size)};
    }
    out->push_back(std::move(a));
    return absl::OkStatus();
  }
  case StmtKind::kCopy:
    RETURN_IF_ERROR(tile_op_outside("T.copy"));
    RETURN_IF_ERROR(CheckReducerOperands(s));
    if (tma_store_ && !ws_producer_.empty()) {
      ASSIGN_OR_RETURN(bool stored, LowerTmaStoreEpilogue(s, out));
      if (stored) return absl::OkStatus();
    }
    return LowerCopy(s, out);
  case StmtKind::kFill:
    RETURN_IF_ERROR(tile_op_outside("T.fill"));
    RETURN_IF_ERROR(CheckReducerOperands(s));
    RETURN_IF_ERROR(CheckReducerFill(s));
    return LowerFill(s, out);
  case StmtKind::kGemm:
    RETURN_IF_ERROR(tile_op_outside("T.gemm"));
    RETURN_IF_ERROR(CheckReducerOperands(s));
    if (HasSharedSlice(s)) return LowerGemmOnSlices(s, out);
    return LowerGemm(s, out);
  case StmtKind::kReduce:
    RETURN_IF_ERROR(tile_op_outside("a reduction"));
    if (s.dim == ir::kReducerFinalizeDim) return LowerFinalizeReducer(s, out);
    RETURN_IF_ERROR(CheckReducerOperands(s));
    return LowerReduce(s, out);
  case StmtKind::kAtomic:
    RETURN_IF_ERROR(CheckReducerOperands(s));
    if (loop_ || s.has_value) return LowerAtomicElement(s, out);
    return LowerCopy(s, out, /*atomic=*/true);
  case StmtKind::kFor:
    if (s.for_kind == ir::ForKind::kParallel) return LowerParallel(s, out);
    // A loop with its own barriers and T.ws regions follows the program's
    // schedule (TileLang does not pipeline it either).
    if (s.for_kind == ir::ForKind::kPipelined && !loop_ && !HasExplicitSync(s.body)) {
      const bool saved = sync_gemms_;
      sync_gemms_ = true;
      absl::Status st = LowerPipelined(s, out);
      sync_gemms_ = saved;
      return st;
    }
    return LowerSerialFor(s, out);
  case StmtKind::kIf: {
    Stmt st = s;
    ASSIGN_OR_RETURN(st.cond, LowerExpr(s.cond));
    st.body.clear();
    st.else_body.clear();
    const std::set<std::string> entry_dirty = dirty_, entry_read = read_;
    const std::set<std::string> entry_inflight = inflight_, entry_atomic = atomic_only_;
    const bool entry_proxy_dirty = proxy_dirty_;
    RETURN_IF_ERROR(LowerNestBody(s, st, s.body, &st.body));
    std::set<std::string> then_dirty = dirty_, then_read = read_, then_inflight = inflight_;
    const std::set<std::string> then_atomic = atomic_only_;
    const bool then_proxy_dirty = proxy_dirty_;
    dirty_ = entry_dirty;
    read_ = entry_read;
    inflight_ = entry_inflight;
    atomic_only_ = entry_atomic;
    proxy_dirty_ = entry_proxy_dirty;
    RETURN_IF_ERROR(LowerStmts(s.else_body, &st.else_body));
    // Atomic-only after the if only where both branches leave it so.
    std::set<std::string> both;
    for (const std::string& b : then_atomic) {
      if (atomic_only_.count(b)) both.insert(b);
    }
    atomic_only_ = std::move(both);
    proxy_dirty_ = proxy_dirty_ || then_proxy_dirty;
    dirty_.insert(then_dirty.begin(), then_dirty.end());
    read_.insert(then_read.begin(), then_read.end());
    inflight_.insert(then_inflight.begin(), then_inflight.end());
    out->push_back(std::move(st));
    return absl::OkStatus();
  }
  case StmtKind::kStore:
    return LowerStore(s, out);
  case StmtKind::kAssert: {
    // A run-time check reads shared memory like a load does.
    if (!loop_) {
      std::set<std::string> reads, writes;
      SharedAccesses(s, &reads, &writes);
      Touch(reads, writes, out);
    }
    Stmt st = s;
    ASSIGN_OR_RETURN(st.cond, LowerExpr(s.cond));
    out->push_back(std::move(st));
    return absl::OkStatus();
  }
  case StmtKind::kAnnotateLayout:
    return absl::OkStatus();
  case StmtKind::kUseSwizzle:
    out->push_back(s);
    return absl::OkStatus();
  case StmtKind::kWarpSpecialize:
    return LowerRegionRun({s}, 0, 1, out);
  case StmtKind::kTmaCopy:
    return LowerTmaCopy(s, out);
  case StmtKind::kBarrierArrive:
  case StmtKind::kBarrierWait:
  case StmtKind::kBarrierExpectTx:
    return LowerBarrierOp(s, out);
  case StmtKind::kWaitWgmma:
    return LowerWaitWgmma(s, out);
  case StmtKind::kCall: {
    Stmt st = s;
    for (Expr& e : st.indices) {
      ASSIGN_OR_RETURN(e, LowerExpr(e));
    }
    // A barrier the program placed itself (T.sync_threads) orders the
    // accesses before it against those after it, like one of ours.
    if (st.name == "sync_threads" || st.name == "named_barrier_sync") {
      dirty_.clear();
      read_.clear();
      atomic_only_.clear();
    }
    if (st.name == "fence_proxy_async") proxy_dirty_ = false;
    if (st.name == "splitk_ticket") {
      // Split-K's handshake (split_k.h): every thread's partials fenced,
      // then thread 0 draws the ticket, and the flag it wrote is read by all.
      out->push_back(Call("threadfence", {}));
      Barrier(out);
      Guarded(ir::Binary(ir::BinOp::kEq, tid_, I(0)), {std::move(st)}, out);
      Barrier(out);
      return absl::OkStatus();
    }
    out->push_back(std::move(st));
    return absl::OkStatus();
  }
  }
  return Error(s.loc, "internal: unknown statement kind");
}

} // namespace kiln::passes::lowering
