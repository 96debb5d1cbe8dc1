#include "compiler/ir/ir_util.h"

#include <string>
#include <utility>

#include "compiler/ir/builder.h"

namespace kiln::ir {
namespace {

void StripExpr(Expr* e) {
  e->loc = Loc{};
  for (Expr& a : e->args) StripExpr(&a);
}

void StripBuffer(Buffer* b) {
  b->loc = Loc{};
  for (Expr& e : b->shape) StripExpr(&e);
  StripExpr(&b->init);
  if (b->index_layout) {
    b->index_layout->loc = Loc{};
    for (Expr& e : b->index_layout->forward) StripExpr(&e);
  }
}

// Clears every Loc of every field, used or not, so that `==` after
// stripping compares structure only.
void StripStmts(std::vector<Stmt>* stmts) {
  for (Stmt& s : *stmts) {
    s.loc = Loc{};
    StripBuffer(&s.buffer);
    for (Region& r : s.regions) {
      r.loc = Loc{};
      for (Range& range : r.ranges) {
        StripExpr(&range.min);
        StripExpr(&range.extent);
      }
    }
    StripExpr(&s.value);
    StripExpr(&s.cond);
    for (Expr& e : s.extents) StripExpr(&e);
    for (Expr& e : s.indices) StripExpr(&e);
    StripStmts(&s.body);
    StripStmts(&s.else_body);
  }
}

// Calls fn on the expression fields that are meaningful for the statement's
// kind, in source order; the same order serves reading and rewriting.
// StmtT is Stmt or const Stmt.
template <typename StmtT, typename Fn>
void ForEachStmtExprSlot(StmtT& s, Fn&& fn) {
  if (s.kind == StmtKind::kAlloc) {
    for (auto& e : s.buffer.shape) fn(e);
    if (s.buffer.has_init) fn(s.buffer.init);
  }
  for (auto& r : s.regions) {
    for (auto& range : r.ranges) {
      fn(range.min);
      fn(range.extent);
    }
  }
  if (s.kind == StmtKind::kFor) {
    for (auto& e : s.extents) fn(e);
  }
  if (s.kind == StmtKind::kIf || s.kind == StmtKind::kAssert) fn(s.cond);
  if (s.kind == StmtKind::kStore || s.kind == StmtKind::kCall) {
    for (auto& e : s.indices) fn(e);
  }
  if (s.has_value || s.kind == StmtKind::kStore || s.kind == StmtKind::kFill) fn(s.value);
}

void VisitExpr(const Expr& e, const std::function<void(const Expr&)>& fn) {
  fn(e);
  for (const Expr& a : e.args) VisitExpr(a, fn);
}

} // namespace

void RewriteStmts(std::vector<Stmt>* stmts, const std::function<Expr(Expr)>& fn) {
  for (Stmt& s : *stmts) {
    ForEachStmtExprSlot(s, [&](Expr& e) { RewriteExpr(&e, fn); });
    RewriteStmts(&s.body, fn);
    RewriteStmts(&s.else_body, fn);
  }
}

void SubstituteVars(std::vector<Stmt>* stmts, const std::map<std::string, Expr>& values) {
  RewriteStmts(stmts, [&](Expr e) {
    if (e.kind != ExprKind::kVar) return e;
    auto it = values.find(e.name);
    if (it == values.end()) return e;
    return e.dtype == it->second.dtype ? it->second : Cast(e.dtype, it->second);
  });
}

void StripLocations(Program* program) {
  for (Symbol& s : program->symbols) s.loc = Loc{};
  for (Param& p : program->params) StripBuffer(&p.buffer);
  for (Buffer& b : program->workspaces) StripBuffer(&b);
  auto strip = [](Kernel& k) {
    k.loc = Loc{};
    for (Expr& e : k.grid) StripExpr(&e);
    StripStmts(&k.body);
  };
  strip(program->kernel);
  for (Kernel& k : program->next_kernels) strip(k);
}

void ForEachStmt(const std::vector<Stmt>& stmts, const std::function<void(const Stmt&)>& fn) {
  for (const Stmt& s : stmts) {
    fn(s);
    ForEachStmt(s.body, fn);
    ForEachStmt(s.else_body, fn);
  }
}

void ForEachExpr(const Program& program, const std::function<void(const Expr&)>& fn) {
  for (const Param& p : program.params) {
    for (const Expr& e : p.buffer.shape) VisitExpr(e, fn);
    if (p.buffer.index_layout) {
      for (const Expr& e : p.buffer.index_layout->forward) VisitExpr(e, fn);
    }
  }
  for (const Buffer& b : program.workspaces) {
    for (const Expr& e : b.shape) VisitExpr(e, fn);
  }
  auto visit = [&](const Kernel& k) {
    for (const Expr& e : k.grid) VisitExpr(e, fn);
    ForEachStmt(k.body, [&](const Stmt& s) {
      ForEachStmtExprSlot(s, [&](const Expr& e) { VisitExpr(e, fn); });
    });
  };
  visit(program.kernel);
  for (const Kernel& k : program.next_kernels) visit(k);
}

void RewriteExprs(Program* program, const std::function<Expr(Expr)>& fn) {
  for (Param& p : program->params) {
    for (Expr& e : p.buffer.shape) RewriteExpr(&e, fn);
    if (p.buffer.index_layout) {
      for (Expr& e : p.buffer.index_layout->forward) RewriteExpr(&e, fn);
    }
  }
  for (Buffer& b : program->workspaces) {
    for (Expr& e : b.shape) RewriteExpr(&e, fn);
  }
  auto rewrite = [&](Kernel& k) {
    for (Expr& e : k.grid) RewriteExpr(&e, fn);
    RewriteStmts(&k.body, fn);
  };
  rewrite(program->kernel);
  for (Kernel& k : program->next_kernels) rewrite(k);
}

std::vector<Program> SplitKernels(const Program& program) {
  Program base = program;
  base.next_kernels.clear();
  base.workspaces.clear();
  for (const Buffer& b : program.workspaces) {
    Param w;
    w.buffer = b;
    w.is_workspace = true;
    base.params.push_back(std::move(w));
  }
  std::vector<Program> out;
  out.reserve(1 + program.next_kernels.size());
  out.push_back(base);
  for (const Kernel& k : program.next_kernels) {
    out.push_back(base);
    out.back().kernel = k;
  }
  return out;
}

void RewriteExpr(Expr* expr, const std::function<Expr(Expr)>& fn) {
  for (Expr& a : expr->args) RewriteExpr(&a, fn);
  *expr = fn(std::move(*expr));
}

const std::string& UserName(const Symbol& symbol) {
  return symbol.user_name.empty() ? symbol.name : symbol.user_name;
}

const std::string& UserName(const Param& param) {
  return param.user_name.empty() ? param.buffer.name : param.user_name;
}

Expr WithUserNames(const Expr& expr, const Program& program) {
  Expr out = expr;
  RewriteExpr(&out, [&program](Expr e) {
    if (e.kind != ExprKind::kVar) return e;
    for (const Symbol& s : program.symbols) {
      if (s.name == e.name) {
        e.name = UserName(s);
        return e;
      }
    }
    for (const Param& p : program.params) {
      if (p.is_scalar && p.buffer.name == e.name) {
        e.name = UserName(p);
        return e;
      }
    }
    return e;
  });
  return out;
}

FreshNames::FreshNames(const Program& p) {
  for (const Symbol& s : p.symbols) used_.insert(s.name);
  for (const Param& q : p.params) used_.insert(q.buffer.name);
  for (const Buffer& b : p.workspaces) used_.insert(b.name);
  auto kernel = [&](const Kernel& k) {
    for (const std::string& v : k.block_vars) used_.insert(v);
    ForEachStmt(k.body, [&](const Stmt& s) {
      if (s.kind == StmtKind::kAlloc) used_.insert(s.buffer.name);
      for (const std::string& v : s.loop_vars) used_.insert(v);
    });
  };
  kernel(p.kernel);
  for (const Kernel& k : p.next_kernels) kernel(k);
}

std::string FreshNames::Fresh(const std::string& base) {
  std::string name = base;
  for (int k = 1; used_.count(name) != 0; ++k) name = base + "_" + std::to_string(k);
  used_.insert(name);
  return name;
}

} // namespace kiln::ir
