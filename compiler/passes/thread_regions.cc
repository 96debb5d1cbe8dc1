// Pass "thread-regions": an if / elif / else chain on the thread index
// (`tx = T.get_thread_binding()`, then `if tx < 128: ... else: ...`, or
// `elif tx >= 128 and tx < 256:`) whose branches each cover whole
// warpgroups becomes T.ws regions, one per branch, so that the tile ops
// inside a branch are laid out and lowered for that branch's threads only,
// as TileLang's thread-range analysis does. Without it a fragment used in
// `if tx < 128` would be spread over the whole block and half of it would
// never be computed; a barrier inside the branch would wait for threads that
// never come.
//
// A chain is rewritten only when all of this holds (otherwise it stays an
// ordinary `if`, as before):
//  - the kernel's threads are one-dimensional (or its other dimensions are
//    1) and the conditions compare thread dimension 0 with constants
//    (<, <=, >, >=, joined by `and`);
//  - every branch's threads form one range of whole warpgroups (multiples
//    of 128), which the branches before it leave contiguous;
//  - some branch does tile work (copies, gemms, fills, reductions,
//    T.Parallel loops, TMA or barrier statements): a branch of scalar code
//    needs nothing of this;
//  - it stands outside T.Parallel loops and T.ws regions (regions do not
//    nest), and the target has Hopper's named barriers and mbarriers (a
//    CUDA target of sm_90 or later, or the CPU emulation).
// The regions keep the branches' order; the lowering runs them as the
// branches ran: on disjoint threads, concurrently, ordered only by the
// program's own barriers (lower_hopper_ops.cc).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/ir.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/target.h"
#include "compiler/passes/warp_groups.h"
#include "util/status_macros.h"

namespace kiln::passes {
namespace {

using ir::BinOp;
using ir::Expr;
using ir::ExprKind;
using ir::Stmt;
using ir::StmtKind;

// [lo, hi) of thread indices.
struct ThreadRange {
  int64_t lo = 0, hi = 0;
  bool empty() const { return lo >= hi; }
  ThreadRange Meet(ThreadRange o) const { return {std::max(lo, o.lo), std::min(hi, o.hi)}; }
};

// The threads for which `cond` holds, within `all`; nullopt when `cond` is
// not a comparison of thread index 0 with constants.
std::optional<ThreadRange> ThreadsWhere(const Expr& cond, ThreadRange all) {
  if (cond.kind != ExprKind::kBinary || cond.args.size() != 2) return std::nullopt;
  if (cond.bop == BinOp::kAnd) {
    std::optional<ThreadRange> a = ThreadsWhere(cond.args[0], all);
    std::optional<ThreadRange> b = ThreadsWhere(cond.args[1], all);
    if (!a || !b) return std::nullopt;
    return a->Meet(*b);
  }
  // tx OP c, or c OP tx (flipped to tx OP' c).
  BinOp op = cond.bop;
  const Expr* t = &cond.args[0];
  std::optional<int64_t> c = ir::ConstInt(cond.args[1]);
  if (t->kind != ExprKind::kThreadIdx) {
    t = &cond.args[1];
    c = ir::ConstInt(cond.args[0]);
    switch (op) {
    case BinOp::kLt:
      op = BinOp::kGt;
      break;
    case BinOp::kLe:
      op = BinOp::kGe;
      break;
    case BinOp::kGt:
      op = BinOp::kLt;
      break;
    case BinOp::kGe:
      op = BinOp::kLe;
      break;
    default:
      return std::nullopt;
    }
  }
  if (t->kind != ExprKind::kThreadIdx || t->ival != 0 || !c) return std::nullopt;
  const int64_t v = *c;
  switch (op) {
  case BinOp::kLt:
    return all.Meet({all.lo, v});
  case BinOp::kLe:
    return all.Meet({all.lo, v + 1});
  case BinOp::kGt:
    return all.Meet({v + 1, all.hi});
  case BinOp::kGe:
    return all.Meet({v, all.hi});
  default:
    return std::nullopt;
  }
}

bool TileWork(const std::vector<Stmt>& body) {
  bool found = false;
  ir::ForEachStmt(body, [&](const Stmt& s) {
    switch (s.kind) {
    case StmtKind::kCopy:
    case StmtKind::kGemm:
    case StmtKind::kFill:
    case StmtKind::kReduce:
    case StmtKind::kAtomic:
    case StmtKind::kTmaCopy:
    case StmtKind::kBarrierArrive:
    case StmtKind::kBarrierWait:
    case StmtKind::kBarrierExpectTx:
    case StmtKind::kWaitWgmma:
      found = true;
      break;
    case StmtKind::kFor:
      found = found || s.for_kind == ir::ForKind::kParallel;
      break;
    default:
      break;
    }
  });
  return found;
}

bool HasRegion(const std::vector<Stmt>& body) {
  bool found = false;
  ir::ForEachStmt(body,
                  [&](const Stmt& s) { found = found || s.kind == StmtKind::kWarpSpecialize; });
  return found;
}

bool WholeWarpGroups(ThreadRange r) {
  return !r.empty() && r.lo % kWarpGroupThreads == 0 && r.hi % kWarpGroupThreads == 0;
}

Stmt WsRegion(ThreadRange r, std::vector<Stmt> body, ir::Loc loc) {
  Stmt ws;
  ws.kind = StmtKind::kWarpSpecialize;
  ws.loc = loc;
  for (int64_t g = r.lo / kWarpGroupThreads; g < r.hi / kWarpGroupThreads; ++g) {
    ws.indices.push_back(ir::IntImm(g, ir::DType::kInt32, loc));
  }
  ws.body = std::move(body);
  return ws;
}

// The regions of the chain headed by `s` over threads `all`, or nullopt
// when the chain does not qualify (see the top of the file).
std::optional<std::vector<Stmt>> ChainRegions(const Stmt& s, ThreadRange all, bool* tile_work) {
  std::optional<ThreadRange> then = ThreadsWhere(s.cond, all);
  if (!then || !WholeWarpGroups(*then) || (then->lo == all.lo && then->hi == all.hi)) {
    return std::nullopt;
  }
  if (then->lo != all.lo && then->hi != all.hi) return std::nullopt; // else in two pieces
  const ThreadRange rest =
      then->lo == all.lo ? ThreadRange{then->hi, all.hi} : ThreadRange{all.lo, then->lo};
  if (HasRegion(s.body) || HasRegion(s.else_body)) return std::nullopt;
  *tile_work = *tile_work || TileWork(s.body);
  std::vector<Stmt> out;
  out.push_back(WsRegion(*then, s.body, s.loc));
  if (s.else_body.size() == 1 && s.else_body[0].kind == StmtKind::kIf) {
    if (auto more = ChainRegions(s.else_body[0], rest, tile_work)) {
      for (Stmt& r : *more) out.push_back(std::move(r));
      return out;
    }
  }
  if (!s.else_body.empty()) {
    *tile_work = *tile_work || TileWork(s.else_body);
    out.push_back(WsRegion(rest, s.else_body, s.else_body.front().loc));
  }
  return out;
}

void Rewrite(std::vector<Stmt>* body, ThreadRange block) {
  std::vector<Stmt> out;
  out.reserve(body->size());
  for (Stmt& s : *body) {
    if (s.kind == StmtKind::kWarpSpecialize ||
        (s.kind == StmtKind::kFor && s.for_kind == ir::ForKind::kParallel)) {
      out.push_back(std::move(s));
      continue;
    }
    if (s.kind == StmtKind::kIf) {
      bool tile_work = false;
      std::optional<std::vector<Stmt>> regions = ChainRegions(s, block, &tile_work);
      if (regions && tile_work) {
        for (Stmt& r : *regions) out.push_back(std::move(r));
        continue;
      }
    }
    Rewrite(&s.body, block);
    Rewrite(&s.else_body, block);
    out.push_back(std::move(s));
  }
  *body = std::move(out);
}

absl::Status RunThreadRegions(ir::Program& program, const PassContext& ctx) {
  ASSIGN_OR_RETURN(Target target, ParseTarget(ctx.lower_for.empty() ? ctx.target : ctx.lower_for));
  if (target.kind == Target::Kind::kHip ||
      (target.kind == Target::Kind::kCuda && target.sm_version < 90)) {
    return absl::OkStatus();
  }
  const std::vector<int64_t>& threads = program.kernel.threads;
  if (threads.empty()) return absl::OkStatus();
  for (size_t d = 1; d < threads.size(); ++d) {
    if (threads[d] != 1) return absl::OkStatus();
  }
  Rewrite(&program.kernel.body, ThreadRange{0, threads[0]});
  return absl::OkStatus();
}

} // namespace

void RegisterThreadRegionsPass() {
  RegisterPass({"thread-regions",
                "turns if/elif chains on the thread index whose branches cover whole "
                "warpgroups into T.ws regions (tile ops laid out for the branch's threads)",
                RunThreadRegions});
}

} // namespace kiln::passes
