// Pass "simplify-bounds": "simplify" plus what is known where each expression
// stands (ir::SimplifyWithBounds): thread indices below the kernel's thread
// extents, block indices below constant grid extents, loop variables below
// their loops' constant extents, and within `if thread_idx(d) < c` (or
// `== c`) the range its branches leave the thread index. An `if` whose
// condition becomes a literal is
// replaced by the branch taken when that branch declares nothing (so no
// declaration changes scope). Names and locations of statements are kept.
//
// It runs on thread IR, after lower-tile-ops: on tile IR it would turn the
// variable of a one-iteration T.Parallel loop into 0, and layout inference
// needs fragments indexed by the loop's variables.
#include "compiler/ir/bounds.h"
#include "compiler/ir/simplify.h"
#include "compiler/passes/pass_registry.h"

namespace kiln::passes {
namespace {

using ir::BoundContext;

void SimplifyInPlace(ir::Expr* e, const BoundContext& ctx) { *e = ir::SimplifyWithBounds(*e, ctx); }

void SimplifyBuffer(ir::Buffer* b, const BoundContext& ctx) {
  for (ir::Expr& e : b->shape) SimplifyInPlace(&e, ctx);
  if (b->has_init) SimplifyInPlace(&b->init, ctx);
}

bool DeclaresAnything(const std::vector<ir::Stmt>& stmts) {
  for (const ir::Stmt& s : stmts) {
    if (s.kind == ir::StmtKind::kAlloc) return true;
  }
  return false;
}

void SimplifyStmts(std::vector<ir::Stmt>* stmts, BoundContext* ctx);

// For `if thread_idx(d) < c` and `if thread_idx(d) == c`: the thread
// dimension and its range in the then and else branches (a warp-specialized
// kernel's consumer and producer branches).
struct ThreadSplit {
  int64_t dim = 0;
  ir::IntBounds then_range, else_range;
};

std::optional<ThreadSplit> SplitOf(const ir::Expr& cond, const BoundContext& ctx) {
  if (cond.kind != ir::ExprKind::kBinary || cond.args.size() != 2 ||
      cond.args[0].kind != ir::ExprKind::kThreadIdx) {
    return std::nullopt;
  }
  std::optional<int64_t> c = ir::ConstInt(cond.args[1]);
  std::optional<ir::IntBounds> t = ctx.Thread(cond.args[0].ival);
  if (!c || !t) return std::nullopt;
  ThreadSplit s;
  s.dim = cond.args[0].ival;
  if (cond.bop == ir::BinOp::kLt) {
    s.then_range = {t->lo, std::min(t->hi, *c - 1)};
    s.else_range = {std::max(t->lo, *c), t->hi};
    return s;
  }
  if (cond.bop == ir::BinOp::kEq) {
    s.then_range = {*c, *c};
    s.else_range = *t; // two pieces; the hull is all one range can say
    return s;
  }
  return std::nullopt;
}

// Simplifies `s`; appends it, or the statements that replace it, to `out`.
void SimplifyStmt(ir::Stmt s, BoundContext* ctx, std::vector<ir::Stmt>* out) {
  if (s.kind == ir::StmtKind::kAlloc) SimplifyBuffer(&s.buffer, *ctx);
  for (ir::Region& r : s.regions) {
    for (ir::Range& range : r.ranges) {
      SimplifyInPlace(&range.min, *ctx);
      SimplifyInPlace(&range.extent, *ctx);
    }
  }
  if (s.has_value) SimplifyInPlace(&s.value, *ctx);
  for (ir::Expr& e : s.extents) SimplifyInPlace(&e, *ctx);
  for (ir::Expr& e : s.indices) SimplifyInPlace(&e, *ctx);
  if (s.kind == ir::StmtKind::kIf) {
    SimplifyInPlace(&s.cond, *ctx);
    const std::optional<ThreadSplit> split = SplitOf(s.cond, *ctx);
    if (split) ctx->PushThread(split->dim, split->then_range);
    SimplifyStmts(&s.body, ctx);
    if (split) {
      ctx->PopThread(split->dim);
      ctx->PushThread(split->dim, split->else_range);
    }
    SimplifyStmts(&s.else_body, ctx);
    if (split) ctx->PopThread(split->dim);
    if (std::optional<int64_t> c = ir::ConstInt(s.cond)) {
      std::vector<ir::Stmt>& taken = *c != 0 ? s.body : s.else_body;
      if (!DeclaresAnything(taken)) {
        for (ir::Stmt& t : taken) out->push_back(std::move(t));
        return;
      }
    }
    out->push_back(std::move(s));
    return;
  }
  if (s.kind == ir::StmtKind::kFor) {
    std::vector<std::string> pushed;
    for (size_t i = 0; i < s.loop_vars.size() && i < s.extents.size(); ++i) {
      std::optional<int64_t> n = ir::ConstInt(s.extents[i]);
      if (!n || *n < 1) continue;
      ctx->Push(s.loop_vars[i], {0, *n - 1});
      pushed.push_back(s.loop_vars[i]);
    }
    SimplifyStmts(&s.body, ctx);
    for (const std::string& v : pushed) ctx->Pop(v);
  } else {
    SimplifyStmts(&s.body, ctx);
    SimplifyStmts(&s.else_body, ctx);
  }
  out->push_back(std::move(s));
}

void SimplifyStmts(std::vector<ir::Stmt>* stmts, BoundContext* ctx) {
  std::vector<ir::Stmt> out;
  out.reserve(stmts->size());
  for (ir::Stmt& s : *stmts) SimplifyStmt(std::move(s), ctx, &out);
  *stmts = std::move(out);
}

} // namespace

void RegisterSimplifyBoundsPass() {
  RegisterPass({"simplify-bounds",
                "simplify, and remove index operations that thread, block and loop bounds "
                "make redundant (thread IR)",
                [](ir::Program& program, const PassContext&) {
                  const BoundContext none;
                  for (ir::Param& p : program.params) SimplifyBuffer(&p.buffer, none);
                  for (ir::Expr& e : program.kernel.grid) SimplifyInPlace(&e, none);
                  BoundContext ctx;
                  ctx.SetThreadExtents(program.kernel.threads);
                  for (size_t d = 0;
                       d < program.kernel.block_vars.size() && d < program.kernel.grid.size();
                       ++d) {
                    std::optional<int64_t> n = ir::ConstInt(program.kernel.grid[d]);
                    if (n && *n >= 1) ctx.Push(program.kernel.block_vars[d], {0, *n - 1});
                  }
                  SimplifyStmts(&program.kernel.body, &ctx);
                  return absl::OkStatus();
                }});
}

} // namespace kiln::passes
