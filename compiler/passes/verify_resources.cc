// Pass "verify-resources": checks a program against its target's per-block
// limits before any code is generated, so that an oversized config fails
// with a located message instead of a launch error on the GPU.
//
// 0. Integer ranges (every input: source, text IR, proto). Loop, block and
//    thread variables are int32 and lowering indexes loops and regions with
//    int32 arithmetic, so: the integer literals of extents, shapes and the
//    grid, and each constant step of their arithmetic, fit their dtype (the
//    simplifier would wrap int32 2**32 + 32 to 32, 65536 * 65536 to 0);
//    constant loop, region and grid extents fit int32; the iteration space
//    of a parallel or pipelined loop and the element count of a tile op's
//    region are at most 2**30 (ir::kMaxTileSpace: headroom for padding); num_stages is in [0, 64]
//    (the frontend's limit); a global tensor's constant size in bytes fits int64. This runs before
//    the simplify pass (codegen's pipeline) so it sees the literals as sent.
// 1. Threads per block and grid extents (y and z at most 65535).
// 2. Shared memory: every shared/shared.dyn buffer must have a constant
//    shape; a buffer the pipeline multi-buffers (a producer copy of a
//    Pipelined loop with num_stages = s: lowering::CollectPipelineStages) is
//    counted s times. Buffers whose live ranges do not overlap share bytes
//    (shared_liveness.h, as pass shared-placement places them after
//    lowering); the total must fit the target's opt-in limit. Alignment
//    padding and lowering's reduction scratch are not known here: the
//    emitter checks the final size again.
// 3. Registers: fragments are spread over the block's threads and local
//    buffers are per thread; the resulting lower bound on 32-bit registers
//    per thread may exceed the target's limit by up to kSpillFactor times:
//    ptxas then spills the rest to local memory, as it does for TileLang
//    (flash attention at its own tile sizes needs 325), and the artifact's
//    ResourceUsage reports the spill bytes. Past that the kernel would live
//    in local memory; it is refused with the numbers.
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/int_range.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/fold_grid.h"
#include "compiler/passes/lowering.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/shared_liveness.h"
#include "compiler/passes/target.h"
#include "util/status_macros.h"

namespace kiln::passes {
namespace {

// How far past the target's registers per thread the lower bound may go:
// the rest spills to local memory (section 3 above).
constexpr int64_t kSpillFactor = 4;

struct SharedUse {
  const ir::Stmt* alloc = nullptr;
  int64_t bytes = 0;
  int stages = 1;
};

void CollectAllocs(const std::vector<ir::Stmt>& body, std::vector<const ir::Stmt*>* out) {
  for (const ir::Stmt& s : body) {
    if (s.kind == ir::StmtKind::kAlloc) out->push_back(&s);
    CollectAllocs(s.body, out);
    CollectAllocs(s.else_body, out);
  }
}

// Section 0 of the file comment: the ranges every later pass relies on.
class IntRangeCheck {
 public:
  explicit IntRangeCheck(const ir::Program& program)
      : program_(program), file_(program.source_name) {}

  absl::Status Run() {
    const ir::Kernel& k = program_.kernel;
    for (const ir::Param& p : program_.params) RETURN_IF_ERROR(Shape(p.buffer));
    for (size_t d = 0; d < k.grid.size(); ++d) {
      RETURN_IF_ERROR(Extent(k.grid[d], k.loc, absl::StrCat("grid extent ", d), 1));
    }
    return Stmts(k.body);
  }

 private:
  // Every integer literal of `e` is a value of its dtype, and no constant
  // sub-expression (literals under + - * // % min max, negation, casts)
  // leaves its dtype: the simplifier would wrap it, and an extent such as
  // int32 65536 * 65536 would silently become 0.
  absl::Status Literals(const ir::Expr& e, ir::Loc at) const { return Exact(e, at).status(); }

  // The exact value of a constant integer expression, nullopt where `e` is
  // not one, or the located error of the first step that leaves its dtype.
  absl::StatusOr<std::optional<int64_t>> Exact(const ir::Expr& e, ir::Loc at) const {
    const ir::Loc loc = Or(e.loc, at);
    std::vector<std::optional<int64_t>> args;
    for (const ir::Expr& a : e.args) {
      absl::StatusOr<std::optional<int64_t>> v = Exact(a, at);
      if (!v.ok()) return v.status();
      args.push_back(*v);
    }
    if (e.kind == ir::ExprKind::kInt) {
      if (ir::FitsDType(e.ival, e.dtype)) return std::optional<int64_t>(e.ival);
      return ir::ErrorAt(file_, loc,
                         absl::StrCat("integer literal ", e.ival, " does not fit ",
                                      std::string(ir::DTypeName(e.dtype))));
    }
    if (!ir::IsInteger(e.dtype)) return std::optional<int64_t>();
    for (const std::optional<int64_t>& a : args) {
      if (!a) return std::optional<int64_t>();
    }
    std::optional<int64_t> v;
    if (e.kind == ir::ExprKind::kCast && args.size() == 1 && ir::IsInteger(e.args[0].dtype)) {
      v = args[0];
    } else if (e.kind == ir::ExprKind::kUnary && e.uop == ir::UnOp::kNeg && args.size() == 1) {
      v = ir::CheckedMul(*args[0], -1);
    } else if (e.kind == ir::ExprKind::kBinary && args.size() == 2) {
      const int64_t a = *args[0], b = *args[1];
      switch (e.bop) {
      case ir::BinOp::kAdd:
        v = ir::CheckedAdd(a, b);
        break;
      case ir::BinOp::kSub:
        v = b == std::numeric_limits<int64_t>::min() ? std::nullopt : ir::CheckedAdd(a, -b);
        break;
      case ir::BinOp::kMul:
        v = ir::CheckedMul(a, b);
        break;
      case ir::BinOp::kMin:
        return std::optional<int64_t>(std::min(a, b));
      case ir::BinOp::kMax:
        return std::optional<int64_t>(std::max(a, b));
      default:
        // Division and the rest cannot leave the range of their operands
        // (but INT_MIN / -1, which the folder leaves alone).
        return std::optional<int64_t>();
      }
    } else {
      return std::optional<int64_t>();
    }
    if (v && ir::FitsDType(*v, e.dtype)) return v;
    const std::string what = e.kind == ir::ExprKind::kCast ? "conversion" : "constant arithmetic";
    return ir::ErrorAt(
        file_, loc,
        absl::StrCat(what, " in an extent or shape leaves ", std::string(ir::DTypeName(e.dtype)),
                     v ? absl::StrCat(" (exact value ", *v, ")") : std::string(" (beyond int64)"),
                     "; the simplifier would wrap it"));
  }

  // An extent: literals in range, and a constant value in [lo, INT32_MAX].
  // Returns the constant value (or nullopt) through `value`.
  absl::Status Extent(const ir::Expr& e, ir::Loc at, const std::string& what, int64_t lo,
                      std::optional<int64_t>* value = nullptr) const {
    RETURN_IF_ERROR(Literals(e, at));
    std::optional<int64_t> c = ir::ConstInt(e);
    if (c) {
      RETURN_IF_ERROR(ir::CheckIntRange(*c, lo, ir::kInt32Max, file_, Or(e.loc, at), what,
                                        "loops and tiles are indexed with int32"));
    }
    if (value != nullptr) *value = c;
    return absl::OkStatus();
  }

  // A buffer's literals; a global tensor's constant size in bytes fits int64.
  absl::Status Shape(const ir::Buffer& b) const {
    int64_t bytes = std::max(1, ir::DTypeBits(b.dtype) / 8);
    for (const ir::Expr& d : b.shape) {
      RETURN_IF_ERROR(Literals(d, b.loc));
      std::optional<int64_t> c = ir::ConstInt(d);
      if (!c || *c <= 0) continue; // the verifier reports non-positive extents
      std::optional<int64_t> next = ir::CheckedMul(bytes, *c);
      if (!next) {
        return ir::ErrorAt(file_, b.loc,
                           absl::StrCat("buffer '", b.name,
                                        "' is larger than 9223372036854775807 bytes (sizes are "
                                        "computed in int64)"));
      }
      bytes = *next;
    }
    return absl::OkStatus();
  }

  // A product of constant extents (a parallel or pipelined loop's
  // iterations, a region's elements) must be at most ir::kMaxTileSpace:
  // lowering spreads them over the threads, or loads them ahead, with int32
  // indices that run past the extent.
  absl::Status Space(const std::vector<std::optional<int64_t>>& extents, ir::Loc loc,
                     const std::string& what) const {
    int64_t n = 1;
    std::string text;
    for (const std::optional<int64_t>& e : extents) {
      if (!e) continue;
      absl::StrAppend(&text, text.empty() ? "" : " x ", *e);
      std::optional<int64_t> next = ir::CheckedMul(n, *e);
      n = next && *next <= ir::kMaxTileSpace ? *next : ir::kMaxTileSpace + 1;
    }
    if (n <= ir::kMaxTileSpace) return absl::OkStatus();
    return ir::ErrorAt(file_, loc,
                       absl::StrCat(what, " (", text, ") must be at most ", ir::kMaxTileSpace,
                                    " (lowering indexes it with int32)"));
  }

  absl::Status Stmts(const std::vector<ir::Stmt>& body) const {
    for (const ir::Stmt& s : body) RETURN_IF_ERROR(One(s));
    return absl::OkStatus();
  }

  absl::Status One(const ir::Stmt& s) const {
    if (s.kind == ir::StmtKind::kAlloc) RETURN_IF_ERROR(Shape(s.buffer));
    for (const ir::Region& r : s.regions) {
      std::vector<std::optional<int64_t>> extents;
      for (size_t d = 0; d < r.ranges.size(); ++d) {
        RETURN_IF_ERROR(
            Extent(r.ranges[d].extent, Or(r.loc, s.loc),
                   absl::StrCat("extent of the region of '", r.buffer, "' in dimension ", d), 1,
                   &extents.emplace_back()));
      }
      RETURN_IF_ERROR(
          Space(extents, Or(r.loc, s.loc),
                absl::StrCat("the number of elements of the region of '", r.buffer, "'")));
    }
    if (s.kind == ir::StmtKind::kFor) {
      std::vector<std::optional<int64_t>> extents;
      for (const ir::Expr& e : s.extents) {
        RETURN_IF_ERROR(Extent(e, s.loc, "loop extent", 0, &extents.emplace_back()));
      }
      if (s.for_kind == ir::ForKind::kParallel) {
        RETURN_IF_ERROR(Space(extents, s.loc, "the iteration space of a parallel loop"));
      }
      if (s.for_kind == ir::ForKind::kPipelined) {
        RETURN_IF_ERROR(Space(extents, s.loc, "the trip count of a pipelined loop"));
        RETURN_IF_ERROR(ir::CheckIntRange(s.num_stages, 0, 64, file_, s.loc, "num_stages"));
      }
    }
    RETURN_IF_ERROR(Stmts(s.body));
    return Stmts(s.else_body);
  }

  static ir::Loc Or(ir::Loc a, ir::Loc b) { return a.line > 0 ? a : b; }

  const ir::Program& program_;
  const std::string& file_;
};

absl::StatusOr<int64_t> ConstBytes(const ir::Program& program, const ir::Stmt& alloc) {
  int64_t elems = 1;
  for (const ir::Expr& e : alloc.buffer.shape) {
    std::optional<int64_t> v = ir::ConstInt(ir::Simplify(e));
    if (!v) {
      return ir::ErrorAt(program.source_name, alloc.loc,
                         absl::StrCat(std::string(ir::ScopeName(alloc.buffer.scope)), " buffer '",
                                      alloc.buffer.name, "' needs a constant shape"));
    }
    if (*v <= 0 || elems > (int64_t{1} << 40) / *v) {
      return ir::ErrorAt(program.source_name, alloc.loc,
                         absl::StrCat("buffer '", alloc.buffer.name, "' is too large"));
    }
    elems *= *v;
  }
  return elems * std::max(1, ir::DTypeBits(alloc.buffer.dtype) / 8);
}

// The bytes the buffers need when those whose lifetimes do not overlap
// share them (section 2). A program with its own T.ws regions, TMA copies or
// mbarriers keeps one place per buffer (pass shared-placement does not reuse
// there): the plain sum.
int64_t SharedWithReuse(const ir::Program& program, const std::vector<SharedUse>& shared,
                        int64_t sum) {
  constexpr int64_t kHuge = int64_t{1} << 50;
  bool async_sync = false;
  ir::ForEachStmt(program.kernel.body, [&](const ir::Stmt& s) {
    async_sync = async_sync || s.kind == ir::StmtKind::kWarpSpecialize ||
                 s.kind == ir::StmtKind::kTmaCopy || s.kind == ir::StmtKind::kBarrierArrive ||
                 s.kind == ir::StmtKind::kBarrierWait || s.kind == ir::StmtKind::kBarrierExpectTx ||
                 (s.kind == ir::StmtKind::kAlloc && s.buffer.scope == ir::Scope::kBarrier) ||
                 // A gemm left in flight reads its operands after it.
                 s.kind == ir::StmtKind::kWaitWgmma ||
                 (s.kind == ir::StmtKind::kGemm && s.wg_wait != 0);
  });
  if (async_sync) return sum;
  std::set<std::string> names;
  for (const SharedUse& u : shared) names.insert(u.alloc->buffer.name);
  const std::map<std::string, LiveRange> live = SharedLiveRanges(program, names);
  std::vector<SharedSlot> slots;
  for (const SharedUse& u : shared) {
    SharedSlot& slot = slots.emplace_back();
    slot.name = u.alloc->buffer.name;
    slot.bytes = std::min(kHuge, u.bytes * u.stages);
    slot.live = live.at(slot.name);
  }
  return PlaceByLiveness(slots).total;
}

absl::Status VerifyResources(ir::Program& program, const PassContext& ctx) {
  auto target = ParseTarget(ctx.target);
  if (!target.ok()) return target.status();
  const ir::Kernel& kernel = program.kernel;
  const std::string& file = program.source_name;
  RETURN_IF_ERROR(IntRangeCheck(program).Run());

  int64_t threads = 1;
  for (int64_t t : kernel.threads) threads *= t;
  if (threads > target->max_threads_per_block) {
    return ir::ErrorAt(file, kernel.loc,
                       absl::StrCat("the kernel uses ", threads, " threads per block; target ",
                                    ctx.target, " allows at most ", target->max_threads_per_block));
  }
  for (size_t d = 1; d < kernel.grid.size(); ++d) {
    std::optional<int64_t> g = ir::ConstInt(ir::Simplify(kernel.grid[d]));
    if (g && *g > kMaxGridYZ) {
      return ir::ErrorAt(file, kernel.loc,
                         absl::StrCat("grid dimension ", d, " is ", *g, "; at most ", kMaxGridYZ,
                                      " blocks are allowed along y and z"));
    }
  }

  std::map<std::string, int> stages;
  lowering::CollectPipelineStages(kernel.body, &stages);
  std::vector<const ir::Stmt*> allocs;
  CollectAllocs(kernel.body, &allocs);

  std::vector<SharedUse> shared;
  int64_t shared_total = 0;
  int64_t fragment_bytes = 0;
  int64_t local_bytes = 0;
  const ir::Stmt* largest_fragment = nullptr;
  int64_t largest_fragment_bytes = -1;
  for (const ir::Stmt* a : allocs) {
    ir::Scope scope = a->buffer.scope;
    if (scope == ir::Scope::kGlobal || scope == ir::Scope::kVar) continue;
    auto bytes = ConstBytes(program, *a);
    if (!bytes.ok()) return bytes.status();
    if (scope == ir::Scope::kShared || scope == ir::Scope::kSharedDyn) {
      SharedUse use{a, *bytes, 1};
      auto it = stages.find(a->buffer.name);
      if (it != stages.end()) use.stages = it->second;
      // bytes <= 2**43 (ConstBytes) and stages <= 64 (section 0), so the
      // product fits; the sum saturates rather than wrap.
      shared_total = ir::CheckedAdd(shared_total, use.bytes * use.stages)
                         .value_or(std::numeric_limits<int64_t>::max());
      shared.push_back(use);
    } else if (scope == ir::Scope::kFragment) {
      fragment_bytes =
          ir::CheckedAdd(fragment_bytes, *bytes).value_or(std::numeric_limits<int64_t>::max() / 2);
      if (*bytes > largest_fragment_bytes) {
        largest_fragment_bytes = *bytes;
        largest_fragment = a;
      }
    } else {
      local_bytes =
          ir::CheckedAdd(local_bytes, *bytes).value_or(std::numeric_limits<int64_t>::max() / 2);
    }
  }

  if (shared_total > target->shared_bytes_optin) {
    const int64_t reused = SharedWithReuse(program, shared, shared_total);
    if (reused > target->shared_bytes_optin) {
      std::sort(shared.begin(), shared.end(), [](const SharedUse& x, const SharedUse& y) {
        return x.bytes * x.stages > y.bytes * y.stages;
      });
      std::vector<std::string> parts;
      for (const SharedUse& u : shared) {
        parts.push_back(u.stages > 1 ? absl::StrCat(u.alloc->buffer.name, " ", u.bytes, " x ",
                                                    u.stages, " stages")
                                     : absl::StrCat(u.alloc->buffer.name, " ", u.bytes));
      }
      // Without reuse: the plain sum, as before there was any.
      const std::string needs =
          reused < shared_total
              ? absl::StrCat(reused,
                             " bytes per block, with buffers whose lifetimes do not overlap "
                             "sharing bytes (",
                             shared_total, " without sharing: ", absl::StrJoin(parts, ", "), "),")
              : absl::StrCat(shared_total, " bytes per block (", absl::StrJoin(parts, ", "), ")");
      return ir::ErrorAt(file, shared.front().alloc->loc,
                         absl::StrCat("shared memory: the kernel needs ", needs, " but target ",
                                      ctx.target, " allows at most ", target->shared_bytes_optin));
    }
  }

  int64_t regs = (fragment_bytes + threads * 4 - 1) / (threads * 4) + (local_bytes + 3) / 4;
  if (regs > kSpillFactor * target->registers_per_thread) {
    ir::Loc loc = largest_fragment != nullptr ? largest_fragment->loc : kernel.loc;
    return ir::ErrorAt(
        file, loc,
        absl::StrCat("fragments and local buffers need at least ", regs, " registers per thread (",
                     fragment_bytes, " fragment bytes over ", threads, " threads, ", local_bytes,
                     " local bytes per thread); target ", ctx.target, " has ",
                     target->registers_per_thread, ", and Kiln lets the compiler spill only up to ",
                     kSpillFactor * target->registers_per_thread));
  }
  return absl::OkStatus();
}

} // namespace

void RegisterVerifyResourcesPass() {
  RegisterPass({"verify-resources",
                "checks threads, grid, shared memory (with pipeline stages) and a register "
                "lower bound against the target's per-block limits; changes nothing",
                VerifyResources});
}

} // namespace kiln::passes
