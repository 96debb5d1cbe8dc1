// Python operators on evaluator values: exact Python semantics when both
// operands are known at compile time, IR construction (with TVM's type
// promotion and explicit casts) when either is symbolic.
//
// Promotion, as TVM does it: a Python int next to an IR expression takes the
// expression's dtype; a Python float next to an integer expression makes
// both float32; two IR dtypes meet at the wider float, a float beats an int,
// and the wider integer beats the narrower (same width: signed).
//
// Errors are located at `loc` in `file` (division by zero, overflow of
// compile-time integers, operand types the operator does not accept), and
// the budget's errors when ctx.budget runs out.
// Thread-safe (pure functions).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "compiler/frontend/eval_budget.h"
#include "compiler/frontend/value.h"
#include "compiler/ir/ir.h"

namespace kiln::frontend {

struct ArithContext {
  std::string_view file;
  ir::Loc loc;
  // Charged with the work of operators whose cost grows with their operands
  // (sequence + and *, ==, in); null: not charged.
  EvalBudget* budget = nullptr;
};

// `op` is Python's spelling: + - * / // % ** & | ^ << >> @.
absl::StatusOr<Value> ApplyBinary(const ArithContext& ctx, std::string_view op, const Value& a,
                                  const Value& b);

// `op` is "-", "+", "~" or "not".
absl::StatusOr<Value> ApplyUnary(const ArithContext& ctx, std::string_view op, const Value& a);

// One link of a comparison chain: < <= > >= == != in, not in, is, is not.
absl::StatusOr<Value> ApplyCompare(const ArithContext& ctx, std::string_view op, const Value& a,
                                   const Value& b);

// `and` / `or` of two already-evaluated symbolic operands (logical IR ops).
absl::StatusOr<Value> ApplyLogical(const ArithContext& ctx, bool is_and, const Value& a,
                                   const Value& b);

// kMin / kMax with promotion (T.min, T.max, min/max on symbolic values).
absl::StatusOr<Value> ApplyMinMax(const ArithContext& ctx, bool is_max, const Value& a,
                                  const Value& b);

// The IR form of a number, bool or expression. Python ints are int32
// (int64 when they do not fit), floats float32. Other kinds are an error.
absl::StatusOr<ir::Expr> ToExpr(const ArithContext& ctx, const Value& v);

// The IR form of `v` converted to `dtype` (literals are built in that dtype;
// expressions get a Cast when their dtype differs).
absl::StatusOr<ir::Expr> ToExprOf(const ArithContext& ctx, const Value& v, ir::DType dtype);

// Two operands brought to one dtype per the rules above.
absl::Status PromotePair(const ArithContext& ctx, const Value& a, const Value& b, ir::Expr* x,
                         ir::Expr* y);

// `e` as `dtype`, adding a Cast only when needed (literals are rebuilt).
ir::Expr CastExpr(ir::Expr e, ir::DType dtype, ir::Loc loc);

// The dtype two IR dtypes promote to.
ir::DType PromoteDTypes(ir::DType a, ir::DType b);

// Value as a boolean IR condition (non-bool expressions compare != 0).
absl::StatusOr<ir::Expr> ToCondition(const ArithContext& ctx, const Value& v);

} // namespace kiln::frontend
