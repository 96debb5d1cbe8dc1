// TVM's explicit cross-thread reduction, as TileLang's gemv examples write it
// (examples/gemv/example_gemv.py, splitk_gemv_vectorized_tvm):
//
//   with T.attr(T.comm_reducer(lambda x, y: x + y, [init]), "reduce_scope",
//               T.reinterpret(T.uint64(0), dtype="handle")):
//       T.evaluate(T.tvm_thread_allreduce(T.uint32(1), value, cond, out[i],
//                                         t0, ..., dtype="handle"))
//
// Every thread's `out[i]` becomes the reducer's fold, from `init`, of `value`
// (`init` where `cond` is false) over the threads that differ from it only in
// the listed thread indices (T.get_thread_binding(d) values). Only this form
// is accepted: one reduced value, the attr's body exactly that call.
//
// Kiln writes each thread's value into a shared buffer at its linear thread
// index, synchronizes the block, folds its group's values in the order of the
// reduced indices (the first listed varying fastest) with the reducer's own
// function, and synchronizes again before the buffer can be reused. A block-
// wide barrier: the statement must be reached by every thread of the block,
// as TVM's lowering of it also requires.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/arith.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/frontend/names.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/simplify.h"
#include "util/status_macros.h"

namespace kiln::frontend {
namespace {

// The most values one thread folds (the product of the reduced extents).
constexpr int64_t kMaxAllreduceGroup = 1024;

} // namespace

bool Evaluator::IsTCall(const PyExpr& e, std::string_view fn) {
  if (e.kind != PyExprKind::kCall || e.elts.empty()) return false;
  const PyExpr& callee = e.elts[0];
  if (callee.kind != PyExprKind::kAttribute || callee.str != fn || callee.elts.empty()) {
    return false;
  }
  absl::StatusOr<Value> base = Eval(callee.elts[0]);
  return base.ok() && base->kind == ValueKind::kModule && base->s == "T";
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecThreadAllreduce(const PyStmt& s, const PyExpr& cm) {
  RETURN_IF_ERROR(RequireKernel(cm.loc, "T.attr"));
  const auto unsupported = [&](Loc loc) {
    return Error(loc, "T.attr is supported only as TVM's reduce scope around one "
                      "T.tvm_thread_allreduce: `with T.attr(T.comm_reducer(fn, [init]), "
                      "\"reduce_scope\", ...): T.evaluate(T.tvm_thread_allreduce(T.uint32(1), "
                      "value, cond, out[i], thread_index, ...))`");
  };
  if (cm.args.size() != 3 || !cm.keywords.empty() || !IsTCall(cm.args[0], "comm_reducer")) {
    return unsupported(cm.loc);
  }
  ASSIGN_OR_RETURN(Value scope, Eval(cm.args[1]));
  if (scope.kind != ValueKind::kString || scope.s != "reduce_scope") {
    return unsupported(cm.args[1].loc);
  }
  // The reducer: its combining function and its one identity value.
  const PyExpr& red = cm.args[0];
  if (red.args.size() != 2 || !red.keywords.empty()) {
    return Error(red.loc, "T.comm_reducer takes a combining function and a list of identities");
  }
  ASSIGN_OR_RETURN(Value combine, Eval(red.args[0]));
  if (combine.kind != ValueKind::kFunction) {
    return Error(red.args[0].loc, "T.comm_reducer: the combiner must be a function (a lambda)");
  }
  ASSIGN_OR_RETURN(Value ids, Eval(red.args[1]));
  if (!ids.is_sequence() || ids.elts().size() != 1) {
    return Error(red.args[1].loc, "T.comm_reducer: Kiln reduces one value at a time; give one "
                                  "identity");
  }
  // The body: T.evaluate(T.tvm_thread_allreduce(...)).
  if (s.body.size() != 1 || s.body[0].kind != PyStmtKind::kExpr ||
      !IsTCall(s.body[0].exprs[0], "evaluate") || s.body[0].exprs[0].args.size() != 1 ||
      !IsTCall(s.body[0].exprs[0].args[0], "tvm_thread_allreduce")) {
    return unsupported(s.body.empty() ? s.loc : s.body[0].loc);
  }
  const PyExpr& call = s.body[0].exprs[0].args[0];
  if (call.args.size() < 5) {
    return Error(call.loc, "T.tvm_thread_allreduce takes the value count, the value, the "
                           "condition, the destination and at least one thread index");
  }
  for (const Keyword& kw : call.keywords) {
    if (kw.name != "dtype") {
      return Error(kw.loc, absl::StrCat("T.tvm_thread_allreduce: unexpected keyword '",
                                        IsSafeText(kw.name) ? kw.name : "?", "'"));
    }
  }
  ASSIGN_OR_RETURN(Value count, EvalScalar(call.args[0]));
  ASSIGN_OR_RETURN(ir::Expr count_e, ToExpr(Ctx(call.args[0].loc), count));
  if (ir::ConstInt(ir::Simplify(count_e)) != 1) {
    return Error(call.args[0].loc, "T.tvm_thread_allreduce: Kiln reduces one value at a time "
                                   "(the count must be 1)");
  }
  ASSIGN_OR_RETURN(Value value, EvalScalar(call.args[1]));
  ASSIGN_OR_RETURN(ir::Expr v, ToExpr(Ctx(call.args[1].loc), value));
  const ir::DType dtype = v.dtype;
  ASSIGN_OR_RETURN(ir::Expr init, ToExprOf(Ctx(red.args[1].loc), ids.elts()[0], dtype));
  ASSIGN_OR_RETURN(Value cond_v, EvalScalar(call.args[2]));
  ASSIGN_OR_RETURN(ir::Expr cond, ToCondition(Ctx(call.args[2].loc), cond_v));
  if (std::optional<int64_t> c = ir::ConstInt(ir::Simplify(cond)); !c || *c == 0) {
    v = ir::Select(cond, v, init, call.args[2].loc);
  }
  // The reduced thread dimensions.
  const std::vector<int64_t>& threads = CurrentKernel().threads;
  std::vector<int> reduced;
  for (size_t k = 4; k < call.args.size(); ++k) {
    ASSIGN_OR_RETURN(Value t, EvalScalar(call.args[k]));
    if (!t.is_expr() || t.expr->kind != ir::ExprKind::kThreadIdx) {
      return Error(call.args[k].loc, "T.tvm_thread_allreduce: the reduced axes must be thread "
                                     "indices (T.get_thread_binding(d))");
    }
    const int d = static_cast<int>(t.expr->ival);
    for (int r : reduced) {
      if (r == d) return Error(call.args[k].loc, "T.tvm_thread_allreduce: an axis is listed twice");
    }
    reduced.push_back(d);
  }
  int64_t group = 1, block = 1;
  std::vector<int64_t> stride(threads.size(), 1);
  for (size_t d = 0; d < threads.size(); ++d) {
    stride[d] = block;
    block *= threads[d];
  }
  for (int d : reduced) group *= threads[d];
  if (group > kMaxAllreduceGroup) {
    return Error(call.loc, absl::StrCat("T.tvm_thread_allreduce over ", group,
                                        " threads; Kiln folds at most ", kMaxAllreduceGroup));
  }
  const Loc loc = call.loc;
  // Each thread's value at its linear index.
  ir::Buffer buf;
  buf.name = UniqueName("kiln_allreduce");
  buf.dtype = dtype;
  buf.scope = ir::Scope::kShared;
  buf.shape = {ir::IntImm(block, ir::DType::kInt32, loc)};
  buf.loc = loc;
  ir::Stmt alloc;
  alloc.kind = ir::StmtKind::kAlloc;
  alloc.loc = loc;
  alloc.buffer = buf;
  Emit(std::move(alloc));
  const auto index_with = [&](const std::vector<int64_t>* fixed) {
    ir::Expr lin = ir::IntImm(0, ir::DType::kInt32, loc);
    for (size_t d = 0; d < threads.size(); ++d) {
      ir::Expr coord = ir::ThreadIdx(static_cast<int>(d), loc);
      for (size_t k = 0; fixed && k < reduced.size(); ++k) {
        if (reduced[k] == static_cast<int>(d))
          coord = ir::IntImm((*fixed)[k], ir::DType::kInt32, loc);
      }
      lin = ir::Binary(
          ir::BinOp::kAdd, lin,
          ir::Binary(ir::BinOp::kMul, coord, ir::IntImm(stride[d], ir::DType::kInt32, loc), loc),
          loc);
    }
    return ir::Simplify(lin);
  };
  ir::Stmt put;
  put.kind = ir::StmtKind::kStore;
  put.loc = loc;
  put.name = buf.name;
  put.indices = {index_with(nullptr)};
  put.value = v;
  put.has_value = true;
  Emit(std::move(put));
  const auto barrier = [&]() {
    ir::Stmt sync;
    sync.kind = ir::StmtKind::kCall;
    sync.loc = loc;
    sync.name = "sync_threads";
    Emit(std::move(sync));
  };
  barrier();
  // The fold, the first reduced index varying fastest.
  Value acc;
  std::vector<int64_t> at(reduced.size(), 0);
  for (int64_t n = 0; n < group; ++n) {
    int64_t rest = n;
    for (size_t k = 0; k < reduced.size(); ++k) {
      at[k] = rest % threads[reduced[k]];
      rest /= threads[reduced[k]];
    }
    Value x = Value::Expr(ir::Load(buf.name, dtype, {index_with(&at)}, loc));
    if (n == 0) {
      ASSIGN_OR_RETURN(
          Value first,
          CallUserFunction(
              combine, {Arg{Value::Expr(init), loc, "", {}}, Arg{std::move(x), loc, "", {}}}, loc));
      acc = std::move(first);
      continue;
    }
    ASSIGN_OR_RETURN(
        acc, CallUserFunction(
                 combine, {Arg{std::move(acc), loc, "", {}}, Arg{std::move(x), loc, "", {}}}, loc));
  }
  RETURN_IF_ERROR(Assign(call.args[3], acc));
  barrier();
  return Flow::kNormal;
}

} // namespace kiln::frontend
