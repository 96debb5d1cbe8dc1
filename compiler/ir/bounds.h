// Integer bounds of index expressions and simplification that uses them.
//
// Lowered index arithmetic is full of terms whose range is known from the
// program: thread indices run over [0, threads), loop variables over
// [0, extent), block indices over [0, grid). Knowing that, `(tid % 32) / 16`
// is below 2, so a following `% 8` is the identity and `(x * 8) / 64` with
// x < 8 is 0. SimplifyWithBounds removes such operations; that shrinks the
// generated C++ (less work for NVVM and ptxas, fewer integer instructions
// in the kernel) and decides bounds checks that are statically true.
// Thread-safe: BoundContext is a plain value; the functions are pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::ir {

// A closed interval [lo, hi] of integer values.
struct IntBounds {
  int64_t lo = 0;
  int64_t hi = 0;
  bool operator==(const IntBounds&) const = default;
};

// What is known about the variables in scope. Variables are scoped: Push a
// loop variable when entering its loop and Pop it when leaving, so inner
// bindings shadow outer ones of the same name.
class BoundContext {
 public:
  // Thread index d runs over [0, extents[d]).
  void SetThreadExtents(std::vector<int64_t> extents) { threads_ = std::move(extents); }
  // Within a branch that only some threads take (`if thread_idx(d) < c`):
  // thread index `dim` lies in `b` (intersected with its extent) until the
  // matching PopThread.
  void PushThread(int64_t dim, IntBounds b) { thread_ranges_[dim].push_back(b); }
  void PopThread(int64_t dim);
  void Push(const std::string& var, IntBounds b) { vars_[var].push_back(b); }
  void Pop(const std::string& var);

  std::optional<IntBounds> Var(const std::string& name) const;
  std::optional<IntBounds> Thread(int64_t dim) const;

 private:
  std::map<std::string, std::vector<IntBounds>> vars_;
  std::vector<int64_t> threads_;
  std::map<int64_t, std::vector<IntBounds>> thread_ranges_;
};

// Bounds of a signed integer expression, or nullopt when they are unknown
// (a load, a symbol without bounds, a float, or a value that might leave
// the dtype's range).
std::optional<IntBounds> BoundsOf(const Expr& e, const BoundContext& ctx);

// ir::Simplify, plus rewrites valid for every value within the bounds of
// `ctx`: division and modulo by a constant whose result is decided or
// reduces to a smaller expression, comparisons and min/max decided by
// bounds, selects with decided conditions, and whole integer expressions
// whose bounds are a single value. Keeps dtypes and the location of `e`.
Expr SimplifyWithBounds(const Expr& e, const BoundContext& ctx);

} // namespace kiln::ir
