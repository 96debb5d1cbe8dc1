// The value model of the compile-time (meta) evaluator: what a Python name or
// expression denotes while the frontend runs the Python around a TileLang
// kernel. Values are either ordinary Python data known at compile time
// (ints, floats, strings, tuples, ...), symbolic IR expressions that only the
// GPU can evaluate (loop variables, loads, dynamic shape symbols), or handles
// to TileLang objects (buffers, dtypes, builtins, modules).
//
// Values are cheap to copy: IR expressions and sequences are shared,
// immutable except for Python lists, which alias like Python lists do.
// Thread-safety: plain data, no synchronization; one evaluator per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::frontend {

struct PyStmt;
class EvalBudget;

enum class ValueKind : uint8_t {
  kNone,       // s = the entry parameter it is the default of, when that
               // parameter was left unbound (diagnostics name it); else ""
  kBool,       // i = 0/1
  kInt,        // i
  kFloat,      // f
  kString,     // s
  kTuple,      // items
  kList,       // items (mutable, shared between aliases)
  kDict,       // items = keys, values = values
  kExpr,       // expr: a symbolic IR expression
  kDType,      // dtype
  kBuffer,     // i = buffer id in the evaluator's table
  kAccess,     // buf[...]: i = buffer id, items = indices (kInt/kExpr/kSlice)
  kSlice,      // items = {lower, upper, step}, kNone when omitted
  kFunction,   // func = the def statement (a user function or prim_func)
  kPrimFunc,   // a lowered @T.prim_func: func = its def
  kModule,     // s = canonical module path ("T", "tilelang", "torch", ...)
  kBuiltin,    // s = qualified name ("T.copy", "range", ...); items[0] = the
               // receiver for bound methods ("astype", "items", ...)
  kLayout,     // s = layout kind ("swizzled", ...), i = buffer id
  kPolicy,     // i = ir::GemmPolicy
  kTensorType, // T.Tensor(shape, dtype): items = shape, dtype
  kRange,      // range(start, stop, step): items = three kInt values
  kOpaque,     // s = description; something the subset does not model
};

struct Value;
using ValueList = std::vector<Value>;

struct Value {
  ValueKind kind = ValueKind::kNone;
  ir::DType dtype = ir::DType::kInt32;
  int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::shared_ptr<const ir::Expr> expr;
  std::shared_ptr<ValueList> items;
  std::shared_ptr<ValueList> values;
  const PyStmt* func = nullptr;

  static Value None() { return Value(); }
  static Value Bool(bool b);
  static Value Int(int64_t v);
  static Value Float(double v);
  static Value Str(std::string v);
  static Value Tuple(ValueList elts);
  static Value List(ValueList elts);
  static Value Expr(ir::Expr e);
  static Value DType(ir::DType t);
  static Value Buffer(int id);
  static Value Module(std::string path);
  static Value Builtin(std::string name);
  static Value Opaque(std::string what);
  static Value Dict(); // empty

  bool is_none() const { return kind == ValueKind::kNone; }
  // Python int or bool (bool is an int subclass).
  bool is_int() const { return kind == ValueKind::kInt || kind == ValueKind::kBool; }
  bool is_number() const { return is_int() || kind == ValueKind::kFloat; }
  bool is_sequence() const { return kind == ValueKind::kTuple || kind == ValueKind::kList; }
  bool is_expr() const { return kind == ValueKind::kExpr; }
  const ValueList& elts() const;
};

// A new shared sequence (every Value's items and values come from here).
// Freeing one is iterative, not recursive: a list nested a million deep
// (`l = [l]` in a loop) is freed without a stack frame per level. Made
// while a ValueHeap is current (value_heap.h), it is freed when that heap
// ends at the latest, even when it is part of a reference cycle.
std::shared_ptr<ValueList> NewValueList(ValueList items = {});

// The number of items of range(start, stop, step) (step != 0).
int64_t RangeLength(int64_t start, int64_t stop, int64_t step);

// Python's name for the type of `v`, for diagnostics ("int", "tuple",
// "symbolic expression", "buffer", ...).
std::string TypeName(const Value& v);

// A short rendering of `v` for diagnostics. Strings are not echoed (client
// text stays out of messages beyond validated identifiers).
std::string Describe(const Value& v);

// Python truthiness for compile-time values; false with *known = false for
// symbolic values and anything whose truth is not defined here.
bool Truthy(const Value& v, bool* known);

// Python `==` on compile-time values (numbers, strings, None, sequences,
// dtypes). Symbolic operands compare unequal with *known = false.
// Sequences that share their storage are equal without a walk (Python's
// identity rule), and the walk of others is charged to `budget` (one step
// per item, at `loc`): `l = (l, l)` 64 times is 2^64 items to walk. When the
// budget runs out, or values nest deeper than kMaxCompareDepth, the result
// is false with *known = false and `budget->status()` says why; callers
// with a budget check it.
inline constexpr int kMaxCompareDepth = 256;
bool PyEquals(const Value& a, const Value& b, bool* known, EvalBudget* budget = nullptr,
              ir::Loc loc = {});

// Python's repr-like text of a compile-time scalar used as an attribute
// value: True -> "true", 3 -> "3", 0.5 -> "0.5", strings verbatim.
std::string AttrText(const Value& v);

} // namespace kiln::frontend
