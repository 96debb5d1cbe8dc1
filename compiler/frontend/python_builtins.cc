// Python builtins (range, len, min, max, int, ...) and methods of builtin
// types (dict.items, list.append, expr.astype) at compile time.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/args.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/frontend/py_format.h"
#include "compiler/ir/builder.h"
#include "util/status_macros.h"

namespace kiln::frontend {
namespace {

// Python's int.bit_length: bits of |v| without sign and leading zeros.
int BitLength(int64_t v) {
  uint64_t m = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  return m == 0 ? 0 : 64 - __builtin_clzll(m);
}

} // namespace

absl::StatusOr<Value> Evaluator::CallMethod(const Value& method, std::vector<Arg>& args, Loc loc) {
  std::string name = method.s.substr(7);
  const Value& self = method.elts()[0];
  const std::string& file = options_.file_name;
  if (name == "astype") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, "astype", args, {"dtype"}, 1));
    ASSIGN_OR_RETURN(ir::DType t, ToDType(*m[0], ArgLoc(args, {"dtype"}, 0, loc)));
    ASSIGN_OR_RETURN(ir::Expr e, ToExprOf(Ctx(loc), self, t));
    return Value::Expr(std::move(e));
  }
  if (name == "items" || name == "keys" || name == "values") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {}, 0));
    (void)m;
    RETURN_IF_ERROR(ChargeItems(loc, (name == "items" ? 3 : 1) * self.items->size()));
    ValueList out;
    for (size_t k = 0; k < self.items->size(); ++k) {
      if (name == "keys") {
        out.push_back((*self.items)[k]);
      } else if (name == "values") {
        out.push_back((*self.values)[k]);
      } else {
        out.push_back(Value::Tuple({(*self.items)[k], (*self.values)[k]}));
      }
    }
    return Value::List(std::move(out));
  }
  if (name == "get") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, "get", args, {"key", "default"}, 1));
    RETURN_IF_ERROR(ChargeScan(loc, self.items->size()));
    for (size_t k = 0; k < self.items->size(); ++k) {
      bool known = true;
      ASSIGN_OR_RETURN(bool eq, Equals((*self.items)[k], *m[0], &known, loc));
      if (eq && known) return (*self.values)[k];
    }
    return m[1].has_value() ? *m[1] : Value::None();
  }
  if (name == "append") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, "append", args, {"object"}, 1));
    if (self.items->size() >= kMaxCompileTimeItems) return Error(loc, "list too long");
    RETURN_IF_ERROR(ChargeItems(loc, 1));
    self.items->push_back(*m[0]);
    return Value::None();
  }
  if (name == "extend") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, "extend", args, {"iterable"}, 1));
    ASSIGN_OR_RETURN(std::vector<Value> more, Iterate(*m[0], loc));
    if (self.items->size() + more.size() >= kMaxCompileTimeItems)
      return Error(loc, "list too long");
    self.items->insert(self.items->end(), more.begin(), more.end());
    return Value::None();
  }
  if (name == "join") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, "join", args, {"iterable"}, 1));
    ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(*m[0], loc));
    std::string out;
    for (size_t k = 0; k < items.size(); ++k) {
      if (items[k].kind != ValueKind::kString) {
        return Error(loc, absl::StrCat("join(): sequence item ", k, ": expected str, got ",
                                       TypeName(items[k])));
      }
      if (k) out += self.s;
      out += items[k].s;
      if (out.size() > kMaxStringBytes) return Error(loc, "string too long");
    }
    RETURN_IF_ERROR(ChargeItems(loc, 1, out.size()));
    return Value::Str(std::move(out));
  }
  if (name == "startswith" || name == "endswith") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {"prefix"}, 1));
    std::vector<Value> options = {*m[0]};
    if (m[0]->kind == ValueKind::kTuple) options = m[0]->elts();
    RETURN_IF_ERROR(ChargeScan(loc, options.size()));
    for (const Value& o : options) {
      if (o.kind != ValueKind::kString) {
        return Error(loc,
                     absl::StrCat(name, "() expects a str or a tuple of str, got ", TypeName(o)));
      }
      if (name == "startswith" ? self.s.starts_with(o.s) : self.s.ends_with(o.s)) {
        return Value::Bool(true);
      }
    }
    return Value::Bool(false);
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    // Python's: strip whitespace, or any of the characters of `chars`.
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {"chars"}, 0));
    std::string chars = " \t\n\r\v\f";
    if (m[0].has_value() && !m[0]->is_none()) {
      if (m[0]->kind != ValueKind::kString) {
        return Error(loc, absl::StrCat(name, "() arg must be None or str, got ", TypeName(*m[0])));
      }
      chars = m[0]->s;
    }
    RETURN_IF_ERROR(ChargeScan(loc, self.s.size()));
    size_t begin = 0, end = self.s.size();
    if (name != "rstrip") {
      while (begin < end && chars.find(self.s[begin]) != std::string::npos) ++begin;
    }
    if (name != "lstrip") {
      while (end > begin && chars.find(self.s[end - 1]) != std::string::npos) --end;
    }
    return Value::Str(self.s.substr(begin, end - begin));
  }
  if (name == "isdigit" || name == "isalpha") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {}, 0));
    (void)m;
    RETURN_IF_ERROR(ChargeScan(loc, self.s.size()));
    bool all = !self.s.empty();
    for (char c : self.s) {
      bool digit = c >= '0' && c <= '9';
      bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      all = all && (name == "isdigit" ? digit : alpha);
    }
    return Value::Bool(all);
  }
  if (name == "bit_length") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {}, 0));
    (void)m;
    return Value::Int(BitLength(self.i));
  }
  return Error(loc, absl::StrCat("unsupported method '", name, "'"));
}

absl::StatusOr<Value> Evaluator::CallPythonBuiltin(const std::string& name, std::vector<Arg>& args,
                                                   Loc loc) {
  const std::string& file = options_.file_name;
  for (const Arg& a : args) {
    if (!a.name.empty() && name != "dict" && name != "sorted" && name != "min" && name != "max" &&
        name != "round") {
      return Error(a.name_loc,
                   absl::StrCat(name, "() got an unexpected keyword argument '", a.name, "'"));
    }
  }
  std::vector<Value> pos;
  for (Arg& a : args) {
    if (!a.name.empty()) continue;
    ASSIGN_OR_RETURN(Value v, Materialize(a.value, a.loc));
    pos.push_back(std::move(v));
  }
  auto want = [&](size_t lo, size_t hi) -> absl::Status {
    if (pos.size() < lo || pos.size() > hi) {
      return Error(loc, absl::StrCat(name, "() takes ", lo == hi ? "" : "from ", lo,
                                     lo == hi ? "" : absl::StrCat(" to ", hi), " argument",
                                     hi == 1 ? "" : "s", " but ", pos.size(), " were given"));
    }
    return absl::OkStatus();
  };
  // print() while the kernel is built (TileLang's examples print the
  // prim_func they made): the arguments are evaluated, nothing is written
  // (a daemon has no terminal to write to).
  if (name == "print") return Value::None();
  if (name == "isinstance") {
    RETURN_IF_ERROR(want(2, 2));
    std::vector<Value> classes = {pos[1]};
    if (pos[1].kind == ValueKind::kTuple) classes = pos[1].elts();
    RETURN_IF_ERROR(ChargeScan(loc, classes.size()));
    const Value& x = pos[0];
    bool result = false;
    for (const Value& c : classes) {
      if (c.kind != ValueKind::kBuiltin) {
        return Error(loc, absl::StrCat("isinstance() arg 2 must be a type or a tuple of types, "
                                       "got ",
                                       TypeName(c)));
      }
      const std::string& t = c.s;
      if (t == "int") {
        result |= x.is_int(); // bool is an int; symbolic values are not Python ints
      } else if (t == "bool") {
        result |= x.kind == ValueKind::kBool;
      } else if (t == "float") {
        result |= x.kind == ValueKind::kFloat;
      } else if (t == "str") {
        result |= x.kind == ValueKind::kString;
      } else if (t == "tuple") {
        result |= x.kind == ValueKind::kTuple;
      } else if (t == "list") {
        result |= x.kind == ValueKind::kList;
      } else if (t == "dict") {
        result |= x.kind == ValueKind::kDict;
      } else if (t == "T.Tensor" || t == "T.Buffer") {
        result |= x.kind == ValueKind::kBuffer;
      } else {
        return Error(loc, absl::StrCat("isinstance() with class '", t, "' is not supported"));
      }
    }
    return Value::Bool(result);
  }
  if (name == "type" || name == "getattr") {
    return Error(loc, absl::StrCat(name, "() is not supported"));
  }
  if (name == "range") {
    RETURN_IF_ERROR(want(1, 3));
    int64_t v[3] = {0, 0, 1};
    for (size_t k = 0; k < pos.size(); ++k) {
      if (!pos[k].is_int()) {
        return Error(loc, absl::StrCat("range() arguments must be compile-time integers here, got ",
                                       TypeName(pos[k])));
      }
    }
    if (pos.size() == 1) {
      v[1] = pos[0].i;
    } else {
      v[0] = pos[0].i;
      v[1] = pos[1].i;
      if (pos.size() == 3) v[2] = pos[2].i;
    }
    if (v[2] == 0) return Error(loc, "range() step must not be zero");
    Value r;
    r.kind = ValueKind::kRange;
    r.items = NewValueList(ValueList{Value::Int(v[0]), Value::Int(v[1]), Value::Int(v[2])});
    return r;
  }
  if (name == "len") {
    RETURN_IF_ERROR(want(1, 1));
    const Value& x = pos[0];
    if (x.is_sequence() || x.kind == ValueKind::kDict) {
      return Value::Int(static_cast<int64_t>(x.elts().size()));
    }
    if (x.kind == ValueKind::kString) return Value::Int(static_cast<int64_t>(x.s.size()));
    if (x.kind == ValueKind::kRange) {
      return Value::Int(RangeLength(x.elts()[0].i, x.elts()[1].i, x.elts()[2].i));
    }
    return Error(loc, absl::StrCat("object of type '", TypeName(x), "' has no len()"));
  }
  if (name == "min" || name == "max") {
    for (const Arg& a : args) {
      if (!a.name.empty())
        return Error(a.name_loc, absl::StrCat(name, "() keywords are not supported"));
    }
    if (pos.empty()) return Error(loc, absl::StrCat(name, "() expects at least one argument"));
    std::vector<Value> items = pos;
    if (pos.size() == 1) {
      ASSIGN_OR_RETURN(items, Iterate(pos[0], loc));
      if (items.empty()) return Error(loc, absl::StrCat(name, "() arg is an empty sequence"));
    }
    Value acc = items[0];
    for (size_t k = 1; k < items.size(); ++k) {
      ASSIGN_OR_RETURN(acc, ApplyMinMax(Ctx(loc), name == "max", acc, items[k]));
    }
    return acc;
  }
  if (name == "abs") {
    RETURN_IF_ERROR(want(1, 1));
    const Value& x = pos[0];
    if (x.kind == ValueKind::kFloat) return Value::Float(std::fabs(x.f));
    if (x.is_int()) {
      if (x.i == INT64_MIN) return Error(loc, "integer overflow in compile-time arithmetic");
      return Value::Int(x.i < 0 ? -x.i : x.i);
    }
    if (x.is_expr()) return Value::Expr(ir::Call(ir::Intrinsic::kAbs, {*x.expr}, loc));
    return Error(loc, absl::StrCat("bad operand type for abs(): '", TypeName(x), "'"));
  }
  if (name == "int" || name == "float" || name == "bool" || name == "str") {
    RETURN_IF_ERROR(want(0, 1));
    if (pos.empty()) {
      if (name == "int") return Value::Int(0);
      if (name == "float") return Value::Float(0);
      if (name == "bool") return Value::Bool(false);
      return Value::Str("");
    }
    const Value& x = pos[0];
    if (name == "bool") {
      bool known = true;
      bool t = Truthy(x, &known);
      if (!known) return Error(loc, "bool() of a value only known at run time is not supported");
      return Value::Bool(t);
    }
    if (x.is_expr()) {
      return Error(loc, absl::StrCat(name, "() of a symbolic value is not supported; use T.cast"));
    }
    if (name == "str") {
      if (x.kind == ValueKind::kString) return x;
      absl::StatusOr<std::string> text = PyStr(x, false, kMaxStringBytes);
      if (!text.ok()) return Error(loc, absl::StrCat("str(): ", text.status().message()));
      RETURN_IF_ERROR(ChargeItems(loc, 1, text->size()));
      return Value::Str(*std::move(text));
    }
    if (name == "int") {
      if (x.is_int()) return Value::Int(x.i);
      if (x.kind == ValueKind::kFloat) {
        if (!std::isfinite(x.f) || std::fabs(x.f) >= 9.2e18) {
          return Error(loc, "cannot convert float to int");
        }
        return Value::Int(static_cast<int64_t>(x.f));
      }
      if (x.kind == ValueKind::kString) {
        BindingValue b = ParseBindingText(x.s);
        if (b.kind == BindingValue::Kind::kInt) return Value::Int(b.ival);
      }
      return Error(loc, absl::StrCat("int() cannot convert a ", TypeName(x)));
    }
    if (x.is_int()) return Value::Float(static_cast<double>(x.i));
    if (x.kind == ValueKind::kFloat) return x;
    if (x.kind == ValueKind::kString) {
      if (x.s == "inf" || x.s == "+inf") return Value::Float(INFINITY);
      if (x.s == "-inf") return Value::Float(-INFINITY);
      if (x.s == "nan") return Value::Float(NAN);
      BindingValue b = ParseBindingText(x.s);
      if (b.kind == BindingValue::Kind::kInt) return Value::Float(static_cast<double>(b.ival));
      if (b.kind == BindingValue::Kind::kFloat) return Value::Float(b.fval);
    }
    return Error(loc, absl::StrCat("float() cannot convert a ", TypeName(x)));
  }
  if (name == "round") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, "round", args, {"number", "ndigits"}, 1));
    if (m[1].has_value() && !m[1]->is_none())
      return Error(loc, "round(x, ndigits) is not supported");
    const Value& x = *m[0];
    if (x.is_int()) return Value::Int(x.i);
    if (x.kind == ValueKind::kFloat && std::isfinite(x.f) && std::fabs(x.f) < 9.2e18) {
      return Value::Int(static_cast<int64_t>(std::nearbyint(x.f)));
    }
    return Error(loc, "round() needs a finite compile-time number");
  }
  if (name == "tuple" || name == "list" || name == "sorted" || name == "reversed") {
    if (name == "sorted") {
      for (const Arg& a : args) {
        if (!a.name.empty()) return Error(a.name_loc, "sorted() keywords are not supported");
      }
    }
    RETURN_IF_ERROR(want(0, 1));
    std::vector<Value> items;
    if (!pos.empty()) {
      ASSIGN_OR_RETURN(items, Iterate(pos[0], loc));
    }
    if (name == "reversed") std::reverse(items.begin(), items.end());
    if (name == "sorted") {
      // n log n comparisons.
      size_t log_n = 1;
      while ((size_t{1} << log_n) < items.size()) ++log_n;
      RETURN_IF_ERROR(ChargeScan(loc, items.size() * log_n));
      absl::Status st;
      std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
        absl::StatusOr<Value> r = ApplyCompare(Ctx(loc), "<", a, b);
        if (!r.ok()) {
          st = r.status();
          return false;
        }
        return r->kind == ValueKind::kBool && r->i != 0;
      });
      RETURN_IF_ERROR(st);
    }
    return name == "tuple" ? Value::Tuple(std::move(items)) : Value::List(std::move(items));
  }
  if (name == "dict") {
    RETURN_IF_ERROR(want(0, 0));
    Value d = Value::Dict();
    for (const Arg& a : args) {
      d.items->push_back(Value::Str(a.name));
      d.values->push_back(a.value);
    }
    return d;
  }
  if (name == "sum" || name == "any" || name == "all") {
    RETURN_IF_ERROR(want(1, name == "sum" ? 2 : 1));
    ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(pos[0], loc));
    if (name == "sum") {
      Value acc = pos.size() > 1 ? pos[1] : Value::Int(0);
      for (const Value& x : items) {
        ASSIGN_OR_RETURN(acc, ApplyBinary(Ctx(loc), "+", acc, x));
      }
      return acc;
    }
    for (const Value& x : items) {
      bool known = true;
      bool t = Truthy(x, &known);
      if (!known) return Error(loc, absl::StrCat(name, "() needs compile-time values"));
      if (name == "any" && t) return Value::Bool(true);
      if (name == "all" && !t) return Value::Bool(false);
    }
    return Value::Bool(name == "all");
  }
  if (name == "enumerate" || name == "zip") {
    if (name == "enumerate") RETURN_IF_ERROR(want(1, 2));
    std::vector<std::vector<Value>> lists;
    for (const Value& p : pos) {
      ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(p, loc));
      lists.push_back(std::move(items));
    }
    ValueList out;
    if (name == "enumerate") {
      int64_t start = 0;
      if (pos.size() > 1) {
        if (!pos[1].is_int()) return Error(loc, "enumerate() start must be an int");
        start = pos[1].i;
      }
      RETURN_IF_ERROR(ChargeItems(loc, 3 * lists[0].size()));
      for (size_t k = 0; k < lists[0].size(); ++k) {
        out.push_back(Value::Tuple({Value::Int(start + static_cast<int64_t>(k)), lists[0][k]}));
      }
    } else {
      size_t n = lists.empty() ? 0 : SIZE_MAX;
      for (const auto& l : lists) n = std::min(n, l.size());
      RETURN_IF_ERROR(ChargeItems(loc, n * (lists.size() + 1)));
      for (size_t k = 0; k < n; ++k) {
        ValueList t;
        for (const auto& l : lists) t.push_back(l[k]);
        out.push_back(Value::Tuple(std::move(t)));
      }
    }
    return Value::List(std::move(out));
  }
  if (name == "divmod") {
    RETURN_IF_ERROR(want(2, 2));
    ASSIGN_OR_RETURN(Value q, ApplyBinary(Ctx(loc), "//", pos[0], pos[1]));
    ASSIGN_OR_RETURN(Value r, ApplyBinary(Ctx(loc), "%", pos[0], pos[1]));
    return Value::Tuple({q, r});
  }
  if (name == "tilelang.math.next_power_of_2") {
    RETURN_IF_ERROR(want(1, 1));
    if (!pos[0].is_int()) {
      return Error(loc, absl::StrCat("next_power_of_2() needs a compile-time integer, got ",
                                     TypeName(pos[0])));
    }
    // TileLang's definition: 1 << (x - 1).bit_length() (so 0 gives 2).
    ASSIGN_OR_RETURN(Value below, ApplyBinary(Ctx(loc), "-", pos[0], Value::Int(1)));
    int bits = BitLength(below.i);
    if (bits > 62) return Error(loc, "integer overflow in compile-time arithmetic");
    return Value::Int(int64_t{1} << bits);
  }
  if (name == "tilelang.math.cdiv") {
    RETURN_IF_ERROR(want(2, 2));
    // (a + b - 1) // b, for symbolic operands too.
    ASSIGN_OR_RETURN(Value sum, ApplyBinary(Ctx(loc), "+", pos[0], pos[1]));
    ASSIGN_OR_RETURN(sum, ApplyBinary(Ctx(loc), "-", sum, Value::Int(1)));
    return ApplyBinary(Ctx(loc), "//", sum, pos[1]);
  }
  if (name == "math.gcd") {
    // gcd of any number of ints; gcd() == 0, results are non-negative.
    int64_t g = 0;
    for (const Value& x : pos) {
      if (!x.is_int()) {
        return Error(loc,
                     absl::StrCat("math.gcd() needs compile-time integers, got ", TypeName(x)));
      }
      if (x.i == INT64_MIN) return Error(loc, "integer overflow in compile-time arithmetic");
      int64_t a = x.i < 0 ? -x.i : x.i;
      while (a != 0) {
        int64_t r = g % a;
        g = a;
        a = r;
      }
    }
    return Value::Int(g);
  }
  if (name.rfind("math.", 0) == 0) {
    RETURN_IF_ERROR(want(1, 1));
    const Value& x = pos[0];
    if (!x.is_number()) return Error(loc, absl::StrCat(name, "() needs a compile-time number"));
    double d = x.is_int() ? static_cast<double>(x.i) : x.f;
    std::string fn = name.substr(5);
    if (fn == "sqrt" || fn == "isqrt") {
      if (d < 0) return Error(loc, "math domain error");
      if (fn == "isqrt") return Value::Int(static_cast<int64_t>(std::floor(std::sqrt(d))));
      return Value::Float(std::sqrt(d));
    }
    if (fn == "log" || fn == "log2") {
      if (d <= 0) return Error(loc, "math domain error");
      return Value::Float(fn == "log" ? std::log(d) : std::log2(d));
    }
    if (fn == "exp") return Value::Float(std::exp(d));
    if (fn == "exp2") return Value::Float(std::exp2(d));
    if (x.is_int()) return Value::Int(x.i);
    double r = fn == "ceil" ? std::ceil(d) : std::floor(d);
    if (!std::isfinite(r) || std::fabs(r) >= 9.2e18) return Error(loc, "cannot convert to int");
    return Value::Int(static_cast<int64_t>(r));
  }
  return Error(loc, absl::StrCat(name, "() is not supported"));
}

} // namespace kiln::frontend
