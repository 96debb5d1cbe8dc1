// Tile-op lowering, part 4: reductions along one dimension (T.reduce_*),
// from and to fragments or shared memory.
//
// Fragment source: the reduction runs in registers.
// 1. The result's layout is the source's projected without the reduced
//    dimension (for a fragment destination layout-inference makes its
//    layout so), so each src register maps to one result register of the
//    same thread.
// 2. Each thread combines its own registers (padding positions count as
//    the identity).
// 3. Threads that hold parts of one output differ in the reduced thread
//    digits. The lane bits of those digits are combined with a shfl_xor
//    butterfly; the warp bits (a digit may have both) through a shared
//    scratch array between two barriers, one partial per warp, every
//    thread of a group combining the same partials in the same order, so
//    replicas agree bit for bit.
// 4. dst = partial (clear) or dst (+) partial: into the fragment's own
//    registers, or, for a shared destination, each result element stored
//    by the first replica of its holders.
//
// Shared source: every element of the source is visible to every thread,
// so no cross-thread combining is needed; after the barrier that orders
// earlier writes of the source, each output element is one thread's serial
// loop over the reduced dimension, in an order fixed by the element, so
// replicas of a fragment output agree bit for bit. Along whole rows of a
// power-of-two length each element starts at its own column (rotated), so
// that threads reading different rows at the same step use different
// banks.
// 5. Fragment destination: each thread computes the elements its own
//    registers hold.
// 6. Shared destination: the block's threads split the output elements
//    (thread t takes elements t, t + threads, ...).
// Barriers around shared operands come from the same bookkeeping as every
// other shared access (Lowering::Touch): one before the reduction when the
// source was written, or the destination read or written, since the last
// barrier, and one before the next access that would race with the
// destination's new values.
//
// Regions: shared operands may be sub-regions (A_s[0:4, :]); the output's
// dimensions of extent 1 may be squeezed or kept ([X, d, Y] -> [X, Y] or
// [X, 1, Y]). Fragment operands are reduced whole.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/reducer.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/lowering.h"
#include "util/status_macros.h"

namespace kiln::passes::lowering {

using ir::BinOp;
using ir::DType;
using ir::Expr;
using ir::Stmt;

namespace {

bool IsPow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

Expr Identity(ir::ReduceKind kind, DType t) {
  const bool is_max = kind == ir::ReduceKind::kMax;
  const bool is_min = kind == ir::ReduceKind::kMin;
  if (!is_max && !is_min) return ZeroOf(t);
  if (ir::IsFloat(t)) {
    const double inf = std::numeric_limits<double>::infinity();
    return ir::FloatImm(is_max ? -inf : inf, t);
  }
  const int bits = ir::DTypeBits(t);
  if (ir::IsUnsigned(t)) {
    return ir::IntImm(is_max ? 0 : (bits >= 64 ? -1 : (int64_t{1} << bits) - 1), t);
  }
  const int64_t hi =
      bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  return ir::IntImm(is_max ? -hi - 1 : hi, t);
}

Expr Combine(ir::ReduceKind kind, Expr a, Expr b) {
  switch (kind) {
  case ir::ReduceKind::kMax:
  case ir::ReduceKind::kAbsMax:
    return ir::Binary(BinOp::kMax, std::move(a), std::move(b));
  case ir::ReduceKind::kMin:
    return ir::Binary(BinOp::kMin, std::move(a), std::move(b));
  case ir::ReduceKind::kSum:
  case ir::ReduceKind::kAbsSum:
    break;
  }
  return ir::Binary(BinOp::kAdd, std::move(a), std::move(b));
}

// A source element as the accumulator sees it: converted, and its absolute
// value for abssum/absmax.
Expr Operand(ir::ReduceKind kind, Expr v, DType acc) {
  if (v.dtype != acc) v = ir::Cast(acc, v);
  if (kind == ir::ReduceKind::kAbsSum || kind == ir::ReduceKind::kAbsMax) {
    v = ir::Call(ir::Intrinsic::kAbs, {v});
  }
  return v;
}

std::string ShapeText(const std::vector<int64_t>& v) {
  return absl::StrCat("(", absl::StrJoin(v, ", "), ")");
}

// The shared scratch array of step 3, `size` elements of `acc`. One array
// of each dtype serves all the kernel's reductions (the largest size): each
// use starts with a block barrier, after every thread's last read of the
// one before. Not in a program with T.ws regions, whose named barriers
// order only their own threads: there each reduction has its own.
std::string SharedScratch(Lowering& l, DType acc, int64_t size) {
  bool regions = false;
  ir::ForEachStmt(l.program_.kernel.body, [&](const Stmt& s) {
    regions = regions || s.kind == ir::StmtKind::kWarpSpecialize;
  });
  for (Stmt& a : l.top_allocs_) {
    if (regions || a.kind != ir::StmtKind::kAlloc || a.buffer.dtype != acc ||
        a.buffer.scope != ir::Scope::kSharedDyn || a.buffer.name.rfind("kiln_scratch", 0) != 0) {
      continue;
    }
    Buf& sb = l.bufs_.at(a.buffer.name);
    if (size > sb.size) {
      a.buffer.shape = {I(size)};
      sb.shape = {size};
      sb.shape_expr = {I(size)};
      sb.size = size;
    }
    return a.buffer.name;
  }
  std::string scratch = l.Fresh("scratch");
  Stmt alloc;
  alloc.kind = ir::StmtKind::kAlloc;
  alloc.buffer.name = scratch;
  alloc.buffer.dtype = acc;
  alloc.buffer.scope = ir::Scope::kSharedDyn;
  alloc.buffer.shape = {I(size)};
  l.top_allocs_.push_back(alloc);
  Buf sb;
  sb.name = scratch;
  sb.dtype = acc;
  sb.scope = ir::Scope::kShared;
  sb.shape = {size};
  sb.shape_expr = {I(size)};
  sb.size = size;
  l.bufs_[scratch] = sb;
  return scratch;
}

// A reduction operand: its buffer and region (minimums lowered, extents
// constant).
struct Side {
  const Buf* buf = nullptr;
  std::vector<Expr> min;
  std::vector<int64_t> ext;
};

// One T.reduce_* statement being lowered (see the overview above).
class ReduceLowering {
 public:
  ReduceLowering(Lowering& l, const Stmt& s) : l_(l), s_(s), kind_(s.reduce_kind) {}

  absl::Status Run(std::vector<Stmt>* out) {
    ASSIGN_OR_RETURN(src_, PlanSide(0));
    ASSIGN_OR_RETURN(dst_, PlanSide(1));
    if (src_.buf == dst_.buf) {
      return l_.Error(s_.loc, absl::StrCat("reduce: source and destination are the same buffer '",
                                           src_.buf->name, "'"));
    }
    RETURN_IF_ERROR(MatchDims());
    acc_ = dst_.buf->dtype;
    const bool frag_src = src_.buf->scope == ir::Scope::kFragment;
    const bool frag_dst = dst_.buf->scope == ir::Scope::kFragment;
    if (frag_src) {
      const FragmentLayout& ls = *src_.buf->layout;
      FragmentLayout ld;
      if (frag_dst) {
        ld = *dst_.buf->layout;
        const FragmentLayout want = Project(ls, kept_, dst_.buf->shape);
        if (!(want == Normalize(ld))) {
          return l_.Error(s_.loc, absl::StrCat("reduce: '", dst_.buf->name, "' has layout ",
                                               ld.ToString(), " but reducing '", src_.buf->name,
                                               "' gives ", want.ToString()));
        }
      } else {
        ld = Project(ls, kept_, kept_ext_);
      }
      ASSIGN_OR_RETURN(std::string red, ReduceRegisters(ls, ld, out));
      if (frag_dst) {
        WriteFragment(red, ld, out);
        return absl::OkStatus();
      }
      return WriteShared(red, ld, out);
    }
    l_.Touch({src_.buf->name}, {}, out);
    if (frag_dst) return SharedToFragment(out);
    return SharedToShared(out);
  }

 private:
  absl::StatusOr<Side> PlanSide(int k) {
    const ir::Region& r = s_.regions[k];
    const char* role = k == 0 ? "source" : "destination";
    Side side;
    side.buf = l_.FindBuf(r.buffer);
    if (!side.buf)
      return l_.Error(s_.loc, absl::StrCat("reduce: unknown ", role, " '", r.buffer, "'"));
    const ir::Scope scope = side.buf->scope;
    if (scope != ir::Scope::kFragment && scope != ir::Scope::kShared) {
      return l_.Error(s_.loc, absl::StrCat("reduce: ", role, " '", r.buffer,
                                           "' must be a fragment or in shared memory"));
    }
    bool whole = r.ranges.size() == side.buf->shape.size();
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      ASSIGN_OR_RETURN(Expr m, l_.LowerExpr(r.ranges[d].min));
      side.min.push_back(ir::Simplify(m));
      std::optional<int64_t> e = ir::ConstInt(ir::Simplify(r.ranges[d].extent));
      if (!e || *e <= 0) {
        return l_.Error(r.loc.line ? r.loc : s_.loc,
                        absl::StrCat("reduce: the extent of '", r.buffer, "' in dimension ", d,
                                     " must be a positive constant"));
      }
      side.ext.push_back(*e);
      std::optional<int64_t> m0 = ir::ConstInt(side.min.back());
      whole = whole && m0 && *m0 == 0 && d < side.buf->shape.size() && *e == side.buf->shape[d];
    }
    if (scope == ir::Scope::kFragment && !whole) {
      return l_.Error(r.loc.line ? r.loc : s_.loc,
                      absl::StrCat("reduce: fragment '", r.buffer,
                                   "' must be reduced whole (a sub-region of a fragment is not "
                                   "supported)"));
    }
    return side;
  }

  // The source's kept dimensions and their pairing with the destination's:
  // both squeezed to their extents other than 1, in order.
  absl::Status MatchDims() {
    const int rank = static_cast<int>(src_.ext.size());
    if (s_.dim < 0 || s_.dim >= rank) {
      return l_.Error(s_.loc, absl::StrCat("reduce: dim ", s_.dim, " is out of range for '",
                                           src_.buf->name, "'"));
    }
    for (int d = 0; d < rank; ++d) {
      if (d == s_.dim) continue;
      kept_.push_back(d);
      kept_ext_.push_back(src_.ext[d]);
    }
    std::vector<int> ks, ds;
    std::vector<int64_t> ke, de;
    for (size_t k = 0; k < kept_ext_.size(); ++k) {
      if (kept_ext_[k] != 1) ks.push_back(static_cast<int>(k)), ke.push_back(kept_ext_[k]);
    }
    for (size_t d = 0; d < dst_.ext.size(); ++d) {
      if (dst_.ext[d] != 1) ds.push_back(static_cast<int>(d)), de.push_back(dst_.ext[d]);
    }
    if (ke != de) {
      return l_.Error(s_.loc, absl::StrCat("reduce: reducing '", src_.buf->name, "' region ",
                                           ShapeText(src_.ext), " along dimension ", s_.dim,
                                           " gives ", ShapeText(kept_ext_), " but '",
                                           dst_.buf->name, "' region is ", ShapeText(dst_.ext)));
    }
    for (size_t k = 0; k < ks.size(); ++k) pairs_.emplace_back(ks[k], ds[k]);
    return absl::OkStatus();
  }

  // Source indices of output element `kept` (one coordinate per kept
  // dimension) at position `k` of the reduced dimension.
  std::vector<Expr> SrcIndex(const std::vector<Expr>& kept, const Expr& k) const {
    std::vector<Expr> idx = src_.min;
    idx[s_.dim] = Add(idx[s_.dim], k);
    for (size_t j = 0; j < kept_.size(); ++j) idx[kept_[j]] = Add(idx[kept_[j]], kept[j]);
    for (Expr& e : idx) e = ir::Simplify(e);
    return idx;
  }

  std::vector<Expr> DstIndex(const std::vector<Expr>& kept) const {
    std::vector<Expr> idx = dst_.min;
    for (const auto& [k, d] : pairs_) idx[d] = Add(idx[d], kept[k]);
    for (Expr& e : idx) e = ir::Simplify(e);
    return idx;
  }

  // Output coordinates of destination element `dst` (region-relative).
  std::vector<Expr> KeptOfDst(const std::vector<Expr>& dst) const {
    std::vector<Expr> kept(kept_.size(), I(0));
    for (const auto& [k, d] : pairs_) kept[k] = dst[d];
    return kept;
  }

  std::string Scratch(int64_t size) { return SharedScratch(l_, acc_, size); }

  // Steps 1-3: a register array with the reduction of the source's
  // elements that each result register of layout `ld` holds.
  absl::StatusOr<std::string> ReduceRegisters(const FragmentLayout& ls, const FragmentLayout& ld,
                                              std::vector<Stmt>* out) {
    const Buf& src = *src_.buf;
    const Expr tid = l_.Tid();
    const int64_t threads = l_.Threads();
    const int64_t rd_count = ld.NumRegs();
    const std::string red = l_.Fresh("red");
    out->push_back(l_.LocalAlloc(red, acc_, rd_count));
    rd_ = l_.Fresh("r");
    out->push_back(For(rd_, I(rd_count), ir::ForKind::kUnroll,
                       {Store(red, {Var(rd_)}, Identity(kind_, acc_))}));

    // 2. Own registers: src register r goes to dst register DstReg(r).
    const std::string r = l_.Fresh("r");
    Expr dst_reg = I(0);
    int64_t place = 1;
    for (size_t k = 0; k < ls.reg.size(); ++k) {
      if (ls.reg[k].dim == s_.dim) continue;
      dst_reg = Add(dst_reg, Mul(RegDigit(ls, k, Var(r)), I(place)));
      place *= ls.reg[k].size;
    }
    dst_reg = ir::Simplify(dst_reg);
    Expr v = Operand(kind_, ir::Load(src.name, src.dtype, {Var(r)}), acc_);
    if (ls.HasPadding())
      v = ir::Select(InBounds(ls, ElementIndex(ls, tid, Var(r))), v, Identity(kind_, acc_));
    out->push_back(For(r, I(ls.NumRegs()), ir::ForKind::kUnroll,
                       {Store(red, {dst_reg}, Combine(kind_, ir::Load(red, acc_, {dst_reg}), v))}));

    // 3. Across threads. A reduced thread digit is a run of `size` thread
    //    ids at stride `place`; the part of it inside a warp (power-of-two
    //    place and size, within the 32 lanes) becomes butterfly masks and
    //    the part across warps (place >= 32) a piece combined through
    //    shared memory. A digit straddling the warp boundary (place < 32 <
    //    place * size) splits into both, so a row spread over all the
    //    block's threads reads one partial per warp, not one per thread.
    struct Piece {
      int64_t place, size;
    };
    std::vector<int64_t> masks;
    std::vector<Piece> cross;
    for (size_t k = 0; k < ls.thread.size(); ++k) {
      if (ls.thread[k].dim != s_.dim) continue;
      const int64_t p = ls.ThreadPlace(k), z = ls.thread[k].size;
      if (IsPow2(p) && IsPow2(z) && p * z <= 32) {
        for (int64_t m = p; m < p * z; m *= 2) masks.push_back(m);
      } else if (IsPow2(p) && IsPow2(z) && p < 32) {
        for (int64_t m = p; m < 32; m *= 2) masks.push_back(m);
        cross.push_back({32, p * z / 32});
      } else {
        cross.push_back({p, z});
      }
    }
    if (!masks.empty()) {
      const std::string tmp = l_.Fresh("tmp");
      out->push_back(l_.LocalAlloc(tmp, acc_, 1));
      std::vector<Stmt> body;
      for (int64_t m : masks) {
        body.push_back(Call("shfl_xor", {l_.Address(l_.bufs_.at(tmp), I(0)),
                                         ir::Load(red, acc_, {Var(rd_)}), I(m)}));
        body.push_back(
            Store(red, {Var(rd_)},
                  Combine(kind_, ir::Load(red, acc_, {Var(rd_)}), ir::Load(tmp, acc_, {I(0)}))));
      }
      out->push_back(For(rd_, I(rd_count), ir::ForKind::kUnroll, std::move(body)));
    }
    if (!cross.empty()) {
      const std::string scratch = Scratch(threads * rd_count);

      l_.Barrier(out);
      out->push_back(For(rd_, I(rd_count), ir::ForKind::kUnroll,
                         {Store(scratch, {Add(Mul(tid, I(rd_count)), Var(rd_))},
                                ir::Load(red, acc_, {Var(rd_)}))}));
      l_.Barrier(out);
      // Thread id with the reduced cross-warp pieces cleared.
      Expr base = tid;
      int64_t combos = 1;
      for (const Piece& q : cross) {
        Expr digit = ir::Binary(BinOp::kFloorDiv, tid, I(q.place));
        if (q.place * q.size < threads) digit = ir::Binary(BinOp::kFloorMod, digit, I(q.size));
        base = ir::Binary(BinOp::kSub, base, Mul(digit, I(q.place)));
        combos *= q.size;
      }
      base = ir::Simplify(base);
      std::vector<Stmt> body = {Store(red, {Var(rd_)}, Identity(kind_, acc_))};
      for (int64_t c = 0; c < combos; ++c) {
        int64_t rest = c, offset = 0;
        for (const Piece& q : cross) {
          offset += (rest % q.size) * q.place;
          rest /= q.size;
        }
        Expr slot = Add(Mul(Add(base, I(offset)), I(rd_count)), Var(rd_));
        body.push_back(Store(
            red, {Var(rd_)},
            Combine(kind_, ir::Load(red, acc_, {Var(rd_)}), ir::Load(scratch, acc_, {slot}))));
      }
      out->push_back(For(rd_, I(rd_count), ir::ForKind::kUnroll, std::move(body)));
      // Later readers of the scratch (this reduction in the next iteration)
      // are ordered by the barrier that starts its next use.
    }
    return red;
  }

  // 4. Into the destination fragment's registers.
  void WriteFragment(const std::string& red, const FragmentLayout& ld, std::vector<Stmt>* out) {
    const std::string& dst = dst_.buf->name;
    Expr result = ir::Load(red, acc_, {Var(rd_)});
    if (!s_.clear) result = Combine(kind_, ir::Load(dst, acc_, {Var(rd_)}), result);
    out->push_back(
        For(rd_, I(ld.NumRegs()), ir::ForKind::kUnroll, {Store(dst, {Var(rd_)}, result)}));
  }

  // 4. Into shared memory: the first replica of each result element stores
  //    it (and, without clear, combines it with the old value it reads).
  absl::Status WriteShared(const std::string& red, const FragmentLayout& ld,
                           std::vector<Stmt>* out) {
    const Buf& dst = *dst_.buf;
    const std::set<std::string> name = {dst.name};
    l_.Touch(s_.clear ? std::set<std::string>{} : name, name, out);
    const std::string r = l_.Fresh("r");
    l_.var_max_[r] = ld.NumRegs() - 1;
    const std::vector<Expr> kept = ElementIndex(ld, l_.Tid(), Var(r));
    const std::vector<Expr> didx = DstIndex(kept);
    Expr guard = IsFirstReplica(ld, l_.Tid());
    if (ld.HasPadding()) guard = And(guard, InBounds(ld, kept));
    Expr result = ir::Load(red, acc_, {Var(r)});
    if (!s_.clear) {
      ASSIGN_OR_RETURN(Expr old, l_.ElementLoad(dst, didx));
      result = Combine(kind_, Converted(old), result);
    }
    ASSIGN_OR_RETURN(Stmt st, l_.ElementStore(dst, didx, result));
    std::vector<Stmt> body;
    Guarded(ir::Simplify(guard), {std::move(st)}, &body);
    Stmt loop = For(r, I(ld.NumRegs()), ir::ForKind::kUnroll, std::move(body));
    loop.loc = s_.loc;
    out->push_back(std::move(loop));
    return absl::OkStatus();
  }

  // Whether the serial loops walk each row from a different column: when
  // they reduce whole, unswizzled rows of a power-of-two length (their
  // start addresses then share a bank) and there are several rows.
  bool Rotates() const {
    const Buf& src = *src_.buf;
    const int64_t n = src_.ext[s_.dim];
    int64_t outputs = 1;
    for (int64_t e : kept_ext_) outputs *= e;
    return !src.swizzle && s_.dim + 1 == static_cast<int>(src.shape.size()) &&
           n == src.shape.back() && n > 1 && IsPow2(n) && outputs > 1;
  }

  // acc = identity; for k: acc (+)= src[kept, k] -- the serial loop of one
  // output element over the shared source. `unroll`: whether the loop over
  // the reduced dimension may be unrolled.
  absl::Status SerialReduce(const std::string& acc, const std::vector<Expr>& kept, bool unroll,
                            std::vector<Stmt>* out) {
    const int64_t n = src_.ext[s_.dim];
    const std::string k = l_.Fresh("k");
    l_.var_max_[k] = n - 1;
    Expr pos = Var(k);
    if (Rotates()) {
      // Along a row: start each output's walk at its own column, so that
      // threads reading different rows at the same step reach different
      // banks (rows a power-of-two apart would otherwise all hit one).
      Expr linear = I(0);
      for (size_t j = 0; j < kept.size(); ++j) {
        linear = Add(Mul(linear, I(kept_ext_[j])), kept[j]);
      }
      pos = Mod(Add(Var(k), linear), n);
    }
    ASSIGN_OR_RETURN(Expr v, l_.ElementLoad(*src_.buf, SrcIndex(kept, pos)));
    out->push_back(Store(acc, {I(0)}, Identity(kind_, acc_)));
    out->push_back(
        For(k, I(n), unroll ? ir::ForKind::kUnroll : ir::ForKind::kSerial,
            {Store(acc, {I(0)},
                   Combine(kind_, ir::Load(acc, acc_, {I(0)}), Operand(kind_, v, acc_)))}));
    return absl::OkStatus();
  }

  // 5. Each thread reduces the elements its registers of the destination
  //    fragment hold.
  absl::Status SharedToFragment(std::vector<Stmt>* out) {
    const Buf& dst = *dst_.buf;
    const FragmentLayout& ld = *dst.layout;
    const std::string acc = l_.Fresh("acc");
    out->push_back(l_.LocalAlloc(acc, acc_, 1));
    const std::string r = l_.Fresh("r");
    l_.var_max_[r] = ld.NumRegs() - 1;
    const std::vector<Expr> didx = ElementIndex(ld, l_.Tid(), Var(r));
    std::vector<Stmt> body;
    RETURN_IF_ERROR(
        SerialReduce(acc, KeptOfDst(didx), ld.NumRegs() * src_.ext[s_.dim] <= kUnrollLimit, &body));
    Expr result = ir::Load(acc, acc_, {I(0)});
    if (!s_.clear) result = Combine(kind_, ir::Load(dst.name, acc_, {Var(r)}), result);
    body.push_back(Store(dst.name, {Var(r)}, result));
    std::vector<Stmt> guarded;
    Guarded(ld.HasPadding() ? InBounds(ld, didx) : ir::BoolImm(true), std::move(body), &guarded);
    Stmt loop = For(r, I(ld.NumRegs()), ir::ForKind::kUnroll, std::move(guarded));
    loop.loc = s_.loc;
    out->push_back(std::move(loop));
    return absl::OkStatus();
  }

  // 6. The block's threads split the output elements.
  absl::Status SharedToShared(std::vector<Stmt>* out) {
    const Buf& dst = *dst_.buf;
    const std::set<std::string> name = {dst.name};
    l_.Touch(s_.clear ? std::set<std::string>{} : name, name, out);
    const int64_t threads = l_.Threads();
    int64_t total = 1;
    for (int64_t e : kept_ext_) total *= e;
    const int64_t iters = (total + threads - 1) / threads;
    const std::string acc = l_.Fresh("acc");
    out->push_back(l_.LocalAlloc(acc, acc_, 1));
    const std::string it = l_.Fresh("i");
    l_.var_max_[it] = iters - 1;
    const Expr flat = ir::Simplify(Add(Mul(Var(it), I(threads)), l_.Tid()));
    std::vector<Expr> kept(kept_ext_.size());
    Expr e = flat;
    for (size_t k = kept_ext_.size(); k-- > 0;) {
      kept[k] = ir::Simplify(k == 0 ? e : Mod(e, kept_ext_[k]));
      e = Div(e, kept_ext_[k]);
    }
    std::vector<Stmt> body;
    RETURN_IF_ERROR(SerialReduce(acc, kept, iters * src_.ext[s_.dim] <= kUnrollLimit, &body));
    const std::vector<Expr> didx = DstIndex(kept);
    Expr result = ir::Load(acc, acc_, {I(0)});
    if (!s_.clear) {
      ASSIGN_OR_RETURN(Expr old, l_.ElementLoad(dst, didx));
      result = Combine(kind_, Converted(old), result);
    }
    ASSIGN_OR_RETURN(Stmt st, l_.ElementStore(dst, didx, result));
    body.push_back(std::move(st));
    std::vector<Stmt> guarded;
    Guarded(total % threads == 0 ? ir::BoolImm(true) : Lt(flat, I(total)), std::move(body),
            &guarded);
    Stmt loop = For(it, I(iters), iters <= 32 ? ir::ForKind::kUnroll : ir::ForKind::kSerial,
                    std::move(guarded));
    loop.loc = s_.loc;
    out->push_back(std::move(loop));
    return absl::OkStatus();
  }

  // Loads of a shared source a thread's unrolled loops may hold at most.
  static constexpr int64_t kUnrollLimit = 256;

  Lowering& l_;
  const Stmt& s_;
  const ir::ReduceKind kind_;
  Side src_, dst_;
  DType acc_ = DType::kFloat32;            // accumulates in the destination's dtype
  std::vector<int> kept_;                  // source dimensions other than s_.dim
  std::vector<int64_t> kept_ext_;          // their extents
  std::vector<std::pair<int, int>> pairs_; // (index into kept_, destination dimension)
  std::string rd_;                         // the register loop variable of steps 1-4

  Expr Converted(const Expr& v) const { return v.dtype == acc_ ? v : ir::Cast(acc_, v); }
};

} // namespace

absl::Status Lowering::LowerReduce(const Stmt& s, std::vector<Stmt>* out) {
  return ReduceLowering(*this, s).Run(out);
}

absl::Status Lowering::LowerFinalizeReducer(const Stmt& s, std::vector<Stmt>* out) {
  auto it = bufs_.find(s.regions[0].buffer);
  if (it == bufs_.end() || !it->second.reducer) {
    return Error(s.loc, absl::StrCat("T.finalize_reducer: '", s.regions[0].buffer,
                                     "' is not a reducer (make it with T.alloc_reducer)"));
  }
  Buf& b = it->second;
  if (*b.reducer != s.reduce_kind) {
    return Error(s.loc, absl::StrCat("T.finalize_reducer: '", b.name, "' is a ",
                                     ir::ReducerLayoutName(*b.reducer), " but is finalized with ",
                                     ir::ReducerLayoutName(s.reduce_kind)));
  }
  if (b.reducer_final) {
    return Error(s.loc, absl::StrCat("T.finalize_reducer: '", b.name, "' is already finalized"));
  }
  for (const ir::Region& r : s.regions) {
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      std::optional<int64_t> m = ir::ConstInt(ir::Simplify(r.ranges[d].min));
      std::optional<int64_t> e = ir::ConstInt(ir::Simplify(r.ranges[d].extent));
      if (r.buffer != b.name || !m || *m != 0 || !e || d >= b.shape.size() || *e != b.shape[d]) {
        return Error(s.loc, absl::StrCat("T.finalize_reducer: '", b.name,
                                         "' must be finalized whole and in place"));
      }
    }
  }
  const int64_t threads = Threads();
  if (!(threads <= 32 && IsPow2(threads)) && threads % 32 != 0) {
    return Error(s.loc, absl::StrCat("T.finalize_reducer needs a power of two threads up to 32 "
                                     "or a multiple of 32, not ",
                                     threads));
  }
  b.reducer_final = true;
  const ir::ReduceKind kind = *b.reducer;
  const DType t = b.dtype;
  const int64_t n = b.layout->NumRegs();
  const int64_t lanes = std::min<int64_t>(threads, 32), warps = threads / lanes;
  const Expr tid = Tid();
  // 1. Across the lanes of each warp.
  if (lanes > 1) {
    const std::string tmp = Fresh("tmp");
    out->push_back(LocalAlloc(tmp, t, 1));
    const std::string r = Fresh("r");
    std::vector<Stmt> body;
    for (int64_t m = 1; m < lanes; m *= 2) {
      body.push_back(
          Call("shfl_xor", {Address(bufs_.at(tmp), I(0)), ir::Load(b.name, t, {Var(r)}), I(m)}));
      body.push_back(Store(b.name, {Var(r)},
                           Combine(kind, ir::Load(b.name, t, {Var(r)}), ir::Load(tmp, t, {I(0)}))));
    }
    out->push_back(For(r, I(n), ir::ForKind::kUnroll, std::move(body)));
  }
  // 2. Across warps: one partial per warp in the shared scratch.
  if (warps > 1) {
    const std::string scratch = SharedScratch(*this, t, warps * n);
    Barrier(out);
    const std::string r = Fresh("r");
    std::vector<Stmt> store;
    Guarded(ir::Binary(BinOp::kEq, Mod(tid, 32), I(0)),
            {For(r, I(n), ir::ForKind::kUnroll,
                 {Store(scratch, {Add(Mul(Div(tid, 32), I(n)), Var(r))},
                        ir::Load(b.name, t, {Var(r)}))})},
            &store);
    for (Stmt& st : store) out->push_back(std::move(st));
    Barrier(out);
    const std::string r2 = Fresh("r");
    Expr acc = ir::Load(scratch, t, {Var(r2)});
    for (int64_t w = 1; w < warps; ++w) {
      acc = Combine(kind, acc, ir::Load(scratch, t, {Add(I(w * n), Var(r2))}));
    }
    out->push_back(For(r2, I(n), ir::ForKind::kUnroll, {Store(b.name, {Var(r2)}, acc)}));
    // The scratch's next user starts with a barrier (SharedScratch).
  }
  return absl::OkStatus();
}

} // namespace kiln::passes::lowering
