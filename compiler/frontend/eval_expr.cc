// Expression evaluation: Python semantics at compile time, IR for symbolic
// values; Python builtins; calls of user functions (and @T.macro).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/args.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/frontend/names.h"
#include "compiler/frontend/py_format.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "util/status_macros.h"

namespace kiln::frontend {
namespace {

Value BoundMethod(const std::string& name, const Value& self) {
  Value m = Value::Builtin(absl::StrCat("method:", name));
  m.items = NewValueList(ValueList{self});
  return m;
}

} // namespace

absl::StatusOr<Value> Evaluator::EvalScalar(const PyExpr& e) {
  ASSIGN_OR_RETURN(Value v, Eval(e));
  return Materialize(v, e.loc);
}

absl::StatusOr<Value> Evaluator::Materialize(const Value& v, Loc loc) {
  if (v.kind != ValueKind::kAccess) return v;
  ASSIGN_OR_RETURN(ir::Expr e, LoadOf(v, loc));
  return Value::Expr(std::move(e));
}

absl::StatusOr<Value> Evaluator::Eval(const PyExpr& e) {
  // Every expression node is a step: a flat node can be as long as the
  // source (a 120,000-link `a == b == ...` chain), so counting statements
  // alone let one statement in a loop run for minutes under the budget.
  RETURN_IF_ERROR(Step(e.loc));
  RETURN_IF_ERROR(EnterNesting(e.loc));
  struct Leave {
    Evaluator* ev;
    ~Leave() { ev->LeaveNesting(); }
  } leave{this};
  switch (e.kind) {
  case PyExprKind::kName: {
    ASSIGN_OR_RETURN(Value v, LookupName(e.str, e.loc));
    if (v.kind == ValueKind::kBuffer && buffers_[v.i].buffer.scope == ir::Scope::kVar) {
      // Reading a T.alloc_var name reads its value.
      const ir::Buffer& b = buffers_[v.i].buffer;
      return Value::Expr(
          ir::Load(b.name, b.dtype, {ir::IntImm(0, ir::DType::kInt32, e.loc)}, e.loc));
    }
    if (v.kind == ValueKind::kOpaque && !IsStorage(v)) {
      return Error(e.loc, absl::StrCat("'", e.str, "' (", v.s, ") cannot be used here"));
    }
    return v;
  }
  case PyExprKind::kInt:
    return Value::Int(e.ival);
  case PyExprKind::kFloat:
    return Value::Float(e.fval);
  case PyExprKind::kString:
    if (e.is_fstring) return EvalFString(e);
    return Value::Str(e.str);
  case PyExprKind::kBool:
    return Value::Bool(e.ival != 0);
  case PyExprKind::kNone:
    return Value::None();
  case PyExprKind::kEllipsis:
    return Error(e.loc, "'...' is not supported");
  case PyExprKind::kTuple:
  case PyExprKind::kList: {
    ValueList out;
    out.reserve(e.elts.size());
    for (const PyExpr& x : e.elts) {
      if (x.kind == PyExprKind::kStarred) {
        ASSIGN_OR_RETURN(Value seq, Eval(x.elts[0]));
        ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(seq, x.loc));
        out.insert(out.end(), items.begin(), items.end());
        continue;
      }
      ASSIGN_OR_RETURN(Value v, Eval(x));
      out.push_back(std::move(v));
    }
    return e.kind == PyExprKind::kTuple ? Value::Tuple(std::move(out))
                                        : Value::List(std::move(out));
  }
  case PyExprKind::kDict: {
    Value d = Value::Dict();
    for (size_t k = 0; k < e.elts.size() && k < e.values.size(); ++k) {
      if (e.elts[k].is_star || e.elts[k].kind == PyExprKind::kNone) {
        ASSIGN_OR_RETURN(Value other, Eval(e.values[k]));
        if (other.kind != ValueKind::kDict) return Error(e.values[k].loc, "'**' needs a dict");
        RETURN_IF_ERROR(ChargeItems(e.values[k].loc, 2 * other.items->size()));
        for (size_t j = 0; j < other.items->size(); ++j) {
          d.items->push_back((*other.items)[j]);
          d.values->push_back((*other.values)[j]);
        }
        continue;
      }
      ASSIGN_OR_RETURN(Value key, Eval(e.elts[k]));
      ASSIGN_OR_RETURN(Value val, Eval(e.values[k]));
      bool replaced = false;
      RETURN_IF_ERROR(ChargeScan(e.elts[k].loc, d.items->size()));
      for (size_t j = 0; j < d.items->size(); ++j) {
        bool known = true;
        ASSIGN_OR_RETURN(bool eq, Equals((*d.items)[j], key, &known, e.elts[k].loc));
        if (eq && known) {
          (*d.values)[j] = val;
          replaced = true;
        }
      }
      if (!replaced) {
        d.items->push_back(std::move(key));
        d.values->push_back(std::move(val));
      }
    }
    return d;
  }
  case PyExprKind::kSet:
    return Error(e.loc, "set literals are not supported");
  case PyExprKind::kAttribute:
    return EvalAttribute(e);
  case PyExprKind::kCall:
    return EvalCall(e);
  case PyExprKind::kSubscript:
    return EvalSubscript(e);
  case PyExprKind::kSlice: {
    ValueList parts;
    for (const PyExpr& x : e.elts) {
      if (x.kind == PyExprKind::kNone) {
        parts.push_back(Value::None());
        continue;
      }
      ASSIGN_OR_RETURN(Value v, EvalScalar(x));
      parts.push_back(std::move(v));
    }
    while (parts.size() < 3) parts.push_back(Value::None());
    Value s;
    s.kind = ValueKind::kSlice;
    s.items = NewValueList(std::move(parts));
    return s;
  }
  case PyExprKind::kBinOp: {
    ASSIGN_OR_RETURN(Value a, EvalScalar(e.elts[0]));
    ASSIGN_OR_RETURN(Value b, EvalScalar(e.elts[1]));
    return ApplyBinary(Ctx(e.loc), e.str, a, b);
  }
  case PyExprKind::kUnaryOp: {
    ASSIGN_OR_RETURN(Value a, EvalScalar(e.elts[0]));
    return ApplyUnary(Ctx(e.loc), e.str, a);
  }
  case PyExprKind::kCompare:
    return EvalCompare(e);
  case PyExprKind::kBoolOp:
    return EvalBoolOp(e);
  case PyExprKind::kIfExp: {
    ASSIGN_OR_RETURN(Value test, EvalScalar(e.elts[1]));
    bool known = true;
    bool t = Truthy(test, &known);
    if (known) return Eval(t ? e.elts[0] : e.elts[2]);
    if (!test.is_expr()) return Error(e.elts[1].loc, "unsupported condition");
    ASSIGN_OR_RETURN(Value a, EvalScalar(e.elts[0]));
    ASSIGN_OR_RETURN(Value b, EvalScalar(e.elts[2]));
    ir::Expr x, y;
    RETURN_IF_ERROR(PromotePair(Ctx(e.loc), a, b, &x, &y));
    ASSIGN_OR_RETURN(ir::Expr c, ToCondition(Ctx(e.elts[1].loc), test));
    return Value::Expr(ir::Select(std::move(c), std::move(x), std::move(y), e.loc));
  }
  case PyExprKind::kLambda:
    return MakeLambda(e);
  case PyExprKind::kStarred:
    return Error(e.loc, "starred expression is not supported here");
  case PyExprKind::kComprehension:
    return EvalComprehension(e);
  case PyExprKind::kNamedExpr:
    return Error(e.loc, "assignment expressions (':=') are not supported");
  }
  return Error(e.loc, "unsupported expression");
}

absl::StatusOr<Value> Evaluator::EvalCompare(const PyExpr& e) {
  ASSIGN_OR_RETURN(Value left, EvalScalar(e.elts[0]));
  std::optional<Value> symbolic;
  for (size_t k = 0; k < e.ops.size() && k + 1 < e.elts.size(); ++k) {
    ASSIGN_OR_RETURN(Value right, EvalScalar(e.elts[k + 1]));
    ASSIGN_OR_RETURN(Value r, ApplyCompare(Ctx(e.loc), e.ops[k], left, right));
    if (r.is_expr()) {
      if (symbolic) {
        ASSIGN_OR_RETURN(r, ApplyLogical(Ctx(e.loc), true, *symbolic, r));
      }
      symbolic = std::move(r);
    } else {
      bool known = true;
      if (!Truthy(r, &known)) return Value::Bool(false);
    }
    left = std::move(right);
  }
  if (symbolic) return *std::move(symbolic);
  return Value::Bool(true);
}

absl::StatusOr<Value> Evaluator::EvalBoolOp(const PyExpr& e) {
  bool is_and = e.str == "and";
  ASSIGN_OR_RETURN(Value result, EvalScalar(e.elts[0]));
  for (size_t k = 1; k < e.elts.size(); ++k) {
    bool known = true;
    bool t = Truthy(result, &known);
    if (known) {
      if (is_and != t) return result; // short circuit
      ASSIGN_OR_RETURN(result, EvalScalar(e.elts[k]));
      continue;
    }
    if (!result.is_expr()) return Error(e.loc, "unsupported operand of 'and'/'or'");
    ASSIGN_OR_RETURN(Value next, EvalScalar(e.elts[k]));
    bool next_known = true;
    bool nt = Truthy(next, &next_known);
    if (next_known) {
      // cond and True == cond; cond and False == False (and dually for or).
      if (is_and && !nt) return Value::Bool(false);
      if (!is_and && nt) return Value::Bool(true);
      continue;
    }
    ASSIGN_OR_RETURN(result, ApplyLogical(Ctx(e.loc), is_and, result, next));
  }
  return result;
}

absl::StatusOr<Value> Evaluator::EvalComprehension(const PyExpr& e) {
  if (e.str == "set") return Error(e.loc, "set comprehensions are not supported");
  RETURN_IF_ERROR(budget_.Charge(e.loc, kCallSteps, kFrameBytes));
  frames_.push_back(std::make_unique<Frame>());
  int frame = static_cast<int>(frames_.size()) - 1;
  frames_[frame]->parent = frame_;
  int saved = std::exchange(frame_, frame);
  Value out = e.str == "dict" ? Value::Dict() : Value::List({});
  // Iterates clause `level`; emits an element when all clauses are bound.
  std::function<absl::Status(size_t)> run = [&](size_t level) -> absl::Status {
    if (level == e.comps.size()) {
      RETURN_IF_ERROR(Step(e.loc));
      if (e.str == "dict") {
        ASSIGN_OR_RETURN(Value k, Eval(e.elts[0]));
        ASSIGN_OR_RETURN(Value v, Eval(e.elts[1]));
        out.items->push_back(std::move(k));
        out.values->push_back(std::move(v));
      } else {
        ASSIGN_OR_RETURN(Value v, Eval(e.elts[0]));
        out.items->push_back(std::move(v));
      }
      return absl::OkStatus();
    }
    const Comprehension& c = e.comps[level];
    ASSIGN_OR_RETURN(Value iterable, Eval(c.iter[0]));
    ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(iterable, c.iter[0].loc));
    for (const Value& item : items) {
      RETURN_IF_ERROR(Assign(c.target[0], item));
      bool keep = true;
      for (const PyExpr& cond : c.ifs) {
        ASSIGN_OR_RETURN(Value t, EvalScalar(cond));
        bool known = true;
        bool ok = Truthy(t, &known);
        if (!known) return Error(cond.loc, "comprehension condition must be known at compile time");
        if (!ok) {
          keep = false;
          break;
        }
      }
      if (keep) RETURN_IF_ERROR(run(level + 1));
    }
    return absl::OkStatus();
  };
  absl::Status st = run(0);
  frame_ = saved;
  RETURN_IF_ERROR(st);
  return out;
}

absl::StatusOr<Value> Evaluator::EvalFString(const PyExpr& e) {
  if (!e.values.empty()) return Error(e.values[0].loc, e.values[0].str);
  std::string out;
  for (const PyExpr& part : e.elts) {
    if (!part.is_fstring) {
      out += part.str;
    } else {
      const PyExpr& x = part.elts[0];
      ASSIGN_OR_RETURN(Value v, Eval(x));
      size_t room = kMaxStringBytes - std::min(out.size(), kMaxStringBytes);
      absl::StatusOr<std::string> text;
      if (!part.ops.empty() && part.ops[0] != "s") {
        // !r and !a: the repr (ASCII already), then the spec applies to it.
        text = PyStr(v, true, room);
        if (text.ok() && !part.str.empty()) text = PyFormat(Value::Str(*text), part.str, room);
      } else {
        text = PyFormat(v, part.str, room);
      }
      if (!text.ok()) return Error(x.loc, absl::StrCat("f-string: ", text.status().message()));
      out += *text;
    }
    if (out.size() > kMaxStringBytes) return Error(e.loc, "string too long");
  }
  RETURN_IF_ERROR(ChargeItems(e.loc, 1, out.size()));
  return Value::Str(std::move(out));
}

// ---------------------------------------------------------------------------
// Attributes and subscripts.

absl::StatusOr<Value> Evaluator::ResolveModuleAttr(const std::string& path, Loc loc) {
  size_t dot = path.rfind('.');
  std::string module = path.substr(0, dot);
  std::string attr = path.substr(dot + 1);
  if (std::optional<Value> device = ResolveDeviceQueryName(path)) return *std::move(device);
  // TVM's typed constant (tvm.tirx.const, tvm.tir.const): called below.
  if (path == "tvm.tirx.const" || path == "tvm.tir.const" || path == "tvm.tirx.reinterpret" ||
      path == "tvm.tir.reinterpret") {
    return Value::Module(path);
  }
  if (module == "T") {
    if (std::optional<ir::DType> t = ParseDTypeAlias(attr)) return Value::DType(*t);
    if (IsTBuiltin(attr)) return Value::Builtin(absl::StrCat("T.", attr));
    if (attr == "parallel") return Value::Builtin("T.Parallel"); // TileLang's alias
    if (std::optional<std::string_view> rewrite = MissingTileLangName(attr)) {
      return Error(loc, absl::StrCat("'T.", attr, "' is not supported by Kiln yet",
                                     rewrite->empty() ? "" : "; ", std::string(*rewrite)));
    }
    if (IsMissingTileLangDType(attr)) {
      return Error(loc, absl::StrCat("dtype 'T.", attr, "' is not supported by Kiln yet"));
    }
    return Error(loc, absl::StrCat("'T.", attr, "' is not supported (unknown TileLang name)"));
  }
  if (module == "tilelang") {
    if (attr == "jit" || attr == "autotune") return Value::Builtin(absl::StrCat("tilelang.", attr));
    if (attr == "language") return Value::Module("T");
    if (attr == "layout" || attr == "autotuner" || attr == "transform") {
      return Value::Module(path);
    }
    if (attr == "PassConfigKey") return Value::Builtin("tilelang.PassConfigKey");
    if (attr == "math") return Value::Module("tilelang.math");
    if (attr == "DataType") return Value::Module("tvm.DataType"); // tilelang re-exports it
    // tilelang re-exports its host helpers at the top level.
    if (IsHostMathHelper(attr)) return Value::Builtin(absl::StrCat("tilelang.math.", attr));
    return Error(loc, absl::StrCat("'tilelang.", attr, "' is not supported"));
  }
  if (module == "tilelang.math") {
    if (IsHostMathHelper(attr)) return Value::Builtin(path);
    return Error(loc, absl::StrCat("'", path, "' is not supported by Kiln yet"));
  }
  if (module == "tilelang.layout") {
    if (LayoutKind(attr)) return Value::Builtin(absl::StrCat("T.", attr));
    return Error(loc, absl::StrCat("layout function '", attr, "' is not supported"));
  }
  if (module == "tilelang.transform" && attr == "PassConfigKey") {
    return Value::Builtin("tilelang.PassConfigKey");
  }
  if (module == "tilelang.autotuner" && attr == "autotune") {
    return Value::Builtin("tilelang.autotune");
  }
  // The warp policy's home module (`from tilelang.tileop.base import
  // GemmWarpPolicy`): the same enum as T.GemmWarpPolicy.
  if ((module == "tilelang.tileop.base" || module == "tilelang.tileop") &&
      attr == "GemmWarpPolicy") {
    return Value::Builtin("T.GemmWarpPolicy");
  }
  if (module == "torch") {
    if (std::optional<ir::DType> t = TorchDType(attr)) return Value::DType(*t);
  }
  if (module == "tilelang.tools.cuda.iket" && IsIketCall(attr)) return Value::Builtin(path);
  if (module == "math") {
    if (attr == "pi") return Value::Float(M_PI);
    if (attr == "e") return Value::Float(M_E);
    if (attr == "inf") return Value::Float(INFINITY);
    if (attr == "sqrt" || attr == "log" || attr == "log2" || attr == "exp" || attr == "ceil" ||
        attr == "floor" || attr == "isqrt" || attr == "exp2" || attr == "gcd") {
      return Value::Builtin(absl::StrCat("math.", attr));
    }
  }
  return Error(loc, absl::StrCat("'", path, "' is not supported in kernel code"));
}

absl::StatusOr<Value> Evaluator::EvalAttribute(const PyExpr& e) {
  ASSIGN_OR_RETURN(Value obj, Eval(e.elts[0]));
  const std::string& attr = e.str;
  switch (obj.kind) {
  case ValueKind::kModule: {
    // Module attributes (T.copy, T.float16, ...) resolve the same way every
    // time a node is evaluated; cache them per node and module.
    auto it = module_attr_cache_.find(&e);
    if (it != module_attr_cache_.end() && it->second.first == obj.s) return it->second.second;
    ASSIGN_OR_RETURN(Value v, ResolveModuleAttr(absl::StrCat(obj.s, ".", attr), e.loc));
    module_attr_cache_[&e] = {obj.s, v};
    return v;
  }
  case ValueKind::kBuffer: {
    const ir::Buffer& b = buffers_[obj.i].buffer;
    if (attr == "dtype") return Value::DType(b.dtype);
    if (attr == "shape") {
      ValueList dims;
      for (const ir::Expr& d : b.shape) {
        dims.push_back(d.kind == ir::ExprKind::kInt ? Value::Int(d.ival) : Value::Expr(d));
      }
      return Value::Tuple(std::move(dims));
    }
    if (attr == "ndim") return Value::Int(static_cast<int64_t>(b.shape.size()));
    if (attr == "data") return StorageOf(static_cast<int>(obj.i)); // for T.Tensor(..., x.data)
    return Error(e.loc, absl::StrCat("buffer has no attribute '", attr, "'"));
  }
  case ValueKind::kTensorType:
    if (attr == "dtype") return Value::DType(obj.dtype);
    if (attr == "shape") return Value::Tuple(obj.elts());
    break;
  case ValueKind::kAccess:
  case ValueKind::kExpr: {
    ASSIGN_OR_RETURN(Value x, Materialize(obj, e.loc));
    if (attr == "dtype") return Value::DType(x.expr->dtype);
    if (attr == "astype") return BoundMethod("astype", x);
    break;
  }
  case ValueKind::kDType:
    if (attr == "bits") return Value::Int(ir::DTypeBits(obj.dtype));
    if (attr == "bytes") return Value::Int((ir::DTypeBits(obj.dtype) + 7) / 8);
    break;
  case ValueKind::kDict:
    if (attr == "items" || attr == "keys" || attr == "values" || attr == "get") {
      return BoundMethod(attr, obj);
    }
    break;
  case ValueKind::kList:
    if (attr == "append" || attr == "extend") return BoundMethod(attr, obj);
    break;
  case ValueKind::kString:
    if (attr == "join" || attr == "startswith" || attr == "endswith" || attr == "isdigit" ||
        attr == "strip" || attr == "lstrip" || attr == "rstrip" || attr == "isalpha") {
      return BoundMethod(attr, obj);
    }
    break;
  case ValueKind::kInt:
  case ValueKind::kBool:
    if (attr == "bit_length") return BoundMethod(attr, obj);
    break;
  case ValueKind::kBuiltin:
    if (obj.s == "T.GemmWarpPolicy") {
      Value p;
      p.kind = ValueKind::kPolicy;
      if (attr == "Square") {
        p.i = static_cast<int>(ir::GemmPolicy::kSquare);
      } else if (attr == "FullRow") {
        p.i = static_cast<int>(ir::GemmPolicy::kFullRow);
      } else if (attr == "FullCol") {
        p.i = static_cast<int>(ir::GemmPolicy::kFullCol);
      } else {
        return Error(e.loc, absl::StrCat("unknown GemmWarpPolicy '", attr,
                                         "' (expected Square, FullRow or FullCol)"));
      }
      return p;
    }
    if (obj.s == "torch.cuda._CudaDeviceProperties") return DevicePropertyAttr(attr, e.loc);
    if (obj.s == "tilelang.PassConfigKey") {
      if (std::optional<std::string> v = PassConfigKeyValue(attr)) return Value::Str(*v);
      return Error(e.loc, absl::StrCat("unknown PassConfigKey '", attr, "'"));
    }
    break;
  default:
    break;
  }
  return Error(e.loc, absl::StrCat("'", TypeName(obj), "' has no attribute '", attr, "'"));
}

absl::StatusOr<Value> Evaluator::EvalSubscript(const PyExpr& e) {
  ASSIGN_OR_RETURN(Value obj, Eval(e.elts[0]));
  const PyExpr& index = e.elts[1];
  if (obj.kind == ValueKind::kBuffer) {
    const ir::Buffer& b = buffers_[obj.i].buffer;
    std::vector<const PyExpr*> parts;
    if (index.kind == PyExprKind::kTuple) {
      for (const PyExpr& x : index.elts) parts.push_back(&x);
    } else {
      parts.push_back(&index);
    }
    if (parts.size() != b.shape.size()) {
      return Error(e.loc,
                   absl::StrCat("buffer '", b.name, "' has ", b.shape.size(), " dimension",
                                b.shape.size() == 1 ? "" : "s", " but ", parts.size(),
                                parts.size() == 1 ? " index was" : " indices were", " given"));
    }
    ValueList items;
    for (size_t d = 0; d < parts.size(); ++d) {
      const PyExpr& p = *parts[d];
      if (p.kind == PyExprKind::kEllipsis) return Error(p.loc, "'...' indices are not supported");
      ASSIGN_OR_RETURN(Value v, EvalScalar(p));
      if (v.kind == ValueKind::kSlice) {
        items.push_back(std::move(v));
        continue;
      }
      if (v.kind == ValueKind::kBool || (v.is_expr() && !ir::IsInteger(v.expr->dtype))) {
        return Error(p.loc, absl::StrCat("buffer index must be an integer, got ", TypeName(v)));
      }
      if (v.kind == ValueKind::kInt) {
        const ir::Expr& extent = b.shape[d];
        if (extent.kind == ir::ExprKind::kInt) {
          int64_t k = v.i < 0 ? v.i + extent.ival : v.i;
          if (k < 0 || k >= extent.ival) {
            return Error(p.loc, absl::StrCat("index ", v.i, " is out of range for dimension ", d,
                                             " of '", b.name, "' (extent ", extent.ival, ")"));
          }
          v = Value::Int(k);
        } else if (v.i < 0) {
          return Error(p.loc, "negative index into a dimension of unknown extent");
        }
      } else if (!v.is_expr()) {
        return Error(p.loc, absl::StrCat("buffer index must be an integer, got ", TypeName(v)));
      }
      items.push_back(std::move(v));
    }
    Value a;
    a.kind = ValueKind::kAccess;
    a.i = obj.i;
    a.items = NewValueList(std::move(items));
    return a;
  }
  if (obj.kind == ValueKind::kBuiltin && (obj.s == "T.Tensor" || obj.s == "T.Buffer")) {
    // T.Tensor[(M, N), dtype]
    ASSIGN_OR_RETURN(Value idx, Eval(index));
    if (idx.kind != ValueKind::kTuple || idx.elts().size() != 2) {
      return Error(index.loc, absl::StrCat(obj.s, "[shape, dtype] expects two items"));
    }
    return MakeTensorType(idx.elts()[0], idx.elts()[1], e.loc);
  }
  if (obj.kind == ValueKind::kAccess || obj.kind == ValueKind::kExpr) {
    return Error(e.loc, absl::StrCat("a ", TypeName(obj), " cannot be indexed"));
  }
  ASSIGN_OR_RETURN(Value idx, EvalScalar(index));
  return IndexSequence(obj, idx, e.loc);
}

absl::StatusOr<Value> Evaluator::IndexSequence(const Value& seq, const Value& index, Loc loc) {
  if (seq.kind == ValueKind::kDict) {
    RETURN_IF_ERROR(ChargeScan(loc, seq.items->size()));
    for (size_t k = 0; k < seq.items->size(); ++k) {
      bool known = true;
      ASSIGN_OR_RETURN(bool eq, Equals((*seq.items)[k], index, &known, loc));
      if (eq && known) return (*seq.values)[k];
    }
    return Error(loc, absl::StrCat("key ", Describe(index), " not found in dict"));
  }
  int64_t n = 0;
  if (seq.is_sequence()) {
    n = static_cast<int64_t>(seq.elts().size());
  } else if (seq.kind == ValueKind::kString) {
    n = static_cast<int64_t>(seq.s.size());
  } else if (seq.kind == ValueKind::kRange) {
    n = RangeLength(seq.elts()[0].i, seq.elts()[1].i, seq.elts()[2].i);
  } else {
    return Error(loc, absl::StrCat("'", TypeName(seq), "' object is not subscriptable"));
  }
  auto element = [&](int64_t k) -> Value {
    if (seq.is_sequence()) return seq.elts()[k];
    if (seq.kind == ValueKind::kString) return Value::Str(seq.s.substr(k, 1));
    return Value::Int(seq.elts()[0].i + k * seq.elts()[2].i);
  };
  if (index.kind == ValueKind::kSlice) {
    int64_t v[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int k = 0; k < 3; ++k) {
      const Value& p = index.elts()[k];
      if (p.is_none()) continue;
      if (p.kind != ValueKind::kInt) return Error(loc, "slice indices must be integers");
      v[k] = p.i;
      given[k] = true;
    }
    int64_t step = v[2];
    if (step == 0) return Error(loc, "slice step cannot be zero");
    auto clamp = [&](int64_t x, bool is_given, bool is_start) -> int64_t {
      if (!is_given) return step > 0 ? (is_start ? 0 : n) : (is_start ? n - 1 : -1);
      if (x < 0) x += n;
      if (step > 0) return std::clamp<int64_t>(x, 0, n);
      return std::clamp<int64_t>(x, -1, n - 1);
    };
    int64_t start = clamp(v[0], given[0], true), stop = clamp(v[1], given[1], false);
    RETURN_IF_ERROR(ChargeItems(loc, static_cast<size_t>(RangeLength(start, stop, step))));
    ValueList out;
    for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) out.push_back(element(k));
    if (seq.kind == ValueKind::kString) {
      std::string s;
      for (const Value& c : out) s += c.s;
      return Value::Str(std::move(s));
    }
    return seq.kind == ValueKind::kList ? Value::List(std::move(out))
                                        : Value::Tuple(std::move(out));
  }
  if (index.kind != ValueKind::kInt && index.kind != ValueKind::kBool) {
    return Error(
        loc, absl::StrCat("sequence index must be a compile-time integer, got ", TypeName(index)));
  }
  int64_t k = index.i < 0 ? index.i + n : index.i;
  if (k < 0 || k >= n) return Error(loc, absl::StrCat("index ", index.i, " is out of range"));
  return element(k);
}

absl::StatusOr<std::vector<Value>> Evaluator::Iterate(const Value& v, Loc loc) {
  // Iterating copies the items: charged per item (and each iteration that
  // runs code is a step of its own).
  switch (v.kind) {
  case ValueKind::kTuple:
  case ValueKind::kList:
  case ValueKind::kDict:
    RETURN_IF_ERROR(ChargeItems(loc, v.elts().size()));
    return v.elts();
  case ValueKind::kString:
  case ValueKind::kDType: {
    // A TileLang dtype is a str too (its name): `for c in dtype` is common.
    std::string text = v.kind == ValueKind::kDType ? std::string(ir::DTypeName(v.dtype)) : v.s;
    RETURN_IF_ERROR(ChargeItems(loc, text.size(), text.size()));
    std::vector<Value> out;
    for (char c : text) out.push_back(Value::Str(std::string(1, c)));
    return out;
  }
  case ValueKind::kRange: {
    int64_t start = v.elts()[0].i, stop = v.elts()[1].i, step = v.elts()[2].i;
    int64_t n = RangeLength(start, stop, step);
    if (static_cast<uint64_t>(n) > kMaxCompileTimeItems) {
      return Error(loc, "range too long for compile-time iteration");
    }
    RETURN_IF_ERROR(ChargeItems(loc, static_cast<size_t>(n)));
    std::vector<Value> out;
    out.reserve(n);
    for (int64_t k = 0; k < n; ++k) out.push_back(Value::Int(start + k * step));
    return out;
  }
  default:
    return Error(loc, absl::StrCat("'", TypeName(v), "' object is not iterable"));
  }
}

// ---------------------------------------------------------------------------
// Calls.

absl::StatusOr<std::vector<Arg>> Evaluator::EvalArgs(const PyExpr& call) {
  std::vector<Arg> out;
  out.reserve(call.args.size() + call.keywords.size());
  for (const PyExpr& a : call.args) {
    if (a.kind == PyExprKind::kStarred) {
      ASSIGN_OR_RETURN(Value seq, Eval(a.elts[0]));
      ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(seq, a.loc));
      for (Value& v : items) out.push_back(Arg{std::move(v), a.loc, "", a.loc});
      continue;
    }
    ASSIGN_OR_RETURN(Value v, Eval(a));
    out.push_back(Arg{std::move(v), a.loc, "", a.loc});
  }
  for (const Keyword& kw : call.keywords) {
    const PyExpr& value = kw.value[0];
    ASSIGN_OR_RETURN(Value v, Eval(value));
    if (kw.name.empty()) {
      if (v.kind != ValueKind::kDict) return Error(value.loc, "'**' argument must be a dict");
      for (size_t k = 0; k < v.items->size(); ++k) {
        const Value& key = (*v.items)[k];
        if (key.kind != ValueKind::kString || !IsIdentifier(key.s)) {
          return Error(value.loc, "keywords must be identifier strings");
        }
        out.push_back(Arg{(*v.values)[k], value.loc, key.s, value.loc});
      }
      continue;
    }
    out.push_back(Arg{std::move(v), value.loc, kw.name, kw.loc});
  }
  return out;
}

absl::StatusOr<Value> Evaluator::EvalCall(const PyExpr& e) {
  std::string hint = std::exchange(name_hint_, "");
  ASSIGN_OR_RETURN(Value callee, Eval(e.elts[0]));
  if (callee.kind == ValueKind::kBuiltin && callee.s == "T.print") {
    return Error(e.loc, "T.print() (printing from the device) is not supported");
  }
  ASSIGN_OR_RETURN(std::vector<Arg> args, EvalArgs(e));
  call_hint_ = std::move(hint);
  absl::StatusOr<Value> r = CallValue(callee, std::move(args), e);
  call_hint_.clear();
  return r;
}

absl::Status Evaluator::CheckBound(const Value& v, Loc loc) const {
  ValueList direct = v.is_sequence() ? v.elts() : ValueList{v};
  for (const Value& x : direct) {
    if (x.is_none() && !x.s.empty()) {
      return Error(loc, absl::StrCat("parameter '", x.s, "' has no binding (its default is None)"));
    }
  }
  return absl::OkStatus();
}

absl::Status Evaluator::BlameUnbound(absl::Status status, const std::vector<Arg>& args) const {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  for (const Arg& a : args) {
    if (absl::Status st = CheckBound(a.value, a.loc); !st.ok()) return st;
  }
  return status;
}

absl::StatusOr<Value> Evaluator::CallValue(const Value& callee, std::vector<Arg> args,
                                           const PyExpr& call) {
  switch (callee.kind) {
  case ValueKind::kBuiltin: {
    // Builtins run no user code: an error of one called with an unbound
    // parameter's None is about that parameter.
    absl::StatusOr<Value> r;
    if (IsDeviceQuery(callee.s)) {
      r = CallDeviceQuery(callee.s, args, call.loc);
    } else if (callee.s.rfind("tilelang.math.", 0) == 0) {
      r = CallPythonBuiltin(callee.s, args, call.loc);
    } else if (callee.s.rfind("T.", 0) == 0 || callee.s.rfind("tilelang.", 0) == 0) {
      r = CallTBuiltin(callee.s, args, call);
    } else if (callee.s.rfind("method:", 0) == 0) {
      r = CallMethod(callee, args, call.loc);
    } else {
      r = CallPythonBuiltin(callee.s, args, call.loc);
    }
    if (!r.ok()) return BlameUnbound(r.status(), args);
    return r;
  }
  case ValueKind::kFunction:
    return CallUserFunction(callee, args, call.loc);
  case ValueKind::kDType: {
    // T.float32(x): a value of that dtype.
    ASSIGN_OR_RETURN(auto m,
                     MatchArgs(options_.file_name, call.loc,
                               std::string(ir::DTypeName(callee.dtype)), args, {"value"}, 1));
    ASSIGN_OR_RETURN(Value x, Materialize(*m[0], call.loc));
    ASSIGN_OR_RETURN(ir::Expr ex, ToExprOf(Ctx(call.loc), x, callee.dtype));
    return Value::Expr(std::move(ex));
  }
  case ValueKind::kPrimFunc:
    return Error(call.loc, "calling a @T.prim_func is not supported");
  case ValueKind::kModule:
    if (callee.s == "tvm.tirx.const" || callee.s == "tvm.tir.const") {
      // const(value, dtype): the number as a constant of that dtype (TVM's
      // default: int32 for an int, float32 for a float, bool for a bool).
      ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, call.loc, "tvm.tirx.const", args,
                                         {"value", "dtype", "span"}, 1));
      ASSIGN_OR_RETURN(Value x, Materialize(*m[0], call.loc));
      if (!x.is_number()) {
        return Error(call.loc, absl::StrCat("tvm.tirx.const expects a number, got ", TypeName(x)));
      }
      ir::DType t = x.kind == ValueKind::kFloat  ? ir::DType::kFloat32
                    : x.kind == ValueKind::kBool ? ir::DType::kBool
                                                 : ir::DType::kInt32;
      if (m[1].has_value() && !m[1]->is_none()) {
        ASSIGN_OR_RETURN(t, ToDType(*m[1], ArgLoc(args, {"value", "dtype", "span"}, 1, call.loc)));
      }
      ASSIGN_OR_RETURN(ir::Expr ex, ToExprOf(Ctx(call.loc), x, t));
      return Value::Expr(std::move(ex));
    }
    if (callee.s == "tvm.tirx.reinterpret" || callee.s == "tvm.tir.reinterpret") {
      // TVM's order: reinterpret(dtype, value).
      ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, call.loc, "tvm.tirx.reinterpret", args,
                                         {"dtype", "value", "span"}, 2));
      return Reinterpret(*m[1], *m[0], call.loc);
    }
    if (callee.s == "tilelang.language.fp8.determine_fp8_type") {
      // determine_fp8_type(fp8_format="e4m3"): the fp8 dtype of that format
      // on the target; CUDA's (Kiln's targets) are float8_e4m3fn and float8_e5m2.
      ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, call.loc, "determine_fp8_type", args,
                                         {"fp8_format"}, 0));
      std::string format = "e4m3";
      if (m[0].has_value() && !m[0]->is_none()) {
        ASSIGN_OR_RETURN(Value f, Materialize(*m[0], call.loc));
        if (f.kind != ValueKind::kString || (f.s != "e4m3" && f.s != "e5m2")) {
          return Error(ArgLoc(args, {"fp8_format"}, 0, call.loc),
                       absl::StrCat("determine_fp8_type: fp8_format must be 'e4m3' or 'e5m2', got ",
                                    f.kind == ValueKind::kString ? absl::StrCat("'", f.s, "'")
                                                                 : TypeName(f)));
        }
        format = f.s;
      }
      return Value::DType(format == "e5m2" ? ir::DType::kFloat8E5M2 : ir::DType::kFloat8E4M3);
    }
    if (callee.s == "tvm.DataType" || callee.s == "tvm.runtime.DataType") {
      // DataType(dtype).bits and friends: a dtype is its own DataType.
      ASSIGN_OR_RETURN(auto m,
                       MatchArgs(options_.file_name, call.loc, "DataType", args, {"dtype"}, 1));
      ASSIGN_OR_RETURN(ir::DType t, ToDType(*m[0], call.loc));
      return Value::DType(t);
    }
    return Error(call.loc, absl::StrCat("calling '", callee.s, "' is not supported"));
  default:
    return Error(call.loc, absl::StrCat("'", TypeName(callee), "' object is not callable"));
  }
}

absl::StatusOr<Value> Evaluator::CallUserFunction(const Value& fn, const std::vector<Arg>& args,
                                                  Loc loc) {
  const PyStmt& def = *fn.func;
  // A call costs more than a statement (argument binding, a frame that
  // lives as long as the evaluation, for closures): charged as several.
  RETURN_IF_ERROR(budget_.Charge(loc, kCallSteps, kFrameBytes));
  RETURN_IF_ERROR(EnterNesting(loc));
  struct Leave {
    Evaluator* ev;
    ~Leave() { ev->LeaveNesting(); }
  } leave{this};
  frames_.push_back(std::make_unique<Frame>());
  int frame = static_cast<int>(frames_.size()) - 1;
  frames_[frame]->parent = static_cast<int>(fn.i);
  auto& vars = frames_[frame]->vars;
  // Bind arguments to parameters.
  size_t pos = 0;
  std::vector<const Arg*> positional;
  for (const Arg& a : args) {
    if (a.name.empty()) positional.push_back(&a);
  }
  Value varargs = Value::Tuple({});
  Value kwargs = Value::Dict();
  const Param* vararg_param = nullptr;
  const Param* kwarg_param = nullptr;
  for (const Param& p : def.params) {
    if (p.kind == Param::kVarArgs) {
      vararg_param = &p;
      while (pos < positional.size()) varargs.items->push_back(positional[pos++]->value);
      continue;
    }
    if (p.kind == Param::kKwArgs) {
      kwarg_param = &p;
      continue;
    }
    if (p.kind != Param::kKwOnly && pos < positional.size()) {
      vars[p.name] = positional[pos++]->value;
    }
  }
  if (pos < positional.size()) {
    return Error(positional[pos]->loc,
                 absl::StrCat(def.str, "() takes ", pos, " positional arguments but ",
                              positional.size(), " were given"));
  }
  for (const Arg& a : args) {
    if (a.name.empty()) continue;
    const Param* match = nullptr;
    for (const Param& p : def.params) {
      if (p.name == a.name && p.kind != Param::kVarArgs && p.kind != Param::kKwArgs &&
          p.kind != Param::kPosOnly) {
        match = &p;
      }
    }
    if (!match) {
      if (kwarg_param) {
        kwargs.items->push_back(Value::Str(a.name));
        kwargs.values->push_back(a.value);
        continue;
      }
      return Error(a.name_loc,
                   absl::StrCat(def.str, "() got an unexpected keyword argument '", a.name, "'"));
    }
    if (vars.contains(a.name)) {
      return Error(a.name_loc,
                   absl::StrCat(def.str, "() got multiple values for argument '", a.name, "'"));
    }
    vars[a.name] = a.value;
  }
  if (vararg_param) vars[vararg_param->name] = varargs;
  if (kwarg_param) vars[kwarg_param->name] = kwargs;
  for (const Param& p : def.params) {
    if (vars.contains(p.name)) continue;
    if (p.default_value.empty()) {
      return Error(loc, absl::StrCat(def.str, "() missing required argument '", p.name, "'"));
    }
    int saved = std::exchange(frame_, static_cast<int>(fn.i));
    absl::StatusOr<Value> v = Eval(p.default_value[0]);
    frame_ = saved;
    RETURN_IF_ERROR(v.status());
    frames_[frame]->vars[p.name] = *std::move(v);
  }
  // Run the body; inside a kernel this inlines the function (T.macro).
  int saved_frame = std::exchange(frame_, frame);
  int saved_base = std::exchange(call_scope_base_, open_scopes_);
  Value saved_return = std::exchange(return_value_, Value::None());
  if (in_kernel_) ++user_calls_in_kernel_;
  absl::StatusOr<Flow> flow = ExecBlock(def.body);
  if (in_kernel_) --user_calls_in_kernel_;
  Value result = std::exchange(return_value_, std::move(saved_return));
  call_scope_base_ = saved_base;
  frame_ = saved_frame;
  RETURN_IF_ERROR(flow.status());
  return *flow == Flow::kReturn ? result : Value::None();
}

} // namespace kiln::frontend
