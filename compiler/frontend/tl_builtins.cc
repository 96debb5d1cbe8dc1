// The T.* namespace: scalar functions, dtypes, tensor types, symbols,
// outputs and allocations. Tile ops are in tile_ops.cc, T.Kernel and loops in
// kernel_lowering.cc.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler/frontend/args.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/frontend/names.h"
#include "compiler/frontend/view_dims.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/int_range.h"
#include "compiler/ir/limits.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/reducer.h"
#include "util/status_macros.h"

namespace kiln::frontend {

bool IsHopperOp(std::string_view fn); // hopper_ops.cc

// What iket.range(...) returns: a context manager that does nothing.
constexpr char kIketRange[] = "a profiling range (iket.range), a no-op in Kiln";

namespace {

bool IsLoopBuiltin(std::string_view fn) {
  return fn == "Parallel" || fn == "Pipelined" || fn == "serial" || fn == "Serial" ||
         fn == "unroll" || fn == "Unroll" || fn == "vectorized" || fn == "Vectorized";
}

bool IsTileOp(std::string_view fn) {
  return fn == "copy" || fn == "gemm" || fn == "fill" || fn == "clear" || fn == "reduce_max" ||
         fn == "reduce_min" || fn == "reduce_sum" || fn == "reduce_abssum" ||
         fn == "reduce_absmax" || fn == "atomic_add" || fn == "atomic_max" || fn == "atomic_min" ||
         fn == "atomic_addx2" || fn == "atomic_addx4" || fn == "use_swizzle" ||
         fn == "annotate_layout" || fn == "wgmma_gemm" || fn == "wait_wgmma";
}

struct MathFn {
  std::string_view name;
  ir::Intrinsic fn;
  int arity;
  bool float_only; // integer arguments are converted to float32
};

constexpr MathFn kMath[] = {
    {"exp", ir::Intrinsic::kExp, 1, true},      {"exp2", ir::Intrinsic::kExp2, 1, true},
    {"log", ir::Intrinsic::kLog, 1, true},      {"log2", ir::Intrinsic::kLog2, 1, true},
    {"sqrt", ir::Intrinsic::kSqrt, 1, true},    {"rsqrt", ir::Intrinsic::kRsqrt, 1, true},
    {"abs", ir::Intrinsic::kAbs, 1, false},     {"pow", ir::Intrinsic::kPow, 2, true},
    {"tanh", ir::Intrinsic::kTanh, 1, true},    {"floor", ir::Intrinsic::kFloor, 1, false},
    {"ceil", ir::Intrinsic::kCeil, 1, false},   {"sin", ir::Intrinsic::kSin, 1, true},
    {"cos", ir::Intrinsic::kCos, 1, true},      {"round", ir::Intrinsic::kRound, 1, false},
    {"trunc", ir::Intrinsic::kTrunc, 1, false}, {"sigmoid", ir::Intrinsic::kSigmoid, 1, true},
};

// Largest finite value of a float dtype.
double MaxFinite(ir::DType t) {
  switch (t) {
  case ir::DType::kFloat16:
    return 65504.0;
  case ir::DType::kBFloat16:
    return 3.3895313892515355e38;
  case ir::DType::kFloat32:
    return std::numeric_limits<float>::max();
  case ir::DType::kFloat8E4M3:
    return 448.0;
  case ir::DType::kFloat8E5M2:
    return 57344.0;
  default:
    return std::numeric_limits<double>::max();
  }
}

// A buffer's size in bytes must be countable: codegen and the launcher
// compute flat indices and allocation sizes in int64, where a product of
// dimensions that overflows would wrap. Symbolic dimensions are checked at
// launch.
absl::Status CheckShapeSize(std::string_view file, ir::Loc loc, const std::vector<ir::Expr>& shape,
                            ir::DType dtype) {
  std::optional<int64_t> bytes = std::max(1, ir::DTypeBits(dtype) / 8);
  std::string dims;
  for (const ir::Expr& d : shape) {
    if (d.kind != ir::ExprKind::kInt) continue;
    absl::StrAppend(&dims, dims.empty() ? "" : " x ", d.ival);
    if (bytes) bytes = ir::CheckedMul(*bytes, d.ival);
  }
  if (bytes) return absl::OkStatus();
  return ir::ErrorAt(file, loc,
                     absl::StrCat("buffer of ", dims, " ", std::string(ir::DTypeName(dtype)),
                                  " elements is larger than ", std::numeric_limits<int64_t>::max(),
                                  " bytes (sizes are computed in int64)"));
}

std::string ShapeText(const std::vector<ir::Expr>& shape) {
  std::string s = "[";
  for (size_t k = 0; k < shape.size(); ++k) {
    absl::StrAppend(&s, k ? ", " : "", ir::PrintExpr(shape[k]));
  }
  return s + "]";
}

} // namespace

absl::StatusOr<ir::DType> Evaluator::ToDType(const Value& v, Loc loc) {
  if (v.kind == ValueKind::kDType) return v.dtype;
  if (v.kind == ValueKind::kString) {
    if (std::optional<ir::DType> t = ParseDTypeAlias(v.s)) return *t;
    if (IsSafeText(v.s) && !v.s.empty()) {
      return Error(loc, absl::StrCat("unknown dtype '", v.s, "'"));
    }
    return Error(loc, "unknown dtype");
  }
  if (v.kind == ValueKind::kBuiltin && (v.s == "int" || v.s == "float" || v.s == "bool")) {
    // Python's own types name dtypes too (int -> int32, float -> float32).
    return v.s == "int" ? ir::DType::kInt32
                        : (v.s == "float" ? ir::DType::kFloat32 : ir::DType::kBool);
  }
  return Error(loc, absl::StrCat("expected a dtype, got ", TypeName(v)));
}

absl::StatusOr<std::vector<ir::Expr>> Evaluator::ToShape(const Value& v, Loc loc) {
  ValueList dims;
  if (v.is_sequence()) {
    dims = v.elts();
  } else {
    dims.push_back(v);
  }
  if (dims.empty()) return Error(loc, "shape must have at least one dimension");
  if (dims.size() > 8) return Error(loc, "shapes of more than 8 dimensions are not supported");
  std::vector<ir::Expr> out;
  for (const Value& raw : dims) {
    ASSIGN_OR_RETURN(Value d, Materialize(raw, loc));
    if (d.kind == ValueKind::kInt) {
      if (d.i <= 0) return Error(loc, absl::StrCat("shape dimension must be positive, got ", d.i));
      if (d.i > std::numeric_limits<int32_t>::max()) {
        out.push_back(ir::IntImm(d.i, ir::DType::kInt64, loc));
      } else {
        out.push_back(ir::IntImm(d.i, ir::DType::kInt32, loc));
      }
      continue;
    }
    if (d.is_expr() && ir::IsInteger(d.expr->dtype)) {
      out.push_back(*d.expr);
      continue;
    }
    if (d.is_none() && !d.s.empty()) {
      return Error(loc, absl::StrCat("parameter '", d.s, "' has no binding (its default is None)"));
    }
    return Error(loc, absl::StrCat("shape dimension must be an integer, got ", TypeName(d)));
  }
  return out;
}

absl::StatusOr<Value> Evaluator::MakeTensorType(const Value& shape, const Value& dtype, Loc loc) {
  ASSIGN_OR_RETURN(std::vector<ir::Expr> dims, ToShape(shape, loc));
  ASSIGN_OR_RETURN(ir::DType t, ToDType(dtype, loc));
  RETURN_IF_ERROR(CheckShapeSize(options_.file_name, loc, dims, t));
  Value v;
  v.kind = ValueKind::kTensorType;
  v.dtype = t;
  ValueList items;
  for (ir::Expr& d : dims) {
    items.push_back(d.kind == ir::ExprKind::kInt ? Value::Int(d.ival) : Value::Expr(std::move(d)));
  }
  v.items = NewValueList(std::move(items));
  return v;
}

absl::StatusOr<int> Evaluator::AddParamBuffer(const std::string& name, const Value& type, Loc loc,
                                              bool is_output) {
  BufferInfo info;
  info.is_param = true;
  info.buffer.name = UniqueName(name);
  info.user_name = UserNameFor(name, info.buffer.name);
  info.buffer.dtype = type.dtype;
  info.buffer.scope = ir::Scope::kGlobal;
  info.buffer.loc = loc;
  ASSIGN_OR_RETURN(info.buffer.shape, ToShape(Value::Tuple(type.elts()), loc));
  buffers_.push_back(std::move(info));
  return static_cast<int>(buffers_.size()) - 1;
}

absl::StatusOr<Value> Evaluator::AddScalarParam(const std::string& name, ir::DType dtype, Loc loc,
                                                ir::Param* out) {
  out->is_scalar = true;
  out->buffer.name = UniqueName(name);
  out->user_name = UserNameFor(name, out->buffer.name);
  out->buffer.dtype = dtype;
  out->buffer.scope = ir::Scope::kGlobal;
  out->buffer.loc = loc;
  return Value::Expr(ir::VarRef(out->buffer.name, dtype, loc));
}

absl::StatusOr<Value> Evaluator::DeclareSymbols(const std::string& fn, std::vector<Arg>& args,
                                                Loc loc) {
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, fn, args, {"name", "dtype"}, 1));
  if (m[0]->kind != ValueKind::kString) {
    return Error(ArgLoc(args, {"name", "dtype"}, 0, loc),
                 absl::StrCat(fn, "() expects a string of names such as \"M, N\""));
  }
  ir::DType dtype = ir::DType::kInt32;
  if (m[1].has_value()) {
    ASSIGN_OR_RETURN(dtype, ToDType(*m[1], ArgLoc(args, {"name", "dtype"}, 1, loc)));
    if (!ir::IsInteger(dtype)) return Error(loc, "shape symbols must have an integer dtype");
  }
  std::vector<std::string> names =
      absl::StrSplit(m[0]->s, absl::ByAnyChar(", \t"), absl::SkipEmpty());
  if (names.empty()) return Error(loc, absl::StrCat(fn, "() needs at least one name"));
  ValueList out;
  for (const std::string& n : names) {
    if (!IsIdentifier(n)) return Error(loc, absl::StrCat(fn, "(): invalid symbol name"));
    binding_names_valid_.push_back(n);
    const BindingValue* binding = nullptr;
    for (const auto& [bn, bv] : options_.bindings) {
      if (bn == n) binding = &bv;
    }
    if (IsDynamicParam(n)) {
      // Named dynamic: stays a symbol, and may not be bound as well.
      if (binding) {
        return Error(loc, absl::StrCat("shape symbol '", n,
                                       "' is both bound and named dynamic; give one of them"));
      }
      dynamic_used_.insert(n);
    } else if (binding) {
      bindings_used_.insert(n);
      if (binding->kind != BindingValue::Kind::kInt) {
        return Error(loc, absl::StrCat("binding for '", n, "' must be an integer"));
      }
      out.push_back(Value::Int(binding->ival));
      continue;
    }
    ir::Symbol sym;
    sym.name = UniqueName(n);
    sym.user_name = UserNameFor(n, sym.name);
    sym.dtype = dtype;
    sym.loc = loc;
    out.push_back(Value::Expr(ir::VarRef(sym.name, dtype, loc)));
    program_.symbols.push_back(std::move(sym));
  }
  if (out.size() == 1) return out[0];
  return Value::Tuple(std::move(out));
}

absl::StatusOr<Value> Evaluator::DeclareOutput(std::vector<Arg>& args, Loc loc) {
  if (in_kernel_) return Error(loc, "T.empty cannot be used inside T.Kernel");
  if (prim_func_lowered_ || kernel_seen_) {
    return Error(loc, "T.empty must come before the kernel of a @tilelang.jit function");
  }
  Value shape;
  Value dtype = Value::DType(ir::DType::kFloat32);
  ValueList positional;
  for (const Arg& a : args) {
    if (a.name.empty()) {
      positional.push_back(a.value);
    } else if (a.name == "dtype") {
      dtype = a.value;
    } else {
      return Error(a.name_loc,
                   absl::StrCat("empty() got an unexpected keyword argument '", a.name, "'"));
    }
  }
  if (positional.empty()) return Error(loc, "T.empty needs a shape");
  if (positional[0].is_sequence()) {
    shape = positional[0];
    if (positional.size() > 2) return Error(loc, "T.empty(shape, dtype) takes two arguments");
    if (positional.size() == 2) dtype = positional[1];
  } else {
    shape = Value::Tuple(positional);
  }
  ASSIGN_OR_RETURN(Value type, MakeTensorType(shape, dtype, loc));
  std::string hint = call_hint_.empty() ? "out" : call_hint_;
  ASSIGN_OR_RETURN(int id, AddParamBuffer(hint, type, loc, true));
  ir::Param p;
  p.buffer = buffers_[id].buffer;
  p.user_name = buffers_[id].user_name;
  p.is_output = true;
  jit_outputs_.push_back(std::move(p));
  return Value::Buffer(id);
}

// T.alloc_global: a workspace in global memory that the launcher allocates
// for one launch of the program's kernels (ir.h: Program::workspaces). It
// belongs to the function, not to one kernel: one kernel writes it and a
// later one reads it (split-KV partial results and their combine).
absl::StatusOr<Value> Evaluator::AllocateGlobal(const std::string& fn, std::vector<Arg>& args,
                                                Loc loc) {
  const std::string& file = options_.file_name;
  if (in_kernel_) {
    return Error(loc, "T.alloc_global inside T.Kernel is not supported; allocate the workspace "
                      "before the T.Kernel blocks that use it");
  }
  if (program_.workspaces.size() >= static_cast<size_t>(ir::kMaxWorkspaces)) {
    return Error(loc, absl::StrCat("a program has at most ", ir::kMaxWorkspaces,
                                   " global workspaces (T.alloc_global)"));
  }
  // T.alloc_buffer(shape, dtype="float32", scope="global").
  const bool buffer = fn == "alloc_buffer";
  ASSIGN_OR_RETURN(auto m,
                   MatchArgs(file, loc, fn, args, {"shape", "dtype", "scope"}, buffer ? 1 : 2, 3));
  if (m[2].has_value() && (m[2]->kind != ValueKind::kString || m[2]->s != "global")) {
    return Error(ArgLoc(args, {"shape", "dtype", "scope"}, 2, loc),
                 buffer ? "T.alloc_buffer outside T.Kernel allocates global memory: its scope "
                          "must be \"global\" (allocate other scopes inside the kernel)"
                        : "T.alloc_global's scope must be \"global\"");
  }
  ir::Buffer b;
  ASSIGN_OR_RETURN(b.dtype, ToDType(m[1].has_value() ? *m[1] : Value::Str("float32"), loc));
  ASSIGN_OR_RETURN(b.shape, ToShape(*m[0], loc));
  RETURN_IF_ERROR(CheckShapeSize(file, loc, b.shape, b.dtype));
  b.scope = ir::Scope::kGlobal;
  b.name = UniqueName(call_hint_.empty() ? "workspace" : call_hint_);
  call_hint_.clear();
  b.loc = loc;
  program_.workspaces.push_back(b);
  buffers_.push_back(BufferInfo{std::move(b), false});
  return Value::Buffer(static_cast<int>(buffers_.size()) - 1);
}

absl::StatusOr<Value> Evaluator::Allocate(const std::string& name, std::vector<Arg>& args,
                                          Loc loc) {
  std::string fn = name.substr(2);
  // T.alloc_buffer outside a kernel is global memory too (its default scope).
  if (fn == "alloc_global" || (fn == "alloc_buffer" && !in_kernel_)) {
    return AllocateGlobal(fn, args, loc);
  }
  RETURN_IF_ERROR(RequireKernel(loc, absl::StrCat("T.", fn)));
  const std::string& file = options_.file_name;
  Value shape, dtype, scope, init;
  bool has_init = false;
  std::optional<ir::ReduceKind> reducer; // T.alloc_reducer's op
  if (fn == "alloc_var") {
    // alloc_var(dtype, [init | scope | init, scope], scope=, init=)
    ASSIGN_OR_RETURN(auto m,
                     MatchArgs(file, loc, fn, args, {"dtype", "a1", "a2", "scope", "init"}, 1, 3));
    dtype = *m[0];
    scope = Value::Str("local.var");
    if (m[1].has_value() && m[2].has_value()) {
      init = *m[1];
      scope = *m[2];
      has_init = true;
    } else if (m[1].has_value()) {
      if (m[1]->kind == ValueKind::kString) {
        scope = *m[1];
      } else {
        init = *m[1];
        has_init = true;
      }
    }
    if (m[3].has_value()) scope = *m[3];
    if (m[4].has_value() && !m[4]->is_none()) {
      if (has_init) return Error(loc, "alloc_var() initializer given twice");
      init = *m[4];
      has_init = true;
    }
    shape = Value::Int(1);
  } else if (fn == "alloc_reducer") {
    // alloc_reducer(shape, dtype, op="sum", replication=None): a fragment
    // each thread holds whole and accumulates into (compiler/ir/reducer.h).
    const std::vector<std::string_view> names = {"shape", "dtype", "op", "replication"};
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, fn, args, names, 2));
    shape = *m[0];
    dtype = *m[1];
    scope = Value::Str("local.fragment");
    reducer = ir::ReduceKind::kSum;
    if (m[2].has_value() && !m[2]->is_none()) {
      const Value& op = *m[2];
      const Loc oloc = ArgLoc(args, names, 2, loc);
      if (op.kind != ValueKind::kString) {
        return Error(oloc, absl::StrCat("T.alloc_reducer op must be a string, got ", TypeName(op)));
      }
      if (op.s == "max") {
        reducer = ir::ReduceKind::kMax;
      } else if (op.s == "min") {
        reducer = ir::ReduceKind::kMin;
      } else if (op.s == "bitand" || op.s == "bitor" || op.s == "bitxor") {
        return Error(oloc, absl::StrCat("T.alloc_reducer op \"", op.s,
                                        "\" is not supported by Kiln yet; use \"sum\", \"max\" "
                                        "or \"min\""));
      } else if (op.s != "sum") {
        return Error(oloc, IsSafeText(op.s)
                               ? absl::StrCat("T.alloc_reducer op must be \"sum\", \"max\" or "
                                              "\"min\", got \"",
                                              op.s, "\"")
                               : std::string("T.alloc_reducer op must be \"sum\", \"max\" or "
                                             "\"min\""));
      }
    }
    if (m[3].has_value() && !m[3]->is_none()) {
      const Value& rep = *m[3];
      const Loc rloc = ArgLoc(args, names, 3, loc);
      if (rep.kind == ValueKind::kString && rep.s == "none") {
        return Error(rloc, "T.alloc_reducer replication=\"none\" is not supported by Kiln yet; "
                           "use replication=\"all\" (every thread holds every element)");
      }
      if (rep.kind != ValueKind::kString || rep.s != "all") {
        return Error(rloc, "T.alloc_reducer replication must be \"all\" or \"none\"");
      }
    }
  } else {
    std::string default_scope = fn == "alloc_shared"     ? "shared.dyn"
                                : fn == "alloc_fragment" ? "local.fragment"
                                : fn == "alloc_local"    ? "local"
                                                         : "global";
    size_t positional = fn == "alloc_buffer" ? 2 : 3;
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, fn, args, {"shape", "dtype", "scope"},
                                       fn == "alloc_buffer" ? 1 : 2, positional));
    shape = *m[0];
    dtype = m[1].has_value() ? *m[1] : Value::Str("float32");
    scope = m[2].has_value() ? *m[2] : Value::Str(default_scope);
  }
  ir::Buffer b;
  ASSIGN_OR_RETURN(b.dtype, ToDType(dtype, loc));
  ASSIGN_OR_RETURN(b.shape, ToShape(shape, loc));
  RETURN_IF_ERROR(CheckShapeSize(file, loc, b.shape, b.dtype));
  if (scope.kind != ValueKind::kString) return Error(loc, "scope must be a string");
  const std::string& sc = scope.s;
  if (sc == "shared") {
    b.scope = ir::Scope::kShared;
  } else if (sc == "shared.dyn") {
    b.scope = ir::Scope::kSharedDyn;
  } else if (sc == "local.fragment" || sc == "fragment") {
    b.scope = ir::Scope::kFragment;
  } else if (sc == "local") {
    b.scope = ir::Scope::kLocal;
  } else if (sc == "local.var") {
    b.scope = ir::Scope::kVar;
  } else if (sc == "global") {
    return Error(loc, "global allocations inside T.Kernel are not supported");
  } else {
    return Error(loc, IsSafeText(sc) ? absl::StrCat("unknown scope '", sc, "'")
                                     : std::string("unknown scope"));
  }
  if (b.scope == ir::Scope::kVar) {
    if (b.shape.size() != 1 || b.shape[0].kind != ir::ExprKind::kInt || b.shape[0].ival != 1) {
      return Error(loc, "a local.var buffer must have shape [1]");
    }
    if (has_init) {
      ASSIGN_OR_RETURN(Value iv, Materialize(init, loc));
      ASSIGN_OR_RETURN(b.init, ToExprOf(Ctx(loc), iv, b.dtype));
      b.has_init = true;
    }
  }
  b.name = UniqueName(call_hint_.empty() ? "buf" : call_hint_);
  call_hint_.clear();
  b.loc = loc;
  ir::Stmt st;
  st.kind = ir::StmtKind::kAlloc;
  st.loc = loc;
  st.buffer = b;
  Emit(std::move(st));
  if (reducer.has_value()) {
    ir::Stmt mark;
    mark.kind = ir::StmtKind::kAnnotateLayout;
    mark.loc = loc;
    mark.name = b.name;
    mark.layout = ir::ReducerLayoutName(*reducer);
    Emit(std::move(mark));
  }
  buffers_.push_back(BufferInfo{std::move(b), false});
  buffers_.back().reducer = reducer;
  return Value::Buffer(static_cast<int>(buffers_.size()) - 1);
}

absl::StatusOr<Value> Evaluator::MakeView(const std::string& name, std::vector<Arg>& args,
                                          Loc loc) {
  const std::string& file = options_.file_name;
  const bool is_reshape = name == "T.reshape";
  std::vector<std::string_view> names = {"src", "shape"};
  if (!is_reshape) names.emplace_back("dtype");
  ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, names, is_reshape ? 2 : 1));
  if (m[0]->kind != ValueKind::kBuffer) {
    return Error(ArgLoc(args, names, 0, loc),
                 absl::StrCat(name, "() expects a buffer, got ", TypeName(*m[0])));
  }
  const int src = static_cast<int>(m[0]->i);
  // A view of a view names the first buffer's storage: row-major reshapes
  // compose, so the view maps straight onto it.
  const int root = buffers_[src].view_of >= 0 ? buffers_[src].view_of : src;
  const ir::Buffer& base = buffers_[root].buffer;
  if (base.scope == ir::Scope::kVar || base.scope == ir::Scope::kBarrier) {
    return Error(loc, absl::StrCat(name, "() of '", base.name, "', a ",
                                   base.scope == ir::Scope::kVar ? "T.alloc_var" : "barrier",
                                   " buffer, is not supported"));
  }
  ir::Buffer view;
  view.scope = base.scope;
  view.dtype = base.dtype;
  view.loc = loc;
  if (m.size() > 2 && m[2].has_value() && !m[2]->is_none()) {
    ASSIGN_OR_RETURN(view.dtype, ToDType(*m[2], ArgLoc(args, names, 2, loc)));
  }
  if (m[1].has_value() && !m[1]->is_none()) {
    ASSIGN_OR_RETURN(view.shape, ToShape(*m[1], ArgLoc(args, names, 1, loc)));
  } else {
    view.shape = buffers_[src].buffer.shape;
  }
  if (view.dtype != base.dtype) {
    // TileLang allows any dtype of the same total bits; Kiln's IR has no
    // reinterpreting load or store, so the bytes cannot be read as another
    // type. Refused rather than given separate storage, which would break
    // the aliasing the program relies on.
    return Error(loc, absl::StrCat(name, "() as ", std::string(ir::DTypeName(view.dtype)), " of '",
                                   base.name, "' (", std::string(ir::DTypeName(base.dtype)),
                                   ") reinterprets its bytes, which Kiln does not support yet; "
                                   "a view may change the shape only"));
  }
  if (!GroupDims(view.shape, base.shape)) {
    return Error(loc, absl::StrCat(name, "(): shape ", ShapeText(view.shape), " does not hold the ",
                                   "same number of elements as '", base.name, "' ",
                                   ShapeText(base.shape),
                                   " (extents known only at run time must appear unchanged)"));
  }
  view.name = UniqueName(call_hint_.empty() ? "view" : call_hint_);
  call_hint_.clear();
  BufferInfo info;
  info.buffer = std::move(view);
  info.view_of = root;
  buffers_.push_back(std::move(info));
  return Value::Buffer(static_cast<int>(buffers_.size()) - 1);
}

absl::StatusOr<Value> Evaluator::ResolveView(const Value& access, Loc loc, bool store) {
  const int root = buffers_[access.i].view_of;
  if (root < 0) return access;
  const std::vector<ir::Expr>& vshape = buffers_[access.i].buffer.shape;
  const std::vector<ir::Expr>& bshape = buffers_[root].buffer.shape;
  std::optional<std::vector<DimGroup>> groups = GroupDims(vshape, bshape);
  if (!groups) return Error(loc, "internal: view shape no longer matches its buffer");
  if (store && buffers_[root].buffer.scope == ir::Scope::kFragment) {
    for (const DimGroup& g : *groups) {
      if (g.v_end - g.v_begin > 1 || g.b_end - g.b_begin > 1) {
        return Error(loc,
                     absl::StrCat("store through '", buffers_[access.i].buffer.name,
                                  "', a reshaped view of fragment '", buffers_[root].buffer.name,
                                  "', is not supported: a fragment is laid out by the "
                                  "T.Parallel variables that index its stores; store into "
                                  "the fragment with its own shape (reads through the view "
                                  "work)"));
      }
    }
  }
  const ValueList& idx = access.elts();
  for (const Value& v : idx) {
    if (v.kind == ValueKind::kSlice) {
      return Error(loc, "a slice is not a single element here; use T.copy or T.fill for regions");
    }
  }
  auto extent = [](const ir::Expr& e) {
    return e.kind == ir::ExprKind::kInt ? Value::Int(e.ival) : Value::Expr(e);
  };
  ValueList out(bshape.size(), Value::Int(0));
  for (const DimGroup& g : *groups) {
    if (g.b_begin == g.b_end) continue; // only unit view dimensions
    // The row-major offset of the element inside the group ...
    Value flat = g.v_begin < g.v_end ? idx[g.v_begin] : Value::Int(0);
    for (size_t d = g.v_begin + 1; d < g.v_end; ++d) {
      ASSIGN_OR_RETURN(Value scaled, ApplyBinary(Ctx(loc), "*", flat, extent(vshape[d])));
      ASSIGN_OR_RETURN(flat, ApplyBinary(Ctx(loc), "+", scaled, idx[d]));
    }
    // ... taken apart over the buffer's dimensions of the group.
    for (size_t d = g.b_end; d-- > g.b_begin;) {
      if (d == g.b_begin) {
        out[d] = flat;
        break;
      }
      Value ext = extent(bshape[d]);
      ASSIGN_OR_RETURN(out[d], ApplyBinary(Ctx(loc), "%", flat, ext));
      ASSIGN_OR_RETURN(flat, ApplyBinary(Ctx(loc), "//", flat, ext));
    }
  }
  Value r;
  r.kind = ValueKind::kAccess;
  r.i = root;
  r.items = NewValueList(std::move(out));
  return r;
}

absl::StatusOr<Value> Evaluator::ThreadBinding(std::vector<Arg>& args, Loc loc) {
  RETURN_IF_ERROR(RequireKernel(loc, "T.thread_binding"));
  const std::vector<std::string_view> names = {"start", "stop", "thread", "annotations"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, "thread_binding", args, names, 1, 3));
  // TileLang's forms: (start, stop, thread), (extent, thread=...) and
  // (extent, thread) with the thread name second.
  std::optional<Value> start = m[0], stop = m[1], thread = m[2];
  if (!thread.has_value() && stop.has_value() && stop->kind == ValueKind::kString) {
    thread = stop;
    stop.reset();
  }
  if (!stop.has_value() || stop->is_none()) {
    stop = start;
    start = Value::Int(0);
  }
  if (!thread.has_value() || thread->kind != ValueKind::kString) {
    return Error(loc, "T.thread_binding needs thread=\"threadIdx.x\" (or .y, .z)");
  }
  const std::string& t = thread->s;
  int dim = -1;
  if (t == "threadIdx.x") dim = 0;
  if (t == "threadIdx.y") dim = 1;
  if (t == "threadIdx.z") dim = 2;
  if (dim < 0) {
    if (t.rfind("blockIdx.", 0) == 0 && IsSafeText(t)) {
      return Error(loc, absl::StrCat("T.thread_binding over ", t,
                                     " is not supported; use the block variables of "
                                     "'with T.Kernel(...) as (bx, by)'"));
    }
    return Error(loc, "T.thread_binding: thread must be \"threadIdx.x\", \"threadIdx.y\" or "
                      "\"threadIdx.z\"");
  }
  const std::vector<int64_t>& threads = CurrentKernel().threads;
  if (dim >= static_cast<int>(threads.size())) {
    return Error(loc, absl::StrCat("T.thread_binding over ", t,
                                   ", but the kernel's thread block is ", threads.size(), "-d"));
  }
  ASSIGN_OR_RETURN(Value lo, Materialize(*start, loc));
  ASSIGN_OR_RETURN(Value hi, Materialize(*stop, loc));
  if (!lo.is_int() || !hi.is_int()) {
    return Error(loc, "T.thread_binding: start and stop must be compile-time integers");
  }
  // The loop runs once per thread of the block, so its extent is the
  // block's along that dimension (TileLang binds the launch's own thread).
  if (hi.i - lo.i != threads[dim]) {
    return Error(loc, absl::StrCat("T.thread_binding over ", t, " with extent ", hi.i - lo.i,
                                   ", but the kernel has ", threads[dim], " threads along it"));
  }
  ir::Expr idx = ir::ThreadIdx(dim, loc);
  if (lo.i == 0) return Value::Expr(std::move(idx));
  return ApplyBinary(Ctx(loc), "+", Value::Expr(std::move(idx)), lo);
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecThreadBindingFor(const PyStmt& s,
                                                                std::vector<Arg>& args, Loc loc) {
  ASSIGN_OR_RETURN(Value tid, ThreadBinding(args, loc));
  const PyExpr& target = s.targets[0];
  if (s.targets.size() != 1 || target.kind != PyExprKind::kName) {
    return Error(target.loc, "a T.thread_binding loop binds one name");
  }
  RETURN_IF_ERROR(CheckRebind(target.str, target.loc));
  Bind(target.str, std::move(tid));
  ASSIGN_OR_RETURN(Flow f, ExecBlock(s.body));
  return f == Flow::kReturn ? f : Flow::kNormal;
}

absl::StatusOr<Value> Evaluator::SyncThreads(std::vector<Arg>& args, Loc loc) {
  RETURN_IF_ERROR(RequireKernel(loc, "T.sync_threads"));
  const std::vector<std::string_view> names = {"barrier_id", "arrive_count"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, "sync_threads", args, names, 0));
  int64_t block = 1;
  for (int64_t t : CurrentKernel().threads) block *= t;
  ir::Stmt st;
  st.kind = ir::StmtKind::kCall;
  st.loc = loc;
  st.name = "sync_threads";
  if (m[0].has_value() && !m[0]->is_none()) {
    // bar.sync id, count: ids 0..15 (0 is __syncthreads' own); the count
    // is whole warps, at most the block.
    ASSIGN_OR_RETURN(Value id, Materialize(*m[0], loc));
    if (!id.is_int() || id.i < 0 || id.i > 15) {
      return Error(ArgLoc(args, names, 0, loc),
                   "T.sync_threads: barrier_id must be a compile-time integer in [0, 15]");
    }
    int64_t count = block;
    if (m[1].has_value() && !m[1]->is_none()) {
      ASSIGN_OR_RETURN(Value c, Materialize(*m[1], loc));
      if (!c.is_int()) {
        return Error(ArgLoc(args, names, 1, loc),
                     "T.sync_threads: arrive_count must be a compile-time integer");
      }
      count = c.i;
    }
    if (count <= 0 || count % 32 != 0 || count > block) {
      return Error(ArgLoc(args, names, 1, loc),
                   absl::StrCat("T.sync_threads: arrive_count must be a positive multiple of 32 "
                                "of at most the block's ",
                                block, " threads, got ", count));
    }
    if (id.i != 0 || count != block) {
      st.name = "named_barrier_sync";
      st.indices = {ir::IntImm(id.i, ir::DType::kInt32, loc),
                    ir::IntImm(count, ir::DType::kInt32, loc)};
    }
  } else if (m[1].has_value() && !m[1]->is_none()) {
    return Error(loc, "T.sync_threads: arrive_count needs a barrier_id");
  }
  Emit(std::move(st));
  return Value::None();
}

absl::Status Evaluator::EmitRuntimeCheck(const Value& cond, const std::optional<Value>& message,
                                         Loc loc, std::string_view what) {
  ir::Stmt st;
  st.kind = ir::StmtKind::kAssert;
  st.loc = loc;
  ASSIGN_OR_RETURN(st.cond, ToCondition(Ctx(loc), cond));
  // The source line (not the file: its name is not part of the cache key)
  // and the user's text, kept to printable ASCII and kMaxAssertMessage.
  std::string text = absl::StrCat(std::string(what), " at line ", loc.line, " failed");
  if (message.has_value()) {
    std::string user;
    if (message->kind == ValueKind::kString) {
      user = message->s;
    } else if (message->is_number()) {
      user = Describe(*message);
    }
    for (char& c : user) {
      if (c < 0x20 || c > 0x7e) c = '?';
    }
    if (!user.empty()) absl::StrAppend(&text, ": ", user);
  }
  if (text.size() > ir::kMaxAssertMessage) {
    text.resize(ir::kMaxAssertMessage - 3);
    text += "...";
  }
  st.message = std::move(text);
  if (in_kernel_) {
    Emit(std::move(st));
  } else {
    // A check on values known at launch, before the kernel does anything.
    std::vector<ir::Stmt>& body = program_.kernel.body;
    body.insert(body.begin() + host_checks_, std::move(st));
    ++host_checks_;
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> Evaluator::DeviceAssert(std::vector<Arg>& args, Loc loc) {
  RETURN_IF_ERROR(RequireKernel(loc, "T.device_assert"));
  const std::vector<std::string_view> names = {"condition", "msg", "no_stack_info"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, "device_assert", args, names, 1));
  ASSIGN_OR_RETURN(Value c, Materialize(*m[0], loc));
  if (!c.is_number() && !c.is_expr()) {
    return Error(ArgLoc(args, names, 0, loc),
                 absl::StrCat("T.device_assert expects a condition, got ", TypeName(c)));
  }
  bool known = true;
  const bool truth = Truthy(c, &known);
  if (known && truth) return Value::None();
  // A false constant still fails only where the kernel reaches it.
  if (known) c = Value::Expr(ir::BoolImm(false, loc));
  RETURN_IF_ERROR(EmitRuntimeCheck(c, m[1], loc, "T.device_assert"));
  return Value::None();
}

absl::StatusOr<Value> Evaluator::CallMath(const std::string& fn, std::vector<Arg>& args, Loc loc) {
  const MathFn* spec = nullptr;
  for (const MathFn& m : kMath) {
    if (m.name == fn) spec = &m;
  }
  ValueList vals;
  for (const Arg& a : args) {
    if (!a.name.empty()) {
      return Error(a.name_loc,
                   absl::StrCat(fn, "() got an unexpected keyword argument '", a.name, "'"));
    }
    ASSIGN_OR_RETURN(Value v, Materialize(a.value, a.loc));
    if (!v.is_number() && !v.is_expr()) {
      return Error(a.loc,
                   absl::StrCat("T.", fn, "() expects a number or expression, got ", TypeName(v)));
    }
    vals.push_back(std::move(v));
  }
  if (static_cast<int>(vals.size()) != spec->arity) {
    return Error(loc,
                 absl::StrCat("T.", fn, "() takes ", spec->arity, " argument",
                              spec->arity == 1 ? "" : "s", " but ", vals.size(), " were given"));
  }
  std::vector<ir::Expr> xs;
  if (spec->arity == 2) {
    ir::Expr x, y;
    RETURN_IF_ERROR(PromotePair(Ctx(loc), vals[0], vals[1], &x, &y));
    xs.push_back(std::move(x));
    xs.push_back(std::move(y));
  } else {
    ASSIGN_OR_RETURN(ir::Expr x, ToExpr(Ctx(loc), vals[0]));
    xs.push_back(std::move(x));
  }
  ir::DType t = xs[0].dtype;
  if (!ir::IsFloat(t)) {
    if (spec->float_only) {
      for (ir::Expr& x : xs) x = CastExpr(std::move(x), ir::DType::kFloat32, loc);
    } else if (spec->fn != ir::Intrinsic::kAbs) {
      return Value::Expr(std::move(xs[0])); // floor/ceil/round/trunc of an integer
    } else if (ir::IsBool(t)) {
      return Error(loc, "T.abs() of a bool is not supported");
    }
  }
  return Value::Expr(ir::Call(spec->fn, std::move(xs), loc));
}

absl::StatusOr<Value> Evaluator::CallTBuiltin(const std::string& name, std::vector<Arg>& args,
                                              const PyExpr& call) {
  Loc loc = call.loc;
  const std::string& file = options_.file_name;
  constexpr std::string_view kIket = "tilelang.tools.cuda.iket.";
  if (name.rfind(kIket, 0) == 0) {
    // TileLang's event tracer records timestamps for a profiler and changes
    // no result: its calls are accepted and do nothing (no trace is kept).
    std::string fn = name.substr(kIket.size());
    std::vector<std::string_view> names = {"name", "payload"};
    if (fn == "payload") names = {"value", "dtype"};
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, absl::StrCat("iket.", fn), args, names, 1));
    (void)m;
    if (fn == "range") return Value::Opaque(kIketRange);
    return Value::None();
  }
  if (name.rfind("tilelang.", 0) == 0) {
    return Error(loc, absl::StrCat("'", name, "' cannot be called here"));
  }
  std::string fn = name.substr(2);
  if (IsTileOp(fn)) return CallTileOp(fn, args, loc);
  if (IsHopperOp(fn)) return CallHopperOp(fn, args, loc);
  if (fn.rfind("alloc_", 0) == 0) return Allocate(name, args, loc);
  if (fn == "finalize_reducer") {
    // T.finalize_reducer(reducer): combine every thread's copy in place
    // (compiler/ir/reducer.h).
    RETURN_IF_ERROR(RequireKernel(loc, "T.finalize_reducer"));
    const std::vector<std::string_view> names = {"reducer", "dst", "batch", "annotations"};
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, fn, args, names, 1));
    const Value& r = *m[0];
    if (r.kind != ValueKind::kBuffer || !buffers_[r.i].reducer.has_value()) {
      return Error(ArgLoc(args, names, 0, loc),
                   absl::StrCat("T.finalize_reducer expects a buffer made by T.alloc_reducer, got ",
                                r.kind == ValueKind::kBuffer
                                    ? absl::StrCat("'", buffers_[r.i].buffer.name, "'")
                                    : TypeName(r)));
    }
    if (m[1].has_value() && !m[1]->is_none()) {
      return Error(ArgLoc(args, names, 1, loc),
                   "T.finalize_reducer with a destination is not supported by Kiln yet; finalize "
                   "in place (T.finalize_reducer(reducer)) and copy the reducer");
    }
    // batch only groups the collective's barriers: any positive count
    // gives the same values.
    if (m[2].has_value() && !(m[2]->kind == ValueKind::kInt && m[2]->i >= 1)) {
      return Error(ArgLoc(args, names, 2, loc),
                   "T.finalize_reducer batch must be a positive integer");
    }
    const ir::Buffer& b = buffers_[r.i].buffer;
    ir::Stmt st;
    st.kind = ir::StmtKind::kReduce;
    st.loc = loc;
    st.reduce_kind = *buffers_[r.i].reducer;
    st.dim = ir::kReducerFinalizeDim;
    st.clear = false;
    ir::Region whole;
    whole.buffer = b.name;
    whole.loc = loc;
    for (const ir::Expr& e : b.shape) whole.ranges.push_back(ir::Range{ir::IntImm(0), e});
    st.regions = {whole, whole};
    Emit(std::move(st));
    return Value::None();
  }
  if (fn == "const" || fn == "dynamic" || fn == "symbolic") {
    return DeclareSymbols(absl::StrCat("T.", fn), args, loc);
  }
  if (fn == "empty") return DeclareOutput(args, loc);
  if (fn == "Tensor" || fn == "Buffer") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {"shape", "dtype", "data"}, 1));
    if (m[2].has_value() && !m[2]->is_none()) return TensorOverStorage(name, args, loc);
    return MakeTensorType(*m[0], m[1].has_value() ? *m[1] : Value::Str("float32"), loc);
  }
  if (fn == "im2col" || fn == "c2d_im2col") return LowerIm2col(name, args, loc);
  if (fn == "cumsum") return LowerCumsum(args, loc);
  if (fn == "reshape" || fn == "view") return MakeView(name, args, loc);
  if (fn == "thread_binding") return ThreadBinding(args, loc);
  if (fn == "sync_threads") return SyncThreads(args, loc);
  if (fn == "Kernel") return Error(loc, "T.Kernel must be used as 'with T.Kernel(...) as ...:'");
  if (IsLoopBuiltin(fn)) {
    return Error(loc, absl::StrCat("T.", fn, " can only be used as the iterator of a for loop"));
  }
  if (fn == "prim_func" || fn == "macro") {
    return Error(loc, absl::StrCat("T.", fn, " can only be used as a decorator"));
  }
  if (fn == "GemmWarpPolicy") {
    return Error(loc, "T.GemmWarpPolicy is not callable; use T.GemmWarpPolicy.Square etc.");
  }
  if (fn == "device_assert") return DeviceAssert(args, loc);
  if (fn == "Layout") return MakeIndexLayout(args, loc);
  if (std::optional<std::string> kind = LayoutKind(fn)) {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {"buffer"}, 1));
    if (m[0]->kind != ValueKind::kBuffer) {
      return Error(ArgLoc(args, {"buffer"}, 0, loc),
                   absl::StrCat(name, "() expects a buffer, got ", TypeName(*m[0])));
    }
    Value l;
    l.kind = ValueKind::kLayout;
    l.s = *kind;
    l.i = m[0]->i;
    return l;
  }
  if (fn == "min" || fn == "max") {
    if (args.size() < 2) return Error(loc, absl::StrCat(name, "() needs at least two arguments"));
    ValueList vals;
    for (const Arg& a : args) {
      if (!a.name.empty()) {
        return Error(a.name_loc,
                     absl::StrCat(name, "() got an unexpected keyword argument '", a.name, "'"));
      }
      ASSIGN_OR_RETURN(Value v, Materialize(a.value, a.loc));
      vals.push_back(std::move(v));
    }
    Value acc = vals[0];
    for (size_t k = 1; k < vals.size(); ++k) {
      ASSIGN_OR_RETURN(acc, ApplyMinMax(Ctx(loc), fn == "max", acc, vals[k]));
    }
    if (!acc.is_expr()) {
      ASSIGN_OR_RETURN(ir::Expr e, ToExpr(Ctx(loc), acc));
      return Value::Expr(std::move(e));
    }
    return acc;
  }
  if (fn == "clamp") {
    // T.clamp(x, lo, hi) == T.min(T.max(x, lo), hi), as TileLang defines it.
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {"dst", "min_val", "max_val"}, 3));
    ASSIGN_OR_RETURN(Value x, Materialize(*m[0], loc));
    ASSIGN_OR_RETURN(Value lo, Materialize(*m[1], loc));
    ASSIGN_OR_RETURN(Value hi, Materialize(*m[2], loc));
    for (const Value* v : {&x, &lo, &hi}) {
      if (!v->is_number() && !v->is_expr()) {
        return Error(loc,
                     absl::StrCat("T.clamp() expects numbers or expressions, got ", TypeName(*v)));
      }
    }
    ASSIGN_OR_RETURN(Value low, ApplyMinMax(Ctx(loc), true, x, lo));
    ASSIGN_OR_RETURN(Value r, ApplyMinMax(Ctx(loc), false, low, hi));
    if (!r.is_expr()) {
      ASSIGN_OR_RETURN(ir::Expr e, ToExpr(Ctx(loc), r));
      return Value::Expr(std::move(e));
    }
    return r;
  }
  if (fn == "if_then_else" || fn == "if_then_else_") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {"cond", "t", "f"}, 3));
    ASSIGN_OR_RETURN(Value c, Materialize(*m[0], loc));
    ASSIGN_OR_RETURN(Value t, Materialize(*m[1], loc));
    ASSIGN_OR_RETURN(Value f, Materialize(*m[2], loc));
    ir::Expr x, y;
    RETURN_IF_ERROR(PromotePair(Ctx(loc), t, f, &x, &y));
    bool known = true;
    bool truth = Truthy(c, &known);
    if (known) return Value::Expr(truth ? std::move(x) : std::move(y));
    ASSIGN_OR_RETURN(ir::Expr ce, ToCondition(Ctx(ArgLoc(args, {"cond"}, 0, loc)), c));
    return Value::Expr(ir::Select(std::move(ce), std::move(x), std::move(y), loc));
  }
  if (fn == "reinterpret") {
    // T.reinterpret(value, dtype); TileLang also takes TVM's order (dtype
    // first) when the first argument is a dtype.
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {"value", "dtype", "span"}, 2));
    if (m[0]->kind == ValueKind::kDType || m[0]->kind == ValueKind::kString) {
      return Reinterpret(*m[1], *m[0], loc);
    }
    return Reinterpret(*m[0], *m[1], loc);
  }
  if (fn == "cast" || fn == "Cast") {
    std::vector<std::string_view> names = {"value", "dtype"};
    if (fn == "Cast") names = {"dtype", "value"};
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, names, 2));
    const Value& value = fn == "cast" ? *m[0] : *m[1];
    const Value& dtype = fn == "cast" ? *m[1] : *m[0];
    ASSIGN_OR_RETURN(ir::DType t, ToDType(dtype, loc));
    ASSIGN_OR_RETURN(Value v, Materialize(value, loc));
    ASSIGN_OR_RETURN(ir::Expr e, ToExprOf(Ctx(loc), v, t));
    return Value::Expr(std::move(e));
  }
  if (fn == "infinity" || fn == "max_value" || fn == "min_value") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {"dtype"}, 1));
    ASSIGN_OR_RETURN(ir::DType t, ToDType(*m[0], ArgLoc(args, {"dtype"}, 0, loc)));
    if (fn == "infinity") {
      if (!ir::IsFloat(t)) {
        return Error(loc, absl::StrCat("T.infinity needs a float dtype, got ",
                                       std::string(ir::DTypeName(t))));
      }
      return Value::Expr(ir::FloatImm(INFINITY, t, loc));
    }
    bool is_max = fn == "max_value";
    if (ir::IsFloat(t))
      return Value::Expr(ir::FloatImm(is_max ? MaxFinite(t) : -MaxFinite(t), t, loc));
    if (ir::IsBool(t)) return Value::Expr(ir::BoolImm(is_max, loc));
    int bits = ir::DTypeBits(t);
    int64_t v;
    if (ir::IsUnsigned(t)) {
      if (!is_max) {
        v = 0;
      } else if (bits == 64) {
        return Error(loc, "T.max_value(uint64) is not representable");
      } else {
        v = (int64_t{1} << bits) - 1;
      }
    } else if (bits == 64) {
      v = is_max ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    } else {
      v = is_max ? (int64_t{1} << (bits - 1)) - 1 : -(int64_t{1} << (bits - 1));
    }
    return Value::Expr(ir::IntImm(v, t, loc));
  }
  if (fn == "ceildiv" || fn == "ceil_div" || fn == "floordiv" || fn == "floormod" ||
      fn == "truncdiv") {
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {"a", "b"}, 2));
    ASSIGN_OR_RETURN(Value a, Materialize(*m[0], loc));
    ASSIGN_OR_RETURN(Value b, Materialize(*m[1], loc));
    if (fn == "floordiv") return ApplyBinary(Ctx(loc), "//", a, b);
    if (fn == "floormod") return ApplyBinary(Ctx(loc), "%", a, b);
    if (fn == "truncdiv") {
      if (a.is_int() && b.is_int()) {
        if (b.i == 0) return Error(loc, "integer division by zero");
        if (a.i == std::numeric_limits<int64_t>::min() && b.i == -1) {
          return Error(loc, "integer overflow in compile-time arithmetic");
        }
        return Value::Int(a.i / b.i);
      }
      ir::Expr x, y;
      RETURN_IF_ERROR(PromotePair(Ctx(loc), a, b, &x, &y));
      return Value::Expr(ir::Binary(ir::BinOp::kDiv, std::move(x), std::move(y), loc));
    }
    // ceildiv: constants fold with Python semantics; symbolic (a + b - 1) // b.
    if (a.is_int() && b.is_int()) {
      if (b.i == 0) return Error(loc, "T.ceildiv by zero");
      ASSIGN_OR_RETURN(Value neg, ApplyUnary(Ctx(loc), "-", a));
      ASSIGN_OR_RETURN(Value q, ApplyBinary(Ctx(loc), "//", neg, b));
      return ApplyUnary(Ctx(loc), "-", q);
    }
    if ((!a.is_int() && !a.is_expr()) || (!b.is_int() && !b.is_expr()) ||
        (a.is_expr() && !ir::IsInteger(a.expr->dtype)) ||
        (b.is_expr() && !ir::IsInteger(b.expr->dtype))) {
      return Error(loc, "T.ceildiv expects integer arguments");
    }
    Value num;
    if (b.is_int()) {
      if (b.i <= 0) return Error(loc, "T.ceildiv divisor must be positive");
      ASSIGN_OR_RETURN(num, ApplyBinary(Ctx(loc), "+", a, Value::Int(b.i - 1)));
    } else {
      ASSIGN_OR_RETURN(Value sum, ApplyBinary(Ctx(loc), "+", a, b));
      ASSIGN_OR_RETURN(num, ApplyBinary(Ctx(loc), "-", sum, Value::Int(1)));
    }
    return ApplyBinary(Ctx(loc), "//", num, b);
  }
  if (fn == "get_thread_binding") {
    RETURN_IF_ERROR(RequireKernel(loc, "T.get_thread_binding"));
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, {"dim"}, 0));
    int64_t dim = 0;
    if (m[0].has_value()) {
      if (m[0]->kind != ValueKind::kInt) return Error(loc, "dim must be a compile-time integer");
      dim = m[0]->i;
    }
    if (dim < 0 || dim >= static_cast<int64_t>(CurrentKernel().threads.size())) {
      return Error(loc, absl::StrCat("T.get_thread_binding: dim ", dim,
                                     " is out of range for the kernel's ",
                                     CurrentKernel().threads.size(), "-d thread block"));
    }
    return Value::Expr(ir::ThreadIdx(static_cast<int>(dim), loc));
  }
  for (const MathFn& m : kMath) {
    if (m.name == fn) return CallMath(fn, args, loc);
  }
  return Error(loc, absl::StrCat("'", name, "' is not supported"));
}

// The same bits as another dtype of the same width (TVM's reinterpret);
// bool takes part in neither side. A Python number is first a constant of
// its default dtype (int32, float32).
absl::StatusOr<Value> Evaluator::Reinterpret(const Value& value, const Value& dtype, Loc loc) {
  ASSIGN_OR_RETURN(ir::DType t, ToDType(dtype, loc));
  ASSIGN_OR_RETURN(Value v, Materialize(value, loc));
  if (!v.is_number() && !v.is_expr()) {
    return Error(
        loc, absl::StrCat("T.reinterpret expects a number or an expression, got ", TypeName(v)));
  }
  ASSIGN_OR_RETURN(ir::Expr x, ToExpr(Ctx(loc), v));
  if (ir::IsBool(x.dtype) || ir::IsBool(t) || ir::DTypeBits(x.dtype) != ir::DTypeBits(t)) {
    return Error(loc,
                 absl::StrCat("T.reinterpret needs dtypes of the same width (not bool): ",
                              std::string(ir::DTypeName(x.dtype)), " has ", ir::DTypeBits(x.dtype),
                              " bits, ", std::string(ir::DTypeName(t)), " ", ir::DTypeBits(t)));
  }
  if (x.dtype == t) return Value::Expr(std::move(x));
  ir::Expr e = ir::Call(ir::Intrinsic::kReinterpret, {std::move(x)}, loc);
  e.dtype = t;
  return Value::Expr(std::move(e));
}

} // namespace kiln::frontend
