// Generic helpers over the IR tree: walking and rewriting expressions and
// statements, clearing locations, and the user's names of the interface.
// Thread-safe (pure functions over the arguments).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::ir {

// Sets every Loc in the program to 0:0 (for structure-only comparisons).
void StripLocations(Program* program);

// Calls fn on every statement, pre-order, descending into bodies.
void ForEachStmt(const std::vector<Stmt>& stmts, const std::function<void(const Stmt&)>& fn);

// Calls fn on every expression of the program (pre-order, including the
// sub-expressions of each expression): shapes, grid, ranges, values,
// conditions, indices, extents, and the arguments of thread-IR calls (an
// address operand, then its index).
void ForEachExpr(const Program& program, const std::function<void(const Expr&)>& fn);

// Rewrites every expression of the program bottom-up: fn receives a node
// whose children are already rewritten and returns its replacement.
void RewriteExprs(Program* program, const std::function<Expr(Expr)>& fn);
void RewriteExpr(Expr* expr, const std::function<Expr(Expr)>& fn);
// The same over statements (their bodies included).
void RewriteStmts(std::vector<Stmt>* stmts, const std::function<Expr(Expr)>& fn);
// Replaces each variable named in `values` by its value (cast to the
// variable's dtype where they differ) throughout `stmts`.
void SubstituteVars(std::vector<Stmt>* stmts, const std::map<std::string, Expr>& values);

// The name the user knows a symbol or parameter by (see ir.h): its
// user_name, or its IR name when that is empty.
// One program per kernel of `program` (ir.h: Program::next_kernels), in
// launch order, each with the shared symbols, parameters and attrs and its
// workspaces appended to the parameters (Param::is_workspace), so that
// every pass and the code generator see a one-kernel program. A program of
// one kernel and no workspace comes back unchanged, alone.
std::vector<Program> SplitKernels(const Program& program);

const std::string& UserName(const Symbol& symbol);
const std::string& UserName(const Param& param);

// `expr` with each variable that is a symbol or scalar parameter of
// `program` renamed to its user name: the form of an extent shown outside
// the compiler (launch metadata). Other names are left as they are.
Expr WithUserNames(const Expr& expr, const Program& program);

// Names no buffer, variable, block variable or symbol of a program has (its
// kernels included), for passes that add their own. Each Fresh(base) is
// `base`, or `base_1`, `base_2`, ... where taken, and is taken from then on.
class FreshNames {
 public:
  explicit FreshNames(const Program& program);
  std::string Fresh(const std::string& base);

 private:
  std::set<std::string> used_;
};

} // namespace kiln::ir
