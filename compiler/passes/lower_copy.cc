// Tile-op lowering, part 2: T.copy, tile-level atomics and T.fill.
//
// 1. A copy is planned on the regions squeezed to their dimensions of
//    extent > 1; both sides must then have the same shape.
// 2. With a fragment on either side, each thread walks its registers: the
//    fragment's layout names the element, the other side is indexed by it.
//    Global accesses are bounds-checked (reads past the edge give 0, writes
//    are dropped); only the first replica of a replicated fragment writes.
//    A region of part of a fragment (acc[:k, :], acc[i, :], constant or
//    run-time start, constant extent) to or from shared or global memory
//    guards each register by the region, so elements outside it are neither
//    read nor written on either side. Between two fragments, layout
//    inference has already rewritten such a copy into a T.Parallel loop.
// 3. Otherwise the copy is spread over the block's threads in vectors of up
//    to 16 bytes when both sides are provably aligned; global -> shared
//    vectors use cp.async with zero fill for out-of-bounds vectors, and
//    outside a pipeline the copy waits for its own group at once. A
//    tile-level atomic from shared memory (T.atomic_add(dst, smem)) is
//    spread the same way, one element per thread and step, after the
//    barrier that orders the writes of its source.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/lowering.h"
#include "util/status_macros.h"

namespace kiln::passes::lowering {

using ir::Expr;
using ir::Stmt;

namespace {

int64_t Bytes(ir::DType t) { return std::max(1, ir::DTypeBits(t) / 8); }

// Indices of `b` for copy coordinates `coord` (one per copy dimension).
std::vector<Expr> SideIndex(const std::vector<Expr>& min, const std::vector<int>& dims,
                            const std::vector<Expr>& coord) {
  std::vector<Expr> idx = min;
  for (size_t k = 0; k < dims.size(); ++k) idx[dims[k]] = Add(idx[dims[k]], coord[k]);
  for (Expr& e : idx) e = ir::Simplify(e);
  return idx;
}

const char* AtomicName(ir::AtomicOp op) {
  return op == ir::AtomicOp::kAdd   ? "atomic_add"
         : op == ir::AtomicOp::kMax ? "atomic_max"
                                    : "atomic_min";
}

std::string ShapeText(const std::vector<int64_t>& v) {
  return absl::StrCat("(", absl::StrJoin(v, ", "), ")");
}

// True when a region of extent `ext` starting at `min` covers all `shape`
// elements of its dimension.
bool WholeDim(const Expr& min, int64_t ext, int64_t shape) {
  std::optional<int64_t> m = ir::ConstInt(min);
  return m && *m == 0 && ext == shape;
}

// True on the elements `fidx` of a fragment inside its copied region
// [min, min + ext): a copy of part of a fragment leaves the registers
// outside it alone, on either side of the copy.
Expr InRegion(const std::vector<Expr>& fidx, const std::vector<Expr>& min,
              const std::vector<int64_t>& ext, const std::vector<int64_t>& shape) {
  Expr cond = ir::BoolImm(true);
  for (size_t d = 0; d < fidx.size(); ++d) {
    if (WholeDim(min[d], ext[d], shape[d])) continue;
    const Expr end = ir::Simplify(Add(min[d], I(ext[d])));
    cond = And(cond, ir::Binary(ir::BinOp::kGe, fidx[d], min[d]));
    cond = And(cond, Lt(fidx[d], end));
  }
  return ir::Simplify(cond);
}

// Copy coordinates of fragment element `fidx`: its offsets from the region's
// start along the dimensions `dims` that take them.
std::vector<Expr> RegionCoord(const std::vector<Expr>& fidx, const std::vector<Expr>& min,
                              const std::vector<int>& dims) {
  std::vector<Expr> coord;
  for (int d : dims) coord.push_back(ir::Simplify(ir::Binary(ir::BinOp::kSub, fidx[d], min[d])));
  return coord;
}

} // namespace

std::optional<int64_t> Lowering::MaxOf(const Expr& e) const {
  switch (e.kind) {
  case ir::ExprKind::kInt:
    return e.ival;
  case ir::ExprKind::kVar: {
    auto it = var_max_.find(e.name);
    if (it == var_max_.end()) return std::nullopt;
    return it->second;
  }
  case ir::ExprKind::kThreadIdx:
    return program_.kernel.threads[e.ival] - 1;
  case ir::ExprKind::kCast:
    return ir::IsInteger(e.dtype) ? MaxOf(e.args[0]) : std::nullopt;
  case ir::ExprKind::kBinary: {
    std::optional<int64_t> a = MaxOf(e.args[0]);
    std::optional<int64_t> b = MaxOf(e.args[1]);
    switch (e.bop) {
    case ir::BinOp::kAdd:
      if (a && b) return *a + *b;
      return std::nullopt;
    case ir::BinOp::kMul:
      if (a && b) return *a * *b;
      return std::nullopt;
    case ir::BinOp::kFloorDiv:
      if (a && e.args[1].kind == ir::ExprKind::kInt && e.args[1].ival > 0) {
        return *a / e.args[1].ival;
      }
      return std::nullopt;
    case ir::BinOp::kFloorMod:
      if (e.args[1].kind == ir::ExprKind::kInt && e.args[1].ival > 0) {
        return a ? std::min(*a, e.args[1].ival - 1) : e.args[1].ival - 1;
      }
      return std::nullopt;
    case ir::BinOp::kMin:
      if (a && b) return std::min(*a, *b);
      return a ? a : b;
    default:
      return std::nullopt;
    }
  }
  default:
    return std::nullopt;
  }
}

Expr Lowering::InBoundsOf(const Buf& b, const std::vector<Expr>& idx) const {
  Expr cond = ir::BoolImm(true);
  if (b.scope != ir::Scope::kGlobal) return cond;
  for (size_t d = 0; d < idx.size(); ++d) {
    std::optional<int64_t> extent = ir::ConstInt(ir::Simplify(b.shape_expr[d]));
    std::optional<int64_t> max = MaxOf(idx[d]);
    if (extent && max && *max < *extent) continue; // always inside
    cond = And(cond, Lt(idx[d], b.shape_expr[d]));
  }
  return ir::Simplify(cond);
}

absl::StatusOr<CopyPlan> Lowering::PlanCopy(const Stmt& s) {
  const bool atomic = s.kind == ir::StmtKind::kAtomic;
  const ir::Region& src = s.regions[atomic ? 1 : 0];
  const ir::Region& dst = s.regions[atomic ? 0 : 1];
  CopyPlan plan;
  plan.src = FindBuf(src.buffer);
  plan.dst = FindBuf(dst.buffer);
  if (!plan.src || !plan.dst) return Error(s.loc, "T.copy: unknown buffer");
  auto side = [&](const ir::Region& r, std::vector<Expr>* min, std::vector<int64_t>* ext,
                  std::vector<int>* dims) -> absl::Status {
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      ASSIGN_OR_RETURN(Expr m, LowerExpr(r.ranges[d].min));
      min->push_back(ir::Simplify(m));
      std::optional<int64_t> e = ir::ConstInt(ir::Simplify(r.ranges[d].extent));
      if (!e || *e <= 0) {
        return Error(r.loc.line ? r.loc : s.loc,
                     absl::StrCat("T.copy: the extent of '", r.buffer, "' in dimension ", d,
                                  " must be a positive constant"));
      }
      ext->push_back(*e);
      if (*e > 1) dims->push_back(static_cast<int>(d));
    }
    if (dims->empty()) dims->push_back(static_cast<int>(r.ranges.size()) - 1);
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(side(src, &plan.src_min, &plan.src_ext, &plan.src_dims));
  RETURN_IF_ERROR(side(dst, &plan.dst_min, &plan.dst_ext, &plan.dst_dims));
  std::vector<int64_t> se, de;
  for (int d : plan.src_dims) se.push_back(plan.src_ext[d]);
  for (int d : plan.dst_dims) de.push_back(plan.dst_ext[d]);
  if (se != de) {
    return Error(s.loc, absl::StrCat("T.copy: source '", src.buffer, "' region ", ShapeText(se),
                                     " and destination '", dst.buffer, "' region ", ShapeText(de),
                                     " have different shapes"));
  }
  plan.extents = se;
  return plan;
}

int64_t Lowering::CopyVector(const CopyPlan& plan) const {
  // A converting copy moves v elements of each side at once: the wider
  // element sets v, and the narrower side's vector must still be 4 bytes.
  const int64_t es = Bytes(plan.src->dtype), ed = Bytes(plan.dst->dtype);
  const int64_t e = std::max(es, ed);
  for (int64_t bytes : {16, 8, 4}) {
    const int64_t v = bytes / e;
    if (v < 1 || bytes % e != 0) continue;
    if (es != ed && (v < 2 || v * std::min(es, ed) < 4)) continue;
    if (plan.extents.back() % v != 0) continue;
    bool ok = true;
    for (int k = 0; k < 2 && ok; ++k) {
      const Buf& b = k == 0 ? *plan.src : *plan.dst;
      const std::vector<int>& dims = k == 0 ? plan.src_dims : plan.dst_dims;
      const std::vector<Expr>& min = k == 0 ? plan.src_min : plan.dst_min;
      const size_t last = b.shape_expr.size() - 1;
      if (static_cast<size_t>(dims.back()) != last) ok = false;
      if (ok && !IsMultipleOf(min[last], v)) ok = false;
      if (ok && !IsMultipleOf(ir::Simplify(b.shape_expr[last]), v)) ok = false;
      if (ok && b.scope == ir::Scope::kShared && b.size % v != 0) ok = false;
      if (b.scope == ir::Scope::kLocal || b.scope == ir::Scope::kVar) ok = false;
      if (b.index_layout) ok = false; // T.Layout: logical neighbours are not adjacent
    }
    if (ok) return v;
  }
  return 1;
}

absl::Status Lowering::LowerCopy(const Stmt& s, std::vector<Stmt>* out, bool atomic) {
  ASSIGN_OR_RETURN(CopyPlan plan, PlanCopy(s));
  if (!producer_) {
    std::set<std::string> reads, writes;
    if (plan.src->scope == ir::Scope::kShared) reads.insert(plan.src->name);
    if (plan.dst->scope == ir::Scope::kShared) writes.insert(plan.dst->name);
    Touch(reads, writes, out);
  }
  if (plan.src->scope == ir::Scope::kFragment || plan.dst->scope == ir::Scope::kFragment) {
    return CopyWithFragment(s, plan, atomic, out);
  }
  return CopyDistributed(s, plan, atomic, out);
}

absl::Status Lowering::CopyWithFragment(const Stmt& s, const CopyPlan& plan, bool atomic,
                                        std::vector<Stmt>* out) {
  const bool frag_src = plan.src->scope == ir::Scope::kFragment;
  const Buf& f = frag_src ? *plan.src : *plan.dst;
  const Buf& o = frag_src ? *plan.dst : *plan.src;
  const std::vector<Expr>& fmin = frag_src ? plan.src_min : plan.dst_min;
  const std::vector<int64_t>& fext = frag_src ? plan.src_ext : plan.dst_ext;
  bool whole = true;
  for (size_t d = 0; d < fmin.size(); ++d) whole = whole && WholeDim(fmin[d], fext[d], f.shape[d]);
  const FragmentLayout& layout = *f.layout;
  const std::string r = Fresh("r");
  var_max_[r] = layout.NumRegs() - 1;
  const std::vector<Expr> fidx = ElementIndex(layout, tid_, Var(r));
  std::vector<Stmt> body;
  if (o.scope == ir::Scope::kFragment) {
    // Layout inference rewrote copies of part of a fragment into T.Parallel
    // loops (layout_inference.cc); what reaches here is whole on both sides.
    bool dst_whole = true;
    for (size_t d = 0; d < plan.dst_min.size(); ++d) {
      dst_whole = dst_whole && WholeDim(plan.dst_min[d], plan.dst_ext[d], plan.dst->shape[d]);
    }
    if (!whole || !dst_whole) {
      return Error(s.loc,
                   absl::StrCat("T.copy: fragments '", plan.src->name, "' and '", plan.dst->name,
                                "' must be copied whole or with constant extents of the "
                                "same shape"));
    }
    if (!(Normalize(*plan.src->layout) == Normalize(*plan.dst->layout))) {
      return Error(s.loc,
                   absl::StrCat("T.copy: fragments '", plan.src->name, "' and '", plan.dst->name,
                                "' have different layouts (", plan.src->layout->ToString(), " vs ",
                                plan.dst->layout->ToString(), ")"));
    }
    Expr v = ir::Load(plan.src->name, plan.src->dtype, {Var(r)});
    if (v.dtype != plan.dst->dtype) v = ir::Cast(plan.dst->dtype, v);
    body.push_back(Store(plan.dst->name, {Var(r)}, v));
    out->push_back(For(r, I(layout.NumRegs()), ir::ForKind::kUnroll, std::move(body)));
    return absl::OkStatus();
  }
  const std::vector<int>& fdims = frag_src ? plan.src_dims : plan.dst_dims;
  const std::vector<Expr> coord = RegionCoord(fidx, fmin, fdims);
  const std::vector<Expr> oidx = SideIndex(frag_src ? plan.dst_min : plan.src_min,
                                           frag_src ? plan.dst_dims : plan.src_dims, coord);
  Expr guard = layout.HasPadding() ? InBounds(layout, fidx) : ir::BoolImm(true);
  if (!whole) guard = And(guard, InRegion(fidx, fmin, fext, f.shape));
  const Expr inb = InBoundsOf(o, oidx);
  if (!atomic) {
    const int64_t v = FragmentVector(plan, frag_src);
    if (v > 1) return CopyFragmentVectors(s, plan, frag_src, v, out);
  }
  if (frag_src) {
    Expr v = ir::Load(f.name, f.dtype, {Var(r)});
    if (v.dtype != o.dtype) v = ir::Cast(o.dtype, v);
    guard = And(And(guard, inb), IsFirstReplica(layout, tid_));
    if (atomic) {
      ASSIGN_OR_RETURN(Expr flat, FlatIndex(o, oidx));
      Guarded(guard, {Call(AtomicName(s.atomic_op), {Address(o, flat), ir::Simplify(v)})}, &body);
    } else {
      ASSIGN_OR_RETURN(Stmt st, ElementStore(o, oidx, v));
      Guarded(guard, {std::move(st)}, &body);
    }
  } else {
    ASSIGN_OR_RETURN(Expr v, ElementLoad(o, oidx));
    if (v.dtype != f.dtype) v = ir::Cast(f.dtype, v);
    if (!IsTrue(inb)) v = ir::Select(inb, v, ZeroOf(f.dtype));
    Guarded(guard, {Store(f.name, {Var(r)}, v)}, &body);
  }
  Stmt loop = For(r, I(layout.NumRegs()), ir::ForKind::kUnroll, std::move(body));
  loop.loc = s.loc;
  out->push_back(std::move(loop));
  return absl::OkStatus();
}

int64_t Lowering::FragmentVector(const CopyPlan& plan, bool frag_src) const {
  const Buf& f = frag_src ? *plan.src : *plan.dst;
  const Buf& o = frag_src ? *plan.dst : *plan.src;
  if (o.scope != ir::Scope::kGlobal && o.scope != ir::Scope::kShared) return 1;
  if (o.index_layout) return 1; // T.Layout: logical neighbours are not adjacent
  const FragmentLayout& layout = *f.layout;
  const std::vector<int>& fdims = frag_src ? plan.src_dims : plan.dst_dims;
  const std::vector<int>& odims = frag_src ? plan.dst_dims : plan.src_dims;
  const std::vector<Expr>& omin = frag_src ? plan.dst_min : plan.src_min;
  const std::vector<Expr>& fmin = frag_src ? plan.src_min : plan.dst_min;
  const std::vector<int64_t>& fext = frag_src ? plan.src_ext : plan.dst_ext;
  const size_t last = o.shape_expr.size() - 1;
  if (layout.reg.empty() || layout.reg[0].stride != 1 || layout.reg[0].dim != fdims.back() ||
      static_cast<size_t>(odims.back()) != last) {
    return 1;
  }
  const int64_t e = std::max<int64_t>(1, ir::DTypeBits(o.dtype) / 8);
  int64_t v = 1;
  while (layout.reg[0].size % (v * 2) == 0 && v * 2 * e <= 16) v *= 2;
  // A vector must lie wholly inside or wholly outside a partial region
  // along its dimension: the region's start and extent are multiples of it.
  const int vd = fdims.back();
  while (v > 1 &&
         (f.shape[vd] % v != 0 || fext[vd] % v != 0 || !IsMultipleOf(fmin[vd], v) ||
          !IsMultipleOf(omin[last], v) || !IsMultipleOf(ir::Simplify(o.shape_expr[last]), v) ||
          (o.scope == ir::Scope::kShared && o.size % v != 0))) {
    v /= 2;
  }
  return v;
}

absl::Status Lowering::CopyFragmentVectors(const Stmt& s, const CopyPlan& plan, bool frag_src,
                                           int64_t v, std::vector<Stmt>* out) {
  const Buf& f = frag_src ? *plan.src : *plan.dst;
  const Buf& o = frag_src ? *plan.dst : *plan.src;
  const FragmentLayout& layout = *f.layout;
  const std::string tmp = Fresh("v");
  out->push_back(LocalAlloc(tmp, o.dtype, v));
  const Buf& tb = bufs_.at(tmp);
  const std::string r = Fresh("r");
  var_max_[r] = layout.NumRegs() / v - 1;
  const Expr base = Mul(Var(r), I(v));
  const std::vector<Expr> fidx = ElementIndex(layout, tid_, base);
  const std::vector<Expr>& fmin = frag_src ? plan.src_min : plan.dst_min;
  const std::vector<int64_t>& fext = frag_src ? plan.src_ext : plan.dst_ext;
  const std::vector<Expr> coord = RegionCoord(fidx, fmin, frag_src ? plan.src_dims : plan.dst_dims);
  const std::vector<Expr> oidx = SideIndex(frag_src ? plan.dst_min : plan.src_min,
                                           frag_src ? plan.dst_dims : plan.src_dims, coord);
  Expr guard = layout.HasPadding() ? InBounds(layout, fidx) : ir::BoolImm(true);
  guard = And(guard, InRegion(fidx, fmin, fext, f.shape));
  guard = And(guard, InBoundsOf(o, oidx));
  ASSIGN_OR_RETURN(Expr oflat, FlatIndex(o, oidx));
  const std::string copy = absl::StrCat("copy_", v * Bytes(o.dtype));
  const std::string k = Fresh("e");
  std::vector<Stmt> body;
  if (frag_src) {
    Expr val = ir::Load(f.name, f.dtype, {Add(base, Var(k))});
    if (val.dtype != o.dtype) val = ir::Cast(o.dtype, val);
    body.push_back(For(k, I(v), ir::ForKind::kUnroll, {Store(tmp, {Var(k)}, val)}));
    Guarded(And(guard, IsFirstReplica(layout, tid_)),
            {Call(copy, {Address(o, oflat), Address(tb, I(0))})}, &body);
  } else {
    body.push_back(For(k, I(v), ir::ForKind::kUnroll, {Store(tmp, {Var(k)}, ZeroOf(o.dtype))}));
    Guarded(guard, {Call(copy, {Address(tb, I(0)), Address(o, oflat)})}, &body);
    Expr val = ir::Load(tmp, o.dtype, {Var(k)});
    if (val.dtype != f.dtype) val = ir::Cast(f.dtype, val);
    body.push_back(For(k, I(v), ir::ForKind::kUnroll, {Store(f.name, {Add(base, Var(k))}, val)}));
  }
  Stmt loop = For(r, I(layout.NumRegs() / v), ir::ForKind::kUnroll, std::move(body));
  loop.loc = s.loc;
  out->push_back(std::move(loop));
  return absl::OkStatus();
}

absl::Status Lowering::CopyDistributed(const Stmt& s, const CopyPlan& plan, bool atomic,
                                       std::vector<Stmt>* out) {
  const Buf& src = *plan.src;
  const Buf& dst = *plan.dst;
  const bool per_thread = src.scope == ir::Scope::kLocal || src.scope == ir::Scope::kVar ||
                          dst.scope == ir::Scope::kLocal || dst.scope == ir::Scope::kVar;
  if (atomic && per_thread) {
    // Every thread would apply its own copy of the tile: the update would
    // count once per thread.
    return Error(s.loc, "atomic tile updates need a fragment or shared source and a global or "
                        "shared destination (T.atomic_add(dst, frag_or_shared))");
  }
  const int64_t v = per_thread || atomic ? 1 : CopyVector(plan);
  int64_t total = 1;
  for (int64_t e : plan.extents) total *= e;
  const int64_t nv = total / v;
  const int64_t workers = per_thread ? 1 : threads_;
  const int64_t iters = (nv + workers - 1) / workers;
  const std::string it = Fresh("i");
  var_max_[it] = iters - 1;
  Expr flat_v = per_thread ? Var(it) : Add(Mul(Var(it), I(threads_)), tid_);
  Expr e = Mul(flat_v, I(v));
  std::vector<Expr> coord(plan.extents.size());
  for (size_t k = plan.extents.size(); k-- > 0;) {
    coord[k] = ir::Simplify(k == 0 ? e : Mod(e, plan.extents[k]));
    e = Div(e, plan.extents[k]);
  }
  const std::vector<Expr> sidx = SideIndex(plan.src_min, plan.src_dims, coord);
  const std::vector<Expr> didx = SideIndex(plan.dst_min, plan.dst_dims, coord);
  const Expr s_in = InBoundsOf(src, sidx);
  const Expr d_in = InBoundsOf(dst, didx);
  const int64_t bytes = v * Bytes(src.dtype);
  std::vector<Stmt> body;
  bool async = false;
  if (!atomic && src.scope == ir::Scope::kGlobal && dst.scope == ir::Scope::kShared &&
      src.dtype == dst.dtype && (bytes == 4 || bytes == 8 || bytes == 16)) {
    async = true;
    Expr sflat = GlobalFlat(src, sidx);
    if (!IsTrue(s_in)) sflat = ir::Select(s_in, sflat, ir::IntImm(0, ir::DType::kInt64));
    body.push_back(Call(absl::StrCat("cp_async_", bytes),
                        {Address(dst, SharedPhys(dst, didx)), Address(src, sflat),
                         IsTrue(s_in) ? I(bytes) : ir::Select(s_in, I(bytes), I(0))}));
  } else if (v > 1 && src.dtype != dst.dtype) {
    // Converting vectors: v source elements in one load (zeros past the
    // source's edge), converted in registers, stored as one vector.
    const std::string ts = Fresh("v"), td = Fresh("w"), k = Fresh("e");
    out->push_back(LocalAlloc(ts, src.dtype, v));
    out->push_back(LocalAlloc(td, dst.dtype, v));
    ASSIGN_OR_RETURN(Expr sflat, FlatIndex(src, sidx));
    ASSIGN_OR_RETURN(Expr dflat, FlatIndex(dst, didx));
    if (!IsTrue(s_in)) {
      body.push_back(For(k, I(v), ir::ForKind::kUnroll, {Store(ts, {Var(k)}, ZeroOf(src.dtype))}));
    }
    Guarded(s_in,
            {Call(absl::StrCat("copy_", v * Bytes(src.dtype)),
                  {Address(bufs_.at(ts), I(0)), Address(src, sflat)})},
            &body);
    body.push_back(
        For(k, I(v), ir::ForKind::kUnroll,
            {Store(td, {Var(k)}, ir::Cast(dst.dtype, ir::Load(ts, src.dtype, {Var(k)})))}));
    Guarded(d_in,
            {Call(absl::StrCat("copy_", v * Bytes(dst.dtype)),
                  {Address(dst, dflat), Address(bufs_.at(td), I(0))})},
            &body);
  } else if (v > 1) {
    ASSIGN_OR_RETURN(Expr sflat, FlatIndex(src, sidx));
    ASSIGN_OR_RETURN(Expr dflat, FlatIndex(dst, didx));
    Guarded(And(s_in, d_in),
            {Call(absl::StrCat("copy_", bytes), {Address(dst, dflat), Address(src, sflat)})},
            &body);
    if (dst.scope == ir::Scope::kShared && !IsTrue(s_in)) {
      // Vectors past the source's edge still fill the tile with zeros.
      std::vector<Stmt> zeros;
      for (int64_t k = 0; k < v; ++k) {
        ASSIGN_OR_RETURN(Expr zflat, FlatIndex(dst, didx));
        zeros.push_back(Store(dst.name, {Add(zflat, I(k))}, ZeroOf(dst.dtype)));
      }
      Guarded(ir::Unary(ir::UnOp::kNot, s_in), std::move(zeros), &body);
    }
  } else if (atomic) {
    // One element per thread and step: each element of the tile is applied
    // exactly once, by the thread that owns its position.
    ASSIGN_OR_RETURN(Expr val, ElementLoad(src, sidx));
    if (val.dtype != dst.dtype) val = ir::Cast(dst.dtype, val);
    ASSIGN_OR_RETURN(Expr dflat, FlatIndex(dst, didx));
    Guarded(And(s_in, d_in), {Call(AtomicName(s.atomic_op), {Address(dst, dflat), val})}, &body);
  } else {
    ASSIGN_OR_RETURN(Expr val, ElementLoad(src, sidx));
    if (val.dtype != dst.dtype) val = ir::Cast(dst.dtype, val);
    if (!IsTrue(s_in)) val = ir::Select(s_in, val, ZeroOf(dst.dtype));
    ASSIGN_OR_RETURN(Stmt st, ElementStore(dst, didx, val));
    Guarded(d_in, {std::move(st)}, &body);
  }
  std::vector<Stmt> guarded;
  Guarded(nv % workers == 0 ? ir::BoolImm(true) : Lt(flat_v, I(nv)), std::move(body), &guarded);
  Stmt loop = For(it, I(iters), iters <= 32 ? ir::ForKind::kUnroll : ir::ForKind::kSerial,
                  std::move(guarded));
  loop.loc = s.loc;
  out->push_back(std::move(loop));
  if (async && !producer_) {
    out->push_back(Call("cp_async_commit", {}));
    out->push_back(Call("cp_async_wait", {I(0)}));
  }
  return absl::OkStatus();
}

absl::Status Lowering::LowerFill(const Stmt& s, std::vector<Stmt>* out) {
  const ir::Region& region = s.regions[0];
  const Buf* b = FindBuf(region.buffer);
  if (!b) return Error(s.loc, "T.fill: unknown buffer");
  ASSIGN_OR_RETURN(Expr value, LowerExpr(s.value));
  if (value.dtype != b->dtype) value = ir::Cast(b->dtype, value);
  value = ir::Simplify(value);
  if (b->scope == ir::Scope::kFragment) {
    const std::string r = Fresh("r");
    out->push_back(
        For(r, I(b->layout->NumRegs()), ir::ForKind::kUnroll, {Store(b->name, {Var(r)}, value)}));
    return absl::OkStatus();
  }
  // Everything else: a copy from a constant, planned like one.
  Stmt fill = s;
  fill.kind = ir::StmtKind::kCopy;
  fill.regions = {region, region};
  ASSIGN_OR_RETURN(CopyPlan plan, PlanCopy(fill));
  if (b->scope == ir::Scope::kShared) Touch({}, {b->name}, out);
  const bool per_thread = b->scope == ir::Scope::kLocal || b->scope == ir::Scope::kVar;
  int64_t total = 1;
  for (int64_t e : plan.extents) total *= e;
  const int64_t workers = per_thread ? 1 : threads_;
  const int64_t iters = (total + workers - 1) / workers;
  const std::string it = Fresh("i");
  var_max_[it] = iters - 1;
  Expr flat = per_thread ? Var(it) : Add(Mul(Var(it), I(threads_)), tid_);
  Expr e = flat;
  std::vector<Expr> coord(plan.extents.size());
  for (size_t k = plan.extents.size(); k-- > 0;) {
    coord[k] = ir::Simplify(k == 0 ? e : Mod(e, plan.extents[k]));
    e = Div(e, plan.extents[k]);
  }
  const std::vector<Expr> idx = SideIndex(plan.dst_min, plan.dst_dims, coord);
  ASSIGN_OR_RETURN(Stmt st, ElementStore(*b, idx, value));
  std::vector<Stmt> body;
  Guarded(And(total % workers == 0 ? ir::BoolImm(true) : Lt(flat, I(total)), InBoundsOf(*b, idx)),
          {std::move(st)}, &body);
  out->push_back(For(it, I(iters), iters <= 32 ? ir::ForKind::kUnroll : ir::ForKind::kSerial,
                     std::move(body)));
  return absl::OkStatus();
}

} // namespace kiln::passes::lowering
