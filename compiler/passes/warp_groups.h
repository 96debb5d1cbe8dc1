// The threads a statement runs on, given TileLang's T.ws regions
// (ir::StmtKind::kWarpSpecialize): the body of ws(g0, g1, ...) runs on the
// threads of those 128-thread warpgroups only, numbered from the region's
// first thread, and its tile ops are laid out and lowered for that many
// threads. Layout inference and lowering both read this, so they agree.
//
// Thread-safe (pure functions).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::passes {

inline constexpr int64_t kWarpGroupThreads = 128;

// [first, end) threads of a ws region, or nullopt when its warpgroups are
// not consecutive (ws(0, 2): not supported) or not constant.
inline std::optional<std::pair<int64_t, int64_t>> WarpGroupRange(const ir::Stmt& ws) {
  std::vector<int64_t> ids;
  for (const ir::Expr& e : ws.indices) {
    if (e.kind != ir::ExprKind::kInt) return std::nullopt;
    ids.push_back(e.ival);
  }
  if (ids.empty()) return std::nullopt;
  std::sort(ids.begin(), ids.end());
  for (size_t k = 1; k < ids.size(); ++k) {
    if (ids[k] != ids[k - 1] + 1) return std::nullopt;
  }
  return std::make_pair(ids.front() * kWarpGroupThreads, (ids.back() + 1) * kWarpGroupThreads);
}

// Calls fn(stmt, threads) for every statement of `body` (pre-order), where
// `threads` is the thread count the statement runs with: `block` outside
// ws regions, the region's size inside one.
inline void ForEachStmtWithThreads(const std::vector<ir::Stmt>& body, int64_t block,
                                   const std::function<void(const ir::Stmt&, int64_t)>& fn) {
  for (const ir::Stmt& s : body) {
    fn(s, block);
    int64_t inner = block;
    if (s.kind == ir::StmtKind::kWarpSpecialize) {
      if (auto r = WarpGroupRange(s)) inner = r->second - r->first;
    }
    ForEachStmtWithThreads(s.body, inner, fn);
    ForEachStmtWithThreads(s.else_body, inner, fn);
  }
}

// True when `body` holds explicit Hopper synchronization (ws regions,
// barriers, tma_copy): its loops follow the user's schedule, not an
// automatic pipeline.
inline bool HasExplicitSync(const std::vector<ir::Stmt>& body) {
  for (const ir::Stmt& s : body) {
    switch (s.kind) {
    case ir::StmtKind::kWarpSpecialize:
    case ir::StmtKind::kTmaCopy:
    case ir::StmtKind::kBarrierArrive:
    case ir::StmtKind::kBarrierWait:
    case ir::StmtKind::kBarrierExpectTx:
    case ir::StmtKind::kCall: // a barrier of the program's own (T.sync_threads)
      // (split-K's ticket is the lowering's: it brings its own barriers)
      if (s.name != "splitk_ticket") return true;
      break;
    default:
      break;
    }
    if (HasExplicitSync(s.body) || HasExplicitSync(s.else_body)) return true;
  }
  return false;
}

} // namespace kiln::passes
