// Pass "simplify": ir::Simplify on every expression of the program (shapes,
// grid, ranges, values, conditions, indices, loop extents). Names and
// locations of statements are kept.
#include "compiler/ir/simplify.h"

#include "compiler/passes/pass_registry.h"

namespace kiln::passes {
namespace {

// A local walker (rather than ir_util's) keeps this pass free of
// dependencies beyond the simplifier itself.
void SimplifyInPlace(ir::Expr* e) { *e = ir::Simplify(*e); }

void SimplifyBuffer(ir::Buffer* b) {
  for (ir::Expr& e : b->shape) SimplifyInPlace(&e);
  if (b->has_init) SimplifyInPlace(&b->init);
}

void SimplifyStmts(std::vector<ir::Stmt>* stmts) {
  for (ir::Stmt& s : *stmts) {
    if (s.kind == ir::StmtKind::kAlloc) SimplifyBuffer(&s.buffer);
    for (ir::Region& r : s.regions) {
      for (ir::Range& range : r.ranges) {
        SimplifyInPlace(&range.min);
        SimplifyInPlace(&range.extent);
      }
    }
    if (s.has_value) SimplifyInPlace(&s.value);
    if (s.kind == ir::StmtKind::kIf) SimplifyInPlace(&s.cond);
    for (ir::Expr& e : s.extents) SimplifyInPlace(&e);
    for (ir::Expr& e : s.indices) SimplifyInPlace(&e);
    SimplifyStmts(&s.body);
    SimplifyStmts(&s.else_body);
  }
}

} // namespace

void RegisterSimplifyPass() {
  RegisterPass({"simplify",
                "folds constants and normalizes integer index arithmetic in every expression",
                [](ir::Program& program, const PassContext&) {
                  for (ir::Param& p : program.params) SimplifyBuffer(&p.buffer);
                  for (ir::Expr& e : program.kernel.grid) SimplifyInPlace(&e);
                  SimplifyStmts(&program.kernel.body);
                  return absl::OkStatus();
                }});
}

} // namespace kiln::passes
