// How the tile IR marks a reducer (TileLang's T.alloc_reducer) and its
// finalization (T.finalize_reducer).
//
// A reducer is a fragment that every thread of the block holds whole (the
// fully replicated layout) and accumulates into privately: inside a
// T.Parallel loop, `r[i] = r[i] (op) v` updates the executing thread's own
// copy, whatever the indices. The tile IR says so with one statement after
// the allocation,
//     annotate_layout r reducer_sum        (or reducer_max, reducer_min)
// and finalization is a reduction across the block's threads, in place:
//     reduce_sum r[0 +: n] -> r[0 +: n] dim=-1 clear=false
// (dim -1: no dimension of the buffer is reduced; every thread's copy of
// each element is combined with the reducer's op, and afterwards every
// thread holds the combined value). Both forms are ordinary IR statements,
// so the text form, the wire form and the cache key carry them unchanged.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::ir {

// The layout-name prefix of a reducer mark.
inline constexpr std::string_view kReducerLayoutPrefix = "reducer_";

// The `dim` of a kReduce that finalizes a reducer.
inline constexpr int32_t kReducerFinalizeDim = -1;

// "reducer_sum" / "reducer_max" / "reducer_min"; only these three ops.
inline std::string ReducerLayoutName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::kMax:
    return "reducer_max";
  case ReduceKind::kMin:
    return "reducer_min";
  default:
    return "reducer_sum";
  }
}

// The op of a reducer mark, or nullopt when `layout` is not one.
inline std::optional<ReduceKind> ReducerKindOfLayout(std::string_view layout) {
  if (layout == "reducer_sum") return ReduceKind::kSum;
  if (layout == "reducer_max") return ReduceKind::kMax;
  if (layout == "reducer_min") return ReduceKind::kMin;
  return std::nullopt;
}

// Every reducer marked in `body` (nested bodies included): buffer -> op.
inline void CollectReducers(const std::vector<Stmt>& body, std::map<std::string, ReduceKind>* out) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::kAnnotateLayout) {
      if (std::optional<ReduceKind> k = ReducerKindOfLayout(s.layout)) (*out)[s.name] = *k;
    }
    CollectReducers(s.body, out);
    CollectReducers(s.else_body, out);
  }
}

} // namespace kiln::ir
