// Tile-op lowering, part 7: TileLang's explicit Hopper synchronization —
// barrier buffers, T.ws regions, T.tma_copy and the mbarrier statements
// (ir.h, StmtKind::kWarpSpecialize .. kBarrierExpectTx).
//
//  - A barrier buffer becomes n uint64 words of shared memory; thread 0
//    initializes each with its arrival count, fences the initialization
//    and the whole block synchronizes once (where the allocation stands:
//    the top of the kernel body).
//  - ws(g...) becomes `if (first <= tid < end) { body }`. Inside, tile ops
//    see the region's threads only: Tid() is the index from the region's
//    first thread and Threads() its size (layout inference chose the
//    fragments' layouts the same way, warp_groups.h), and the barriers that
//    Touch() places are named barriers (bar.sync id, size) with an id of the
//    region's own (2 and up: 0 is __syncthreads, 1 belongs to
//    warp_specialize.cc's consumers). Shared memory that code outside the
//    region wrote or read and the region touches is synchronized by a block
//    barrier before the region (every thread reaches it); what the region
//    touches counts as touched by the block afterwards. Consecutive regions
//    form a run (thread_regions.cc makes one of an if/else on the thread
//    index): the barrier goes before the run's first region, and regions
//    of the run on other threads are not synchronized with each other
//    (they run at once; the program's mbarriers order them), while one on
//    threads of an earlier region of the run starts as if that region had
//    just run on its threads (a named barrier where it needs one).
//  - tma_copy: where the program lowers for wgmma and the copy is one TMA
//    can serve (PlanTmaCopy, warp_specialize.cc: a whole wgmma-layout tile,
//    or whole column blocks of one, of a global tensor with TMA-legal
//    strides), the region's first thread expects the box bytes on the
//    barrier and issues the loads, as TileLang does; nobody waits. Elsewhere (other layouts, sm_90
//    without wgmma, the plain CPU target) it is a copy by the region's threads, fenced toward the
//    async proxy; the program's own arrivals and waits on the barrier order it, as they order a TMA
//    load. Neither form is tracked by Touch(): the mbarrier protocol is the synchronization.
//  - barrier_arrive / barrier_wait / barrier_expect_tx are the runtime's
//    mbarrier_arrive / mbarrier_wait / mbarrier_expect_tx, by every thread
//    that executes them.
// CUDA targets before sm_90 have no mbarrier parity waits: programs using
// these statements are refused there with a located error.
#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/lowering.h"
#include "compiler/passes/warp_groups.h"
#include "util/status_macros.h"

namespace kiln::passes::lowering {

using ir::Expr;
using ir::Stmt;
using ir::StmtKind;

namespace {

constexpr int kFirstRegionBarrier = 2; // named barrier ids of ws regions
constexpr int kLastRegionBarrier = 15;

Expr Eq(Expr a, Expr b) { return ir::Binary(ir::BinOp::kEq, std::move(a), std::move(b)); }
Expr Le(Expr a, Expr b) { return ir::Binary(ir::BinOp::kLe, std::move(a), std::move(b)); }

} // namespace

absl::Status Lowering::RequireMbarriers(ir::Loc loc) const {
  if (target_.kind != Target::Kind::kCuda || target_.sm_version >= 90) return absl::OkStatus();
  return Error(loc, absl::StrCat("T.ws, T.alloc_barrier, T.tma_copy and the mbarrier calls need "
                                 "Hopper (target cuda:sm_90a, or cuda:sm_90 without wgmma); ",
                                 target_.arch, " has no mbarrier parity waits"));
}

absl::StatusOr<Expr> Lowering::BarrierAddress(const ir::Region& r) {
  const Buf* b = FindBuf(r.buffer);
  if (!b || b->scope != ir::Scope::kBarrier || r.ranges.size() != 1) {
    return Error(r.loc, absl::StrCat("'", r.buffer, "' is not a barrier"));
  }
  ASSIGN_OR_RETURN(Expr i, LowerExpr(r.ranges[0].min));
  return Address(*b, i);
}

absl::Status Lowering::LowerBarrierAlloc(const Stmt& s, std::vector<Stmt>* out) {
  RETURN_IF_ERROR(RequireMbarriers(s.loc));
  const std::vector<Stmt>& top = program_.kernel.body;
  if (top.empty() || &s < &top.front() || &s > &top.back() || loop_) {
    return Error(s.loc, "T.alloc_barrier must be at the top level of the kernel body (its "
                        "barriers are initialized once, by the whole block)");
  }
  const Buf& b = bufs_.at(s.buffer.name);
  Stmt a = s;
  a.indices.clear();
  a.buffer.scope = ir::Scope::kSharedDyn;
  a.buffer.shape = {I(b.size)};
  out->push_back(std::move(a));
  std::vector<Stmt> init;
  for (size_t k = 0; k < s.indices.size(); ++k) {
    init.push_back(
        Call("mbarrier_init", {Address(b, I(static_cast<int64_t>(k))), I(s.indices[k].ival)}));
  }
  init.push_back(Call("fence_barrier_init", {}));
  Guarded(Eq(tid_, I(0)), std::move(init), out);
  Barrier(out);
  return absl::OkStatus();
}

absl::Status Lowering::LowerRegionRun(const std::vector<Stmt>& in, size_t first, size_t end,
                                      std::vector<Stmt>* out) {
  // Each region's shared-memory accesses, and the run's.
  struct Accesses {
    std::set<std::string> reads, writes;
  };
  std::vector<Accesses> regions(end - first);
  std::set<std::string> reads, writes;
  for (size_t i = first; i < end; ++i) {
    Accesses& acc = regions[i - first];
    SharedAccesses(in[i], &acc.reads, &acc.writes);
    reads.insert(acc.reads.begin(), acc.reads.end());
    writes.insert(acc.writes.begin(), acc.writes.end());
  }
  // What other threads touched before the run: one block barrier, reached
  // by all, before the first region.
  bool hazard = false;
  for (const std::string& r : reads) hazard = hazard || dirty_.count(r) > 0;
  for (const std::string& w : writes) hazard = hazard || dirty_.count(w) > 0 || read_.count(w) > 0;
  if (hazard && !loop_ && named_barrier_ == 0) {
    // wgmma reads shared memory through the async proxy: every writer
    // fences before the barrier (the gemm's own fence runs on the region's
    // threads only).
    if (wgmma_) {
      out->push_back(Call("fence_proxy_async", {}));
      proxy_dirty_ = false;
    }
    Barrier(out);
  }
  const std::set<std::string> entry_dirty = dirty_, entry_read = read_;
  // The gemms each region leaves in flight (inflight_ after it).
  const std::set<std::string> entry_inflight = inflight_;
  std::vector<std::set<std::string>> region_inflight(end - first);
  const bool entry_proxy_dirty = proxy_dirty_;
  std::vector<bool> region_proxy_dirty(end - first);
  // Regions of the run that share threads run in program order on those
  // threads: a later one synchronizes (named barrier) with what an earlier
  // one touched, and may find its gemms in flight. Regions on other threads
  // run concurrently with it.
  for (size_t i = first; i < end; ++i) {
    const std::optional<std::pair<int64_t, int64_t>> range = WarpGroupRange(in[i]);
    std::set<std::string> dirty, read;
    inflight_ = entry_inflight;
    proxy_dirty_ = entry_proxy_dirty;
    for (size_t j = first; range && j < i; ++j) {
      const std::optional<std::pair<int64_t, int64_t>> earlier = WarpGroupRange(in[j]);
      if (earlier && earlier->first < range->second && range->first < earlier->second) {
        const Accesses& acc = regions[j - first];
        dirty.insert(acc.writes.begin(), acc.writes.end());
        read.insert(acc.reads.begin(), acc.reads.end());
        inflight_.insert(region_inflight[j - first].begin(), region_inflight[j - first].end());
        proxy_dirty_ = proxy_dirty_ || region_proxy_dirty[j - first];
      }
    }
    RETURN_IF_ERROR(LowerWarpSpecialize(in[i], dirty, read, out));
    region_inflight[i - first] = inflight_;
    region_proxy_dirty[i - first] = proxy_dirty_;
  }
  inflight_ = entry_inflight;
  for (const std::set<std::string>& r : region_inflight) inflight_.insert(r.begin(), r.end());
  proxy_dirty_ = entry_proxy_dirty;
  for (bool d : region_proxy_dirty) proxy_dirty_ = proxy_dirty_ || d;
  // What the run touched counts as touched by the block afterwards.
  dirty_ = entry_dirty;
  read_ = entry_read;
  dirty_.insert(writes.begin(), writes.end());
  read_.insert(reads.begin(), reads.end());
  return absl::OkStatus();
}

absl::Status Lowering::LowerWarpSpecialize(const Stmt& s, const std::set<std::string>& dirty,
                                           const std::set<std::string>& read,
                                           std::vector<Stmt>* out) {
  RETURN_IF_ERROR(RequireMbarriers(s.loc));
  if (loop_) return Error(s.loc, "T.ws cannot appear inside a T.Parallel loop");
  if (named_barrier_ != 0) return Error(s.loc, "T.ws regions cannot be nested");
  std::optional<std::pair<int64_t, int64_t>> range = WarpGroupRange(s);
  if (!range) {
    return Error(s.loc, "T.ws: the warpgroups of one region must be consecutive (ws(0, 1), not "
                        "ws(0, 2))");
  }
  const auto [first, end] = *range;
  if (end > threads_) {
    return Error(s.loc, absl::StrCat("T.ws: threads ", first, "..", end - 1,
                                     " are outside the block of ", threads_, " threads"));
  }
  auto [id_it, inserted] = ws_barrier_ids_.emplace(
      *range, kFirstRegionBarrier + static_cast<int>(ws_barrier_ids_.size()));
  if (id_it->second > kLastRegionBarrier) {
    return Error(s.loc,
                 absl::StrCat("T.ws: more than ", kLastRegionBarrier - kFirstRegionBarrier + 1,
                              " distinct warpgroup sets (one named barrier each)"));
  }
  dirty_ = dirty;
  read_ = read;

  const Expr block_tid = tid_;
  const int64_t block_threads = threads_;
  tid_ = first == 0 ? block_tid : ir::Simplify(ir::Binary(ir::BinOp::kSub, block_tid, I(first)));
  threads_ = end - first;
  named_barrier_ = id_it->second;
  std::vector<Stmt> body;
  absl::Status st = LowerStmts(s.body, &body);
  tid_ = block_tid;
  threads_ = block_threads;
  named_barrier_ = 0;
  RETURN_IF_ERROR(st);

  Expr cond = ir::BoolImm(true);
  if (first > 0) cond = Le(I(first), block_tid);
  if (end < block_threads) cond = And(cond, Lt(block_tid, I(end)));
  Guarded(cond, std::move(body), out);
  return absl::OkStatus();
}

absl::Status Lowering::LowerTmaCopy(const Stmt& s, std::vector<Stmt>* out) {
  RETURN_IF_ERROR(RequireMbarriers(s.loc));
  if (loop_) return Error(s.loc, "T.tma_copy cannot appear inside a T.Parallel loop");
  ASSIGN_OR_RETURN(Expr bar, BarrierAddress(s.regions[2]));
  Stmt copy;
  copy.kind = StmtKind::kCopy;
  copy.loc = s.loc;
  copy.regions = {s.regions[0], s.regions[1]};
  if (wgmma_) {
    if (std::optional<TmaCopy> plan = PlanTmaCopy(copy)) {
      std::vector<Stmt> issue;
      issue.push_back(Call("mbarrier_expect_tx", {bar, I(plan->bytes)}));
      RETURN_IF_ERROR(IssueTma(*plan, I(0), bar, &issue));
      Guarded(Eq(tid_, I(0)), std::move(issue), out);
      return absl::OkStatus();
    }
  }
  const std::set<std::string> saved_dirty = dirty_, saved_read = read_;
  RETURN_IF_ERROR(LowerCopy(copy, out));
  dirty_ = saved_dirty;
  read_ = saved_read;
  // wgmma reads shared memory through the async proxy.
  if (wgmma_) out->push_back(Call("fence_proxy_async", {}));
  return absl::OkStatus();
}

bool Lowering::HasSharedSlice(const Stmt& gemm) const {
  for (size_t k = 0; k < 2 && k < gemm.regions.size(); ++k) {
    const Buf* b = FindBuf(gemm.regions[k].buffer);
    if (b && b->scope == ir::Scope::kShared && b->shape.size() > 2) return true;
  }
  return false;
}

// TileLang's staged tiles (A_s[k % 2, :, :] of an (S, R, C) buffer): the
// gemm runs on the 2-d tile the leading indices select. While it is lowered
// the buffer is viewed as that (R, C) tile with the slice as its stage
// (SharedPhys adds stage * R * C), which is where the slice lives in the
// flat (S, R, C) layout, swizzle included when R * C fills whole 8-line
// swizzle periods and R is a multiple of 8 (the XOR key is the row modulo
// 8 either way).
absl::Status Lowering::LowerGemmOnSlices(const Stmt& s, std::vector<Stmt>* out) {
  Stmt g = s;
  std::map<std::string, Buf> saved;
  for (size_t k = 0; k < 2; ++k) {
    ir::Region& r = g.regions[k];
    const Buf* b = FindBuf(r.buffer);
    if (!b || b->scope != ir::Scope::kShared || b->shape.size() <= 2 || saved.count(b->name)) {
      continue;
    }
    const size_t lead = b->shape.size() - 2;
    const int64_t rows = b->shape[lead], cols = b->shape[lead + 1];
    const int64_t bytes = std::max(1, ir::DTypeBits(b->dtype) / 8);
    const bool layout_ok = !b->swizzle || (rows % 8 == 0 && rows * cols * bytes % 1024 == 0);
    if (b->wgmma_block > 0 || b->stages != 1 || stage_.count(b->name) || !layout_ok ||
        r.ranges.size() != b->shape.size()) {
      return Error(s.loc, absl::StrCat("gemm: operand '", b->name,
                                       "' is a slice of a multi-dimensional shared buffer in a "
                                       "layout that cannot be sliced this way"));
    }
    Expr slice = I(0);
    for (size_t d = 0; d < lead; ++d) {
      std::optional<int64_t> ext = ir::ConstInt(ir::Simplify(r.ranges[d].extent));
      if (!ext || *ext != 1) {
        return Error(s.loc, absl::StrCat("gemm: operand '", b->name,
                                         "' must be one 2-d tile of it (a single index in each "
                                         "leading dimension)"));
      }
      ASSIGN_OR_RETURN(Expr i, LowerExpr(r.ranges[d].min));
      slice = Add(Mul(slice, I(b->shape[d])), i);
    }
    saved.emplace(b->name, *b);
    Buf view = *b;
    view.shape = {rows, cols};
    view.shape_expr = {I(rows), I(cols)};
    view.size = rows * cols;
    bufs_[b->name] = view;
    stage_[b->name] = ir::Simplify(slice);
    r.ranges.erase(r.ranges.begin(), r.ranges.begin() + static_cast<std::ptrdiff_t>(lead));
  }
  absl::Status st = LowerGemm(g, out);
  for (auto& [name, b] : saved) {
    bufs_[name] = std::move(b);
    stage_.erase(name);
  }
  return st;
}

absl::Status Lowering::LowerBarrierOp(const Stmt& s, std::vector<Stmt>* out) {
  RETURN_IF_ERROR(RequireMbarriers(s.loc));
  if (loop_) return Error(s.loc, "mbarrier calls cannot appear inside a T.Parallel loop");
  ASSIGN_OR_RETURN(Expr bar, BarrierAddress(s.regions[0]));
  Stmt call;
  switch (s.kind) {
  case StmtKind::kBarrierArrive:
    call = Call("mbarrier_arrive", {bar});
    break;
  case StmtKind::kBarrierWait: {
    ASSIGN_OR_RETURN(Expr parity, LowerExpr(s.value));
    call = Call("mbarrier_wait", {bar, ir::Simplify(parity)});
    break;
  }
  default: {
    ASSIGN_OR_RETURN(Expr bytes, LowerExpr(s.value));
    call = Call("mbarrier_expect_tx", {bar, ir::Simplify(bytes)});
    break;
  }
  }
  call.loc = s.loc;
  out->push_back(std::move(call));
  return absl::OkStatus();
}

} // namespace kiln::passes::lowering
