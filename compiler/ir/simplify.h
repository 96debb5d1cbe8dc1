// Arithmetic simplification of IR expressions: constant folding (with the
// IR's integer semantics: kDiv truncates, kFloorDiv/kFloorMod round toward
// -inf) and normalization of integer index arithmetic into a canonical sum
// of products, so that `(bx + 1) * 64 - bx * 64` becomes `64` and equal
// index expressions print equally.
// Thread-safe (pure functions).
#pragma once

#include <optional>

#include "compiler/ir/ir.h"

namespace kiln::ir {

// Returns an expression equal to `e` for every value of its variables and
// loads. Never changes dtypes; keeps the location of `e` on the result.
Expr Simplify(const Expr& e);

// The value of `e` if it simplifies to an integer (or bool) literal.
std::optional<int64_t> ConstInt(const Expr& e);

// The number of blocks of `kernel`'s grid when every extent simplifies to a
// positive constant, else nullopt.
std::optional<int64_t> ConstGridBlocks(const Kernel& kernel);

// True if a and b are equal for all variable values (decided by simplifying
// a - b for integers; structural equality otherwise). False means "not
// proven", not "different".
bool ProvablyEqual(const Expr& a, const Expr& b);

} // namespace kiln::ir
