// Pass "shared-placement": where each shared buffer of a thread program lives
// in the block's dynamic shared memory, when giving every buffer its own bytes
// would not fit the target.
//
// 1. The shared buffers (flat after lower-tile-ops, stages included) are
//    placed one after the other, in the order the emitter declares them,
//    each at its alignment (128 bytes; 1024 for wgmma operands, attr
//    kiln.smem_align.<buffer>). If that fits the target's opt-in limit, the
//    program is left as it is: the emitter places them the same way.
// 2. Otherwise, unless the program synchronizes through mbarriers, TMA or
//    named barriers (a warp-specialized kernel: its producer and consumer
//    are one unit and its asynchronous copies complete on mbarriers, so
//    Kiln does not reuse there), buffers whose live ranges (shared_liveness.h)
//    do not overlap share bytes: attr kiln.smem_offset.<buffer> = offset,
//    which the emitter uses instead of its running offset.
// 3. Barriers. Lowering placed block barriers by buffer name; two buffers
//    that now share bytes need one between the last access of the earlier
//    and the first of the later. For each such pair, unless a sync_threads
//    already stands in the later one's list, after the earlier's last use,
//    the later one's first unit is preceded by: cp_async_wait(0) (when the
//    program uses cp.async: no copy into the earlier buffer is still in
//    flight), wgmma_wait(0) (when it uses wgmma: no read of it is), and
//    sync_threads. The unit sits in a uniform list, so every thread reaches
//    the barrier.
// Any kiln.smem_offset.* attr already on the program is dropped first: only
// this pass decides offsets.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/shared_liveness.h"
#include "compiler/passes/target.h"
#include "util/status_macros.h"

namespace kiln::passes {
namespace {

using ir::Stmt;
using ir::StmtKind;

constexpr char kOffsetAttr[] = "kiln.smem_offset.";

bool IsBarrier(const Stmt& s) { return s.kind == StmtKind::kCall && s.name == "sync_threads"; }

// Intrinsics of kernels whose shared memory Kiln does not reuse (step 2).
bool AsyncSync(const std::string& name) {
  return absl::StartsWith(name, "mbarrier_") || absl::StartsWith(name, "tma_") ||
         absl::StartsWith(name, "setmaxnreg_") || name == "named_barrier_sync" ||
         name == "fence_barrier_init" || name == "prefetch_tma_desc";
}

absl::StatusOr<int64_t> Limit(const PassContext& ctx) {
  ASSIGN_OR_RETURN(Target t, ParseTarget(ctx.target));
  int64_t limit = t.shared_bytes_optin;
  if (!ctx.lower_for.empty()) {
    ASSIGN_OR_RETURN(Target lf, ParseTarget(ctx.lower_for));
    limit = std::min(limit, lf.shared_bytes_optin);
  }
  return limit;
}

absl::Status PlaceShared(ir::Program& program, const PassContext& ctx) {
  auto level = program.attrs.find("kiln.level");
  if (level == program.attrs.end() || level->second != "thread") {
    return absl::FailedPreconditionError(
        "shared-placement: the program is not lowered (run lower-tile-ops)");
  }
  for (auto it = program.attrs.begin(); it != program.attrs.end();) {
    it = absl::StartsWith(it->first, kOffsetAttr) ? program.attrs.erase(it) : std::next(it);
  }
  ASSIGN_OR_RETURN(const int64_t limit, Limit(ctx));

  std::vector<SharedSlot> slots;
  std::set<std::string> names;
  bool async_sync = false, cp_async = false, wgmma = false;
  ir::ForEachStmt(program.kernel.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::kCall) {
      async_sync = async_sync || AsyncSync(s.name);
      cp_async = cp_async || absl::StartsWith(s.name, "cp_async_");
      wgmma = wgmma || absl::StartsWith(s.name, "wgmma_");
    }
    if (s.kind != StmtKind::kAlloc) return;
    const ir::Buffer& b = s.buffer;
    if (b.scope != ir::Scope::kShared && b.scope != ir::Scope::kSharedDyn) return;
    SharedSlot slot;
    slot.name = b.name;
    slot.bytes = std::max(1, ir::DTypeBits(b.dtype) / 8);
    for (const ir::Expr& e : b.shape) {
      std::optional<int64_t> n = ir::ConstInt(ir::Simplify(e));
      slot.bytes *= n.value_or(0); // the emitter refuses a non-constant shape
    }
    auto al = program.attrs.find(absl::StrCat("kiln.smem_align.", b.name));
    slot.align = al != program.attrs.end() && al->second == "1024" ? 1024 : 128;
    names.insert(b.name);
    slots.push_back(std::move(slot));
  });
  if (async_sync || PlaceSequential(slots).total <= limit) return absl::OkStatus();

  const std::map<std::string, LiveRange> live = SharedLiveRanges(program, names);
  for (SharedSlot& s : slots) s.live = live.at(s.name);
  const SharedLayout layout = PlaceByLiveness(slots);
  const std::vector<std::pair<size_t, size_t>> reuses = SharedReuses(slots, layout);
  if (reuses.empty()) return absl::OkStatus();
  for (size_t i = 0; i < slots.size(); ++i) {
    program.attrs[absl::StrCat(kOffsetAttr, slots[i].name)] = absl::StrCat(layout.offsets[i]);
  }

  // Step 3: the units that need a barrier before them.
  const std::vector<LiveUnit> units = LiveUnits(program);
  std::map<std::pair<const std::vector<Stmt>*, size_t>, int64_t> position;
  for (size_t p = 0; p < units.size(); ++p) {
    position[{units[p].list, units[p].index}] = static_cast<int64_t>(p);
  }
  std::set<int64_t> before;
  for (const auto& [earlier, later] : reuses) {
    const int64_t first = slots[later].live.first;
    const LiveUnit& u = units[static_cast<size_t>(first)];
    bool covered = false;
    for (size_t j = u.index; j-- > 0;) {
      if (!IsBarrier((*u.list)[j])) continue;
      auto p = position.find({u.list, j});
      covered = p != position.end() && p->second > slots[earlier].live.last;
      break;
    }
    if (!covered) before.insert(first);
  }
  std::vector<Stmt> sync;
  if (cp_async) sync.push_back(ir::CallStmt("cp_async_wait", {ir::IntImm(0)}));
  if (wgmma) sync.push_back(ir::CallStmt("wgmma_wait", {ir::IntImm(0)}));
  sync.push_back(ir::CallStmt("sync_threads", {}));
  InsertBeforeUnits(program, before, sync);
  return absl::OkStatus();
}

} // namespace

void RegisterSharedPlacementPass() {
  RegisterPass({"shared-placement",
                "thread IR: when the shared buffers do not fit the target one after another, "
                "buffers whose lifetimes do not overlap share bytes (attrs "
                "kiln.smem_offset.<buffer>), with a block barrier at each reuse",
                PlaceShared});
}

} // namespace kiln::passes
