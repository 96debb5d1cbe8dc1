// Tile-op lowering, part 4: reductions of a fragment along one dimension.
//
// 1. dst's layout must be src's projected without the reduced dimension
//    (layout-inference makes it so), so each src register maps to one dst
//    register of the same thread.
// 2. Each thread combines its own registers (padding positions count as
//    the identity).
// 3. Threads that hold parts of one output differ in the reduced thread
//    digits. The lane bits of those digits are combined with a shfl_xor
//    butterfly; the warp bits (a digit may have both) through a shared
//    scratch array between two barriers, one partial per warp, every
//    thread of a group combining the same partials in the same order, so
//    replicas agree bit for bit.
// 4. dst = partial (clear) or dst (+) partial.
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
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
  if (!is_max && !is_min) return ir::IsFloat(t) ? ir::FloatImm(0.0, t) : ir::IntImm(0, t);
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

} // namespace

absl::Status Lowering::LowerReduce(const Stmt& s, std::vector<Stmt>* out) {
  const Buf* src = FindBuf(s.regions[0].buffer);
  const Buf* dst = FindBuf(s.regions[1].buffer);
  if (!src || !dst || src->scope != ir::Scope::kFragment || dst->scope != ir::Scope::kFragment) {
    return Error(s.loc, "reduce: source and destination must be fragments");
  }
  const FragmentLayout& ls = *src->layout;
  const FragmentLayout& ld = *dst->layout;
  std::vector<int> kept;
  for (int d = 0; d < static_cast<int>(ls.shape.size()); ++d) {
    if (d != s.dim) kept.push_back(d);
  }
  if (!(Project(ls, kept, dst->shape) == Normalize(ld))) {
    return Error(s.loc, absl::StrCat("reduce: '", dst->name, "' has layout ", ld.ToString(),
                                     " but reducing '", src->name, "' gives ",
                                     Project(ls, kept, dst->shape).ToString()));
  }
  const DType acc = dst->dtype;
  const ir::ReduceKind kind = s.reduce_kind;
  const bool abs = kind == ir::ReduceKind::kAbsSum || kind == ir::ReduceKind::kAbsMax;
  const int64_t rd_count = ld.NumRegs();

  const std::string red = Fresh("red");
  out->push_back(LocalAlloc(red, acc, rd_count));
  const std::string rd = Fresh("r");
  out->push_back(
      For(rd, I(rd_count), ir::ForKind::kUnroll, {Store(red, {Var(rd)}, Identity(kind, acc))}));

  // 2. Own registers: src register r goes to dst register DstReg(r).
  const std::string r = Fresh("r");
  Expr dst_reg = I(0);
  int64_t place = 1;
  for (size_t k = 0; k < ls.reg.size(); ++k) {
    if (ls.reg[k].dim == s.dim) continue;
    dst_reg = Add(dst_reg, Mul(RegDigit(ls, k, Var(r)), I(place)));
    place *= ls.reg[k].size;
  }
  dst_reg = ir::Simplify(dst_reg);
  Expr v = ir::Load(src->name, src->dtype, {Var(r)});
  if (v.dtype != acc) v = ir::Cast(acc, v);
  if (abs) v = ir::Call(ir::Intrinsic::kAbs, {v});
  if (ls.HasPadding())
    v = ir::Select(InBounds(ls, ElementIndex(ls, tid_, Var(r))), v, Identity(kind, acc));
  out->push_back(For(r, I(ls.NumRegs()), ir::ForKind::kUnroll,
                     {Store(red, {dst_reg}, Combine(kind, ir::Load(red, acc, {dst_reg}), v))}));

  // 3. Across threads. A reduced thread digit is a run of `size` thread ids
  //    at stride `place`; the part of it inside a warp (power-of-two place
  //    and size, within the 32 lanes) becomes butterfly masks and the part
  //    across warps (place >= 32) a piece combined through shared memory.
  //    A digit straddling the warp boundary (place < 32 < place * size)
  //    splits into both, so a row spread over all the block's threads
  //    reads one partial per warp, not one per thread.
  struct Piece {
    int64_t place, size;
  };
  std::vector<int64_t> masks;
  std::vector<Piece> cross;
  for (size_t k = 0; k < ls.thread.size(); ++k) {
    if (ls.thread[k].dim != s.dim) continue;
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
    const std::string tmp = Fresh("tmp");
    out->push_back(LocalAlloc(tmp, acc, 1));
    std::vector<Stmt> body;
    for (int64_t m : masks) {
      body.push_back(
          Call("shfl_xor", {Address(bufs_.at(tmp), I(0)), ir::Load(red, acc, {Var(rd)}), I(m)}));
      body.push_back(
          Store(red, {Var(rd)},
                Combine(kind, ir::Load(red, acc, {Var(rd)}), ir::Load(tmp, acc, {I(0)}))));
    }
    out->push_back(For(rd, I(rd_count), ir::ForKind::kUnroll, std::move(body)));
  }
  if (!cross.empty()) {
    const std::string scratch = Fresh("scratch");
    Stmt alloc;
    alloc.kind = ir::StmtKind::kAlloc;
    alloc.buffer.name = scratch;
    alloc.buffer.dtype = acc;
    alloc.buffer.scope = ir::Scope::kSharedDyn;
    alloc.buffer.shape = {I(threads_ * rd_count)};
    top_allocs_.push_back(alloc);
    Buf sb;
    sb.name = scratch;
    sb.dtype = acc;
    sb.scope = ir::Scope::kShared;
    sb.shape = {threads_ * rd_count};
    sb.shape_expr = {I(threads_ * rd_count)};
    sb.size = threads_ * rd_count;
    bufs_[scratch] = sb;

    Barrier(out);
    out->push_back(For(
        rd, I(rd_count), ir::ForKind::kUnroll,
        {Store(scratch, {Add(Mul(tid_, I(rd_count)), Var(rd))}, ir::Load(red, acc, {Var(rd)}))}));
    Barrier(out);
    // Thread id with the reduced cross-warp pieces cleared.
    Expr base = tid_;
    int64_t combos = 1;
    for (const Piece& q : cross) {
      Expr digit = ir::Binary(BinOp::kFloorDiv, tid_, I(q.place));
      if (q.place * q.size < threads_) digit = ir::Binary(BinOp::kFloorMod, digit, I(q.size));
      base = ir::Binary(BinOp::kSub, base, Mul(digit, I(q.place)));
      combos *= q.size;
    }
    base = ir::Simplify(base);
    std::vector<Stmt> body = {Store(red, {Var(rd)}, Identity(kind, acc))};
    for (int64_t c = 0; c < combos; ++c) {
      int64_t rest = c, offset = 0;
      for (const Piece& q : cross) {
        offset += (rest % q.size) * q.place;
        rest /= q.size;
      }
      Expr slot = Add(Mul(Add(base, I(offset)), I(rd_count)), Var(rd));
      body.push_back(
          Store(red, {Var(rd)},
                Combine(kind, ir::Load(red, acc, {Var(rd)}), ir::Load(scratch, acc, {slot}))));
    }
    out->push_back(For(rd, I(rd_count), ir::ForKind::kUnroll, std::move(body)));
    // Later readers of the scratch (this reduction in the next iteration)
    // are ordered by the barrier that starts its next use.
  }

  // 4. Write back.
  Expr result = ir::Load(red, acc, {Var(rd)});
  if (!s.clear) result = Combine(kind, ir::Load(dst->name, acc, {Var(rd)}), result);
  out->push_back(For(rd, I(rd_count), ir::ForKind::kUnroll, {Store(dst->name, {Var(rd)}, result)}));
  return absl::OkStatus();
}

} // namespace kiln::passes::lowering
