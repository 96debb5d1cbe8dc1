// Constant folding of one IR node whose operands are literals, with the
// IR's semantics: integers wrap to their dtype's width, kDiv truncates,
// kFloorDiv/kFloorMod round toward -inf (Python), floats are rounded to
// their dtype. Used by the simplifier (simplify.h), which adds algebra.
// Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <optional>

#include "compiler/ir/ir.h"

namespace kiln::ir {

// The literal for `e` (a kBinary, kUnary or kCast with literal operands),
// located at e.loc, or nullopt when it cannot be folded exactly (division by
// zero, shifts out of range, float->int overflow, an inexact float16 result,
// mixed or invalid dtypes, ...).
std::optional<Expr> FoldConstant(const Expr& e);

// Reduces a two's complement bit pattern to the width of integer (or bool)
// dtype `t`, as the IR stores literals in Expr::ival.
int64_t WrapToDType(uint64_t v, DType t);

} // namespace kiln::ir
