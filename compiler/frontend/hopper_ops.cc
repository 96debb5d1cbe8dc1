// TileLang's explicit Hopper synchronization: T.alloc_barrier, `with
// T.ws(...)`, T.tma_copy and the mbarrier calls (T.mbarrier_wait_parity /
// T.barrier_wait, T.mbarrier_arrive / T.barrier_arrive,
// T.mbarrier_expect_tx, T.mbarrier_arrive_expect_tx), T.fence_proxy_async,
// and the register hints T.set_max_nreg / T.disable_warp_group_reg_alloc.
//
// Semantics (TileLang's; docs/design/frontend.md, "Hopper primitives"):
//  - T.alloc_barrier(n | [n0, n1, ...]) allocates one mbarrier per count;
//    each phase completes once that many arrivals (and every expected
//    transaction byte) have come in.
//  - T.ws(g, ...) runs its body on the threads of the listed 128-thread
//    warpgroups only; the tile ops inside are laid out for those threads.
//  - T.tma_copy(src, dst, barrier=b) is the producer half of a TMA load:
//    one thread of the region expects the box's bytes on b and issues the
//    copy; nobody waits. The program arrives and waits on b itself.
//  - The register hints change no result; Kiln accepts them and sizes
//    registers itself.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/args.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "util/status_macros.h"

namespace kiln::frontend {

bool IsHopperOp(std::string_view fn) {
  return fn == "alloc_barrier" || fn == "tma_copy" || fn == "mbarrier_wait_parity" ||
         fn == "barrier_wait" || fn == "mbarrier_arrive" || fn == "barrier_arrive" ||
         fn == "mbarrier_expect_tx" || fn == "mbarrier_arrive_expect_tx" || fn == "set_max_nreg" ||
         fn == "inc_max_nreg" || fn == "dec_max_nreg" || fn == "disable_warp_group_reg_alloc" ||
         fn == "no_set_max_nreg" || fn == "annotate_producer_reg_dealloc" ||
         fn == "annotate_consumer_reg_alloc" || fn == "fence_proxy_async";
}

absl::StatusOr<ir::Region> Evaluator::BarrierOperand(const Value& v, Loc loc,
                                                     const std::string& op) {
  if (v.kind != ValueKind::kBuffer && v.kind != ValueKind::kAccess) {
    return Error(loc,
                 absl::StrCat(op, " expects a barrier from T.alloc_barrier, got ", TypeName(v)));
  }
  const ir::Buffer& b = buffers_[v.i].buffer;
  if (b.scope != ir::Scope::kBarrier) {
    return Error(loc, absl::StrCat(op, ": '", b.name, "' is not a barrier (allocate it with ",
                                   "T.alloc_barrier)"));
  }
  ir::Region r;
  r.buffer = b.name;
  r.loc = loc;
  ir::Expr index = ir::IntImm(0, ir::DType::kInt32, loc);
  if (v.kind == ValueKind::kAccess) {
    ASSIGN_OR_RETURN(std::vector<ir::Expr> idx, ScalarIndices(v, loc));
    if (idx.size() != 1) {
      return Error(loc, absl::StrCat(op, ": a barrier takes one index, got ", idx.size()));
    }
    index = std::move(idx[0]);
  } else if (!(b.shape[0].kind == ir::ExprKind::kInt && b.shape[0].ival == 1)) {
    return Error(loc,
                 absl::StrCat(op, ": '", b.name, "' holds several barriers; index one of them"));
  }
  r.ranges.push_back(ir::Range{std::move(index), ir::IntImm(1, ir::DType::kInt32, loc)});
  return r;
}

absl::StatusOr<Value> Evaluator::CallHopperOp(const std::string& fn, std::vector<Arg>& args,
                                              Loc loc) {
  const std::string& file = options_.file_name;
  RETURN_IF_ERROR(RequireKernel(loc, absl::StrCat("T.", fn)));
  if (fn == "alloc_barrier") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, "T.alloc_barrier", args, {"arrive_count"}, 1));
    std::vector<Value> counts;
    if (m[0]->is_sequence()) {
      counts = m[0]->elts();
    } else {
      counts.push_back(*m[0]);
    }
    ir::Stmt st;
    st.kind = ir::StmtKind::kAlloc;
    st.loc = loc;
    for (const Value& c : counts) {
      if (c.kind != ValueKind::kInt || c.i < 1 || c.i > 1024) {
        return Error(loc, "T.alloc_barrier: arrival counts must be compile-time integers in "
                          "1..1024");
      }
      st.indices.push_back(ir::IntImm(c.i, ir::DType::kInt32, loc));
    }
    if (counts.empty()) return Error(loc, "T.alloc_barrier needs at least one arrival count");
    ir::Buffer& b = st.buffer;
    b.name = UniqueName(call_hint_.empty() ? "mbar" : call_hint_);
    call_hint_.clear();
    b.dtype = ir::DType::kUInt64;
    b.scope = ir::Scope::kBarrier;
    b.shape = {ir::IntImm(static_cast<int64_t>(counts.size()), ir::DType::kInt32, loc)};
    b.loc = loc;
    buffers_.push_back(BufferInfo{b, false});
    Emit(std::move(st));
    return Value::Buffer(static_cast<int>(buffers_.size()) - 1);
  }
  if (fn == "tma_copy") {
    std::vector<std::string_view> names = {
        "src",        "dst", "barrier", "cluster_mask", "leader_scope_threads", "eviction_policy",
        "annotations"};
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, "T.tma_copy", args, names, 2, 2));
    for (size_t k : {size_t{3}, size_t{4}, size_t{6}}) {
      if (m[k].has_value() && !m[k]->is_none()) {
        return Error(
            ArgLoc(args, names, k, loc),
            absl::StrCat("T.tma_copy argument '", std::string(names[k]), "' is not supported"));
      }
    }
    ASSIGN_OR_RETURN(Operand src,
                     ToOperand(Arg{*m[0], ArgLoc(args, names, 0, loc), "", {}}, "T.tma_copy"));
    ASSIGN_OR_RETURN(Operand dst,
                     ToOperand(Arg{*m[1], ArgLoc(args, names, 1, loc), "", {}}, "T.tma_copy"));
    if (!m[2].has_value() || m[2]->is_none()) {
      return Error(loc, "T.tma_copy needs barrier= (the mbarrier its bytes complete on); TMA "
                        "stores are not supported");
    }
    ir::Stmt st;
    st.kind = ir::StmtKind::kTmaCopy;
    st.loc = loc;
    const ir::Buffer& sb = buffers_[src.buffer].buffer;
    const ir::Buffer& db = buffers_[dst.buffer].buffer;
    if (sb.scope != ir::Scope::kGlobal) {
      return Error(src.loc, absl::StrCat("tma_copy: the source '", sb.name,
                                         "' must be a global tensor, not ",
                                         std::string(ir::ScopeName(sb.scope))));
    }
    if (db.scope != ir::Scope::kShared && db.scope != ir::Scope::kSharedDyn) {
      return Error(loc, absl::StrCat("tma_copy: the destination '", db.name,
                                     "' must be a shared buffer, not ",
                                     std::string(ir::ScopeName(db.scope))));
    }
    ASSIGN_OR_RETURN(ir::Region rs, OperandRegion(src, dst.extents, "T.tma_copy"));
    ASSIGN_OR_RETURN(ir::Region rd, OperandRegion(dst, src.extents, "T.tma_copy"));
    ASSIGN_OR_RETURN(ir::Region bar,
                     BarrierOperand(*m[2], ArgLoc(args, names, 2, loc), "T.tma_copy"));
    st.regions = {std::move(rs), std::move(rd), std::move(bar)};
    Emit(std::move(st));
    return Value::None();
  }
  if (fn == "fence_proxy_async") {
    // This thread's generic-proxy writes to shared memory (plain stores,
    // T.copy through registers) become visible to the async proxy (TMA
    // stores, wgmma's operand reads): fence.proxy.async.shared::cta; a no-op
    // on the CPU target, whose copies complete at once.
    RETURN_IF_ERROR(MatchArgs(file, loc, "T.fence_proxy_async", args, {}, 0).status());
    ir::Stmt st;
    st.kind = ir::StmtKind::kCall;
    st.loc = loc;
    st.name = "fence_proxy_async";
    Emit(std::move(st));
    return Value::None();
  }
  if (fn == "set_max_nreg" || fn == "inc_max_nreg" || fn == "dec_max_nreg" ||
      fn == "disable_warp_group_reg_alloc" || fn == "no_set_max_nreg" ||
      fn == "annotate_producer_reg_dealloc" || fn == "annotate_consumer_reg_alloc") {
    // Register hints: accepted for compatibility, results do not depend on
    // them (see the file comment).
    for (const Arg& a : args) {
      ASSIGN_OR_RETURN(Value v, Materialize(a.value, a.loc));
      if (v.kind != ValueKind::kInt) {
        return Error(a.loc, absl::StrCat("T.", fn, " takes compile-time integers"));
      }
    }
    return Value::None();
  }
  // The mbarrier calls: (mbarrier, [parity | tx]).
  const bool wait = fn == "mbarrier_wait_parity" || fn == "barrier_wait";
  const bool expect = fn == "mbarrier_expect_tx" || fn == "mbarrier_arrive_expect_tx";
  std::vector<std::string_view> names = {"mbarrier"};
  if (wait) names.emplace_back("parity");
  if (expect) names.emplace_back("tx");
  if (!wait && !expect) names.emplace_back("cta_id");
  ASSIGN_OR_RETURN(
      auto m, MatchArgs(file, loc, absl::StrCat("T.", fn), args, names, wait || expect ? 2 : 1));
  if (!wait && !expect && m[1].has_value() && !m[1]->is_none()) {
    return Error(ArgLoc(args, names, 1, loc),
                 "cluster barriers (cta_id=) are not supported: Kiln launches no clusters");
  }
  ASSIGN_OR_RETURN(ir::Region bar,
                   BarrierOperand(*m[0], ArgLoc(args, names, 0, loc), absl::StrCat("T.", fn)));
  ir::Stmt st;
  st.loc = loc;
  st.regions.push_back(bar);
  if (wait || expect) {
    const Loc vloc = ArgLoc(args, names, 1, loc);
    ASSIGN_OR_RETURN(Value v, Materialize(*m[1], vloc));
    if (!v.is_int() && !(v.is_expr() && ir::IsInteger(v.expr->dtype))) {
      return Error(vloc, absl::StrCat("T.", fn, ": ", wait ? "parity" : "tx",
                                      " must be an integer, got ", TypeName(v)));
    }
    ASSIGN_OR_RETURN(ir::Expr e, ToExprOf(Ctx(vloc), v, ir::DType::kInt32));
    st.has_value = true;
    st.value = std::move(e);
  }
  st.kind = wait     ? ir::StmtKind::kBarrierWait
            : expect ? ir::StmtKind::kBarrierExpectTx
                     : ir::StmtKind::kBarrierArrive;
  Emit(st);
  if (fn == "mbarrier_arrive_expect_tx") {
    // arrive.expect_tx is expect_tx followed by an arrival.
    ir::Stmt arrive;
    arrive.kind = ir::StmtKind::kBarrierArrive;
    arrive.loc = loc;
    arrive.regions.push_back(std::move(bar));
    Emit(std::move(arrive));
  }
  return Value::None();
}

absl::StatusOr<Evaluator::Flow> Evaluator::LowerWarpSpecialize(const PyStmt& with,
                                                               const PyExpr& call) {
  RETURN_IF_ERROR(RequireKernel(with.loc, "T.ws"));
  if (!with.targets.empty() && with.targets[0].kind != PyExprKind::kNone) {
    return Error(with.targets[0].loc, "'with T.ws(...)' binds no name: drop the 'as' part");
  }
  ASSIGN_OR_RETURN(std::vector<Arg> args, EvalArgs(call));
  ir::Stmt st;
  st.kind = ir::StmtKind::kWarpSpecialize;
  st.loc = with.loc;
  for (const Arg& a : args) {
    if (!a.name.empty()) {
      return Error(a.name_loc,
                   absl::StrCat("T.ws got an unexpected keyword argument '", a.name, "'"));
    }
    ASSIGN_OR_RETURN(Value v, Materialize(a.value, a.loc));
    std::vector<Value> ids = v.is_sequence() ? v.elts() : std::vector<Value>{v};
    int64_t threads = 1;
    for (int64_t t : CurrentKernel().threads) threads *= t;
    for (const Value& id : ids) {
      if (id.kind != ValueKind::kInt) {
        return Error(a.loc, "T.ws takes compile-time warpgroup indices");
      }
      if (id.i < 0 || (id.i + 1) * 128 > threads) {
        return Error(a.loc,
                     absl::StrCat("T.ws(", id.i, "): warpgroup ", id.i, " is outside the block (",
                                  threads, " threads: warpgroups 0..", threads / 128 - 1,
                                  " of 128 threads)"));
      }
      st.indices.push_back(ir::IntImm(id.i, ir::DType::kInt32, a.loc));
    }
  }
  if (st.indices.empty()) return Error(call.loc, "T.ws needs at least one warpgroup index");
  // A with block opens no Python scope: names bound inside stay bound.
  std::vector<ir::Stmt>* saved = sink_;
  sink_ = &st.body;
  absl::StatusOr<Flow> flow = ExecBlock(with.body);
  sink_ = saved;
  RETURN_IF_ERROR(flow.status());
  Emit(std::move(st));
  return *flow;
}

} // namespace kiln::frontend
