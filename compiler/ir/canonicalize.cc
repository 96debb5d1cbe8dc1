// Names are rewritten before expressions are simplified: the simplifier
// orders the terms of a sum by their names, so simplifying first would make
// the canonical term order depend on the user's spelling.
#include "compiler/ir/canonicalize.h"

#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/simplify.h"

namespace kiln::ir {
namespace {

class Canonicalizer {
 public:
  Program Run(const Program& in) {
    Program out = in;
    out.name.clear();
    out.source_name.clear();
    // The user names of the interface stay: the launch metadata stored with
    // an artifact carries them (ir.h).
    for (Symbol& s : out.symbols) {
      s.user_name = UserName(s);
      s.name = Define(s.name, "s", &symbols_);
      s.loc = {};
    }
    for (Param& p : out.params) {
      // The shape may use earlier names (symbols, scalar parameters) only.
      RewriteBuffer(&p.buffer);
      p.user_name = UserName(p);
      p.buffer.name = Define(p.buffer.name, "p", &params_);
    }
    for (Buffer& w : out.workspaces) {
      RewriteBuffer(&w);
      w.name = Define(w.name, "w", &workspaces_);
    }
    auto kernel = [&](Kernel& k) {
      for (Expr& e : k.grid) Rewrite(&e);
      for (std::string& v : k.block_vars) v = Define(v, "b", &block_vars_);
      k.loc = {};
      RewriteStmts(&k.body);
    };
    kernel(out.kernel);
    for (Kernel& k : out.next_kernels) kernel(k);
    return out;
  }

 private:
  std::string Define(const std::string& name, const char* prefix, int* counter) {
    std::string fresh = absl::StrCat(prefix, (*counter)++);
    renamed_[name] = fresh;
    return fresh;
  }

  void Rename(std::string* name) const {
    auto it = renamed_.find(*name);
    if (it != renamed_.end()) *name = it->second;
  }

  void RenameAndStrip(Expr* e) const {
    e->loc = {};
    if (e->kind == ExprKind::kVar || e->kind == ExprKind::kLoad || e->kind == ExprKind::kAddress) {
      Rename(&e->name);
    }
    for (Expr& a : e->args) RenameAndStrip(&a);
  }

  void Rewrite(Expr* e) const {
    RenameAndStrip(e);
    *e = Simplify(*e);
    e->loc = {};
  }

  void RewriteBuffer(Buffer* b) {
    for (Expr& e : b->shape) Rewrite(&e);
    Rewrite(&b->init);
    b->loc = {};
    if (b->index_layout) {
      // The layout's variables are defined by the layout, before its indices.
      for (std::string& v : b->index_layout->vars) v = Define(v, "l", &layout_vars_);
      for (Expr& e : b->index_layout->forward) Rewrite(&e);
      b->index_layout->loc = {};
    }
  }

  void RewriteRegion(Region* r) const {
    Rename(&r->buffer);
    for (Range& range : r->ranges) {
      Rewrite(&range.min);
      Rewrite(&range.extent);
    }
    r->loc = {};
  }

  void RewriteStmts(std::vector<Stmt>* stmts) {
    for (Stmt& s : *stmts) RewriteStmt(&s);
  }

  // Program order: a statement's own definitions come before those in its
  // body, and expressions are rewritten where their names are in scope.
  void RewriteStmt(Stmt* s) {
    s->loc = {};
    if (s->kind == StmtKind::kAlloc) {
      RewriteBuffer(&s->buffer);
      s->buffer.name = Define(s->buffer.name, "t", &buffers_);
    }
    for (Region& r : s->regions) RewriteRegion(&r);
    // Unused fields too, so that the canonical form has no stray locations.
    Rewrite(&s->value);
    Rewrite(&s->cond);
    for (Expr& e : s->extents) Rewrite(&e);
    for (std::string& v : s->loop_vars) v = Define(v, "i", &loop_vars_);
    // A call's name is an intrinsic, not a user name: a buffer that happens
    // to be called `copy_4` must not rename the intrinsic.
    if (s->kind != StmtKind::kCall) Rename(&s->name);
    // Store indices and call arguments (kConstInt literals stay literals).
    for (Expr& e : s->indices) Rewrite(&e);
    RewriteStmts(&s->body);
    RewriteStmts(&s->else_body);
  }

  std::map<std::string, std::string> renamed_;
  int symbols_ = 0, params_ = 0, block_vars_ = 0, buffers_ = 0, loop_vars_ = 0, layout_vars_ = 0,
      workspaces_ = 0;
};

} // namespace

Program Canonicalize(const Program& program) { return Canonicalizer().Run(program); }

} // namespace kiln::ir
