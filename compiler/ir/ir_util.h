// Generic helpers over the IR tree: walking and rewriting expressions and
// statements, clearing locations.
// Thread-safe (pure functions over the arguments).
#pragma once

#include <functional>

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

} // namespace kiln::ir
