#include "compiler/passes/persistent.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/layout_inference.h"
#include "compiler/passes/target.h"
#include "util/status_macros.h"

namespace kiln::passes {
namespace {

using ir::BinOp;
using ir::Expr;
using ir::Stmt;
using ir::StmtKind;

// persistent=auto's longest K loop. A tile's fixed costs (its epilogue, the
// pipeline's fill) are what walking the tiles hides, and they weigh less the
// longer the loop. On an H100 (docs/benchmarks.md, "Persistent tiles")
// 128x256x64 and 256x128x64 tiles at K = 4096 (64 trips) mostly ran 1-11 %
// faster persistent and fp8 256x128x128 at 4096^3 (32 trips) 7-8 %, while
// at 8192^3 fp16 (128 trips) they mostly ran 2-7 % slower; fp8 at 8192^3 (64
// trips) was -4 to +1 %. A heuristic, hence not the default.
constexpr int64_t kAutoMaxTrips = 64;

Expr I(int64_t v) { return ir::IntImm(v); }
Expr Bin(BinOp op, Expr a, Expr b) { return ir::Binary(op, std::move(a), std::move(b)); }

// Why `program` cannot be made persistent (a located error), or OK; `loop`
// receives the index of the top-level pipelined loop.
absl::Status Check(const ir::Program& program, int64_t sms, size_t* loop) {
  const ir::Kernel& k = program.kernel;
  const auto refuse = [&](ir::Loc loc, absl::string_view why) {
    return ir::ErrorAt(program.source_name, loc, absl::StrCat("persistent: ", why));
  };
  if (!program.next_kernels.empty()) {
    return refuse(program.next_kernels[0].loc,
                  "the program has several kernels (split-K makes two of a grid of at most a "
                  "quarter of the SMs; split-k=1 keeps one)");
  }
  const std::optional<int64_t> blocks = ir::ConstGridBlocks(k);
  if (!blocks) return refuse(k.loc, "the grid's extents must be constants");
  if (*blocks <= sms) {
    return refuse(k.loc, absl::StrCat("the grid has ", *blocks, " blocks, no more than the ", sms,
                                      " SMs: there are no waves to walk"));
  }
  std::optional<size_t> at;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Stmt& s = k.body[i];
    if (s.kind != StmtKind::kFor || s.for_kind != ir::ForKind::kPipelined) continue;
    if (at) return refuse(s.loc, "the kernel has more than one T.Pipelined loop");
    at = i;
  }
  if (!at) return refuse(k.loc, "the kernel has no T.Pipelined loop at the top of its body");
  const Stmt& p = k.body[*at];
  if (p.num_stages < 2) return refuse(p.loc, "the T.Pipelined loop must have 2 stages or more");
  int gemms = 0;
  for (const Stmt& s : p.body) {
    if (s.kind == StmtKind::kGemm) {
      ++gemms;
    } else if (s.kind != StmtKind::kCopy) {
      return refuse(s.loc, "the T.Pipelined loop may hold only copies and one gemm");
    }
  }
  if (gemms != 1) return refuse(p.loc, "the T.Pipelined loop must hold exactly one gemm");
  absl::Status status;
  ir::ForEachStmt(k.body, [&](const Stmt& s) {
    const bool own = s.kind == StmtKind::kWarpSpecialize || s.kind == StmtKind::kTmaCopy ||
                     s.kind == StmtKind::kBarrierArrive || s.kind == StmtKind::kBarrierWait ||
                     s.kind == StmtKind::kBarrierExpectTx || s.kind == StmtKind::kWaitWgmma ||
                     (s.kind == StmtKind::kAlloc && s.buffer.scope == ir::Scope::kBarrier);
    if (own && status.ok()) {
      status = refuse(s.loc, "the kernel synchronizes its threads itself (T.ws, barriers or "
                             "T.tma_copy), and keeps its own schedule");
    }
  });
  RETURN_IF_ERROR(status);
  *loop = *at;
  return absl::OkStatus();
}

// The shared memory a block of `k` takes, the pipeline's stages counted:
// every shared allocation, times the loop's stages where a copy of the
// pipelined loop `p` fills it.
int64_t SharedEstimate(const ir::Kernel& k, const Stmt& p) {
  std::set<std::string> staged;
  for (const Stmt& s : p.body) {
    if (s.kind == StmtKind::kCopy && s.regions.size() == 2) staged.insert(s.regions[1].buffer);
  }
  int64_t bytes = 0;
  ir::ForEachStmt(k.body, [&](const Stmt& s) {
    if (s.kind != StmtKind::kAlloc ||
        (s.buffer.scope != ir::Scope::kShared && s.buffer.scope != ir::Scope::kSharedDyn)) {
      return;
    }
    int64_t elems = 1;
    for (const Expr& e : s.buffer.shape) elems *= ir::ConstInt(ir::Simplify(e)).value_or(1);
    const int64_t stages = staged.count(s.buffer.name) ? p.num_stages : 1;
    bytes += elems * std::max(1, ir::DTypeBits(s.buffer.dtype) / 8) * stages;
  });
  return bytes;
}

// The block indices of linear tile `tile` over `grid` (constants): x
// fastest, as the hardware numbers a grid's blocks, or in the panels of a
// T.use_swizzle (cxx_emitter.cc's BlockVars: panels of `panel` rows of y
// spanning x, or of columns of x for "col"; down the panel's rows first;
// every other panel backwards; the last one as tall as what is left).
std::vector<Expr> TileIndices(const Expr& tile, const std::vector<int64_t>& grid,
                              const Stmt* swizzle) {
  std::vector<Expr> idx(grid.size());
  Expr lin = tile;
  if (grid.size() == 3) {
    idx[2] = Bin(BinOp::kFloorDiv, tile, I(grid[0] * grid[1]));
    lin = Bin(BinOp::kFloorMod, tile, I(grid[0] * grid[1]));
  }
  if (swizzle == nullptr || grid.size() < 2) {
    idx[0] = Bin(BinOp::kFloorMod, lin, I(grid[0]));
    if (grid.size() >= 2) idx[1] = Bin(BinOp::kFloorDiv, lin, I(grid[0]));
    return idx;
  }
  const bool row = swizzle->swizzle_order != "col";
  const int64_t na = row ? grid[0] : grid[1], nd = row ? grid[1] : grid[0];
  const int64_t panel = swizzle->panel_size;
  const Expr pidx = Bin(BinOp::kFloorDiv, lin, I(panel * na));
  const Expr poff = Bin(BinOp::kFloorMod, lin, I(panel * na));
  const Expr tall =
      nd % panel == 0
          ? I(panel)
          : Bin(BinOp::kMin, I(panel), Bin(BinOp::kSub, I(nd), Bin(BinOp::kMul, pidx, I(panel))));
  const Expr along = Bin(BinOp::kFloorDiv, poff, tall);
  const Expr a = ir::Select(Bin(BinOp::kEq, Bin(BinOp::kFloorMod, pidx, I(2)), I(0)), along,
                            Bin(BinOp::kSub, I(na - 1), along));
  const Expr d =
      Bin(BinOp::kAdd, Bin(BinOp::kFloorMod, poff, tall), Bin(BinOp::kMul, pidx, I(panel)));
  idx[0] = row ? a : d;
  idx[1] = row ? d : a;
  return idx;
}

} // namespace

absl::Status MakePersistent(ir::Program& program, int64_t sms) {
  size_t at = 0;
  RETURN_IF_ERROR(Check(program, sms, &at));
  ir::Kernel& k = program.kernel;
  std::vector<int64_t> grid;
  for (const Expr& g : k.grid) grid.push_back(*ir::ConstInt(ir::Simplify(g)));
  const int64_t tiles = *ir::ConstGridBlocks(k);

  ir::FreshNames names(program);
  const std::string pb = names.Fresh("kiln_pblock");
  const std::string j = names.Fresh("kiln_wave");
  const ir::Loc loc = k.body[at].loc;

  // Allocations and layout annotations stay above the loop; a use_swizzle
  // becomes the tile order.
  std::vector<Stmt> head, body;
  std::optional<Stmt> swizzle;
  for (Stmt& s : k.body) {
    if (s.kind == StmtKind::kUseSwizzle) {
      if (s.enable) swizzle = s;
      continue;
    }
    const bool hoist = s.kind == StmtKind::kAlloc || s.kind == StmtKind::kAnnotateLayout;
    (hoist ? head : body).push_back(std::move(s));
  }
  const Expr tile = Bin(BinOp::kAdd, ir::VarRef(pb), Bin(BinOp::kMul, ir::VarRef(j), I(sms)));
  const std::vector<Expr> idx = TileIndices(tile, grid, swizzle ? &*swizzle : nullptr);
  std::map<std::string, Expr> values;
  for (size_t d = 0; d < k.block_vars.size(); ++d) {
    values.emplace(k.block_vars[d], ir::Simplify(idx[d]));
  }
  ir::SubstituteVars(&body, values);

  Stmt loop;
  loop.kind = StmtKind::kFor;
  loop.for_kind = ir::ForKind::kSerial;
  loop.loop_vars = {j};
  // ceildiv(tiles - pb, sms): every block has at least one tile (pb < sms <
  // tiles).
  loop.extents = {ir::Simplify(
      Bin(BinOp::kFloorDiv, Bin(BinOp::kSub, I(tiles + sms - 1), ir::VarRef(pb)), I(sms)))};
  loop.body = std::move(body);
  loop.loc = loc;
  head.push_back(std::move(loop));
  k.body = std::move(head);
  k.grid = {ir::IntImm(sms, ir::DType::kInt32, k.loc)};
  k.block_vars = {pb};
  program.attrs[kPersistentTilesAttr] = absl::StrCat(tiles);
  // One block per SM: the grid is sized for it.
  program.attrs[kWsBlocksAttr] = absl::StrCat(1);
  return absl::OkStatus();
}

bool AutoPersistent(ir::Program& program, int64_t sms) {
  size_t at = 0;
  if (!Check(program, sms, &at).ok()) return false;
  const Stmt& loop = program.kernel.body[at];
  const int64_t shared = SharedEstimate(program.kernel, loop);
  if (2 * (shared + 2 * kBlockReservedSharedBytes) <= kSm90SmSharedBytes) return false;
  const std::optional<int64_t> trips = ir::ConstInt(ir::Simplify(loop.extents[0]));
  if (!trips || *trips > kAutoMaxTrips) return false;
  return MakePersistent(program, sms).ok();
}

} // namespace kiln::passes
