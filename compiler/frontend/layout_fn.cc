// User-defined index layouts: T.Layout(shape, forward_fn) and its use in
// T.annotate_layout on a tensor parameter, plus lambda expressions (the
// usual way to write forward_fn).
//
// T.Layout runs forward_fn once at compile time with one int32 placeholder
// variable per dimension of `shape`; the expressions it returns are the
// layout's output (physical) indices. The result is a layout value that
// T.annotate_layout attaches to the tensor (ir::Buffer::index_layout);
// lowering then stores the tensor in that physical order.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/frontend/args.h"
#include "compiler/frontend/arith.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/index_layout.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/simplify.h"
#include "util/status_macros.h"

namespace kiln::frontend {
namespace {

// Items of a T.Layout value (ValueKind::kLayout with s == kIndexLayout).
enum LayoutItem { kShape = 0, kForward = 1, kVars = 2, kLoc = 3 };

} // namespace

absl::StatusOr<Value> Evaluator::MakeLambda(const PyExpr& e) {
  auto it = lambda_defs_.find(&e);
  if (it == lambda_defs_.end()) {
    // A lambda is a def whose body returns its expression; made once per
    // lambda expression of the source, however often it is evaluated.
    auto def = std::make_unique<PyStmt>();
    def->kind = PyStmtKind::kFunctionDef;
    def->loc = e.loc;
    def->str = "<lambda>";
    def->params = e.params;
    PyStmt ret;
    ret.kind = PyStmtKind::kReturn;
    ret.loc = e.elts[0].loc;
    ret.exprs.push_back(e.elts[0]);
    def->body.push_back(std::move(ret));
    it = lambda_defs_.emplace(&e, std::move(def)).first;
  }
  Value f;
  f.kind = ValueKind::kFunction;
  f.func = it->second.get();
  f.i = frame_;
  return f;
}

absl::StatusOr<Value> Evaluator::MakeIndexLayout(std::vector<Arg>& args, Loc loc) {
  const std::vector<std::string_view> names = {"shape", "forward_fn"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, "T.Layout", args, names, 2));
  const Value& shape = *m[0];
  const Value& fn = *m[1];
  if (!shape.is_sequence() || shape.elts().empty()) {
    return Error(ArgLoc(args, names, 0, loc),
                 absl::StrCat("T.Layout expects a non-empty shape (a list or tuple), got ",
                              TypeName(shape)));
  }
  if (shape.elts().size() > ir::kMaxIndexLayoutDims) {
    return Error(ArgLoc(args, names, 0, loc),
                 absl::StrCat("T.Layout takes at most ", ir::kMaxIndexLayoutDims,
                              " dimensions, got ", shape.elts().size()));
  }
  ASSIGN_OR_RETURN(std::vector<ir::Expr> dims, ToShape(shape, ArgLoc(args, names, 0, loc)));
  if (fn.kind != ValueKind::kFunction) {
    return Error(ArgLoc(args, names, 1, loc),
                 absl::StrCat("T.Layout expects a function of the indices (a lambda or a def), "
                              "got ",
                              TypeName(fn)));
  }
  // One placeholder per dimension, named after the function's parameters.
  std::vector<Arg> call_args;
  ValueList vars;
  for (size_t d = 0; d < dims.size(); ++d) {
    std::string hint = absl::StrCat("i", d);
    const std::vector<Param>& params = fn.func->params;
    if (d < params.size() &&
        (params[d].kind == Param::kNormal || params[d].kind == Param::kPosOnly)) {
      hint = params[d].name;
    }
    const std::string name = UniqueName(hint);
    vars.push_back(Value::Str(name));
    Arg a;
    a.value = Value::Expr(ir::VarRef(name, ir::DType::kInt32, loc));
    a.loc = loc;
    call_args.push_back(std::move(a));
  }
  ASSIGN_OR_RETURN(Value result, CallUserFunction(fn, call_args, loc));
  ValueList outs;
  if (result.is_sequence()) {
    outs = result.elts();
  } else {
    outs.push_back(result);
  }
  if (outs.empty() || outs.size() > ir::kMaxIndexLayoutDims) {
    return Error(loc, absl::StrCat("T.Layout: the function must return 1 to ",
                                   ir::kMaxIndexLayoutDims, " indices, got ", outs.size()));
  }
  ValueList forward;
  ir::IndexLayout layout;
  layout.loc = loc;
  for (const Value& v : vars) layout.vars.push_back(v.s);
  for (const Value& o : outs) {
    if (!o.is_int() && !(o.is_expr() && ir::IsInteger(o.expr->dtype))) {
      return Error(loc, absl::StrCat("T.Layout: the function must return integer indices, got ",
                                     TypeName(o)));
    }
    ASSIGN_OR_RETURN(ir::Expr e, ToExpr(Ctx(loc), o));
    e = ir::Simplify(e);
    layout.forward.push_back(e);
    forward.push_back(Value::Expr(std::move(e)));
  }
  // Refused here, at the call, rather than where the layout is used.
  RETURN_IF_ERROR(ir::IndexLayoutShape(layout, dims, options_.file_name).status());
  Value l;
  l.kind = ValueKind::kLayout;
  l.s = std::string(kIndexLayout);
  l.i = -1;
  ValueList dim_values;
  for (ir::Expr& d : dims) dim_values.push_back(Value::Expr(std::move(d)));
  l.items = NewValueList({Value::Tuple(std::move(dim_values)), Value::Tuple(std::move(forward)),
                          Value::Tuple(std::move(vars)),
                          Value::Tuple({Value::Int(loc.line), Value::Int(loc.col)})});
  return l;
}

absl::Status Evaluator::AnnotateIndexLayout(int buffer, const Value& layout, Loc loc) {
  BufferInfo& info = buffers_[buffer];
  ir::Buffer& b = info.buffer;
  const ValueList& items = layout.elts();
  const Loc layout_loc{static_cast<int32_t>(items[kLoc].elts()[0].i),
                       static_cast<int32_t>(items[kLoc].elts()[1].i)};
  if (!info.is_param || b.scope != ir::Scope::kGlobal) {
    return Error(loc, absl::StrCat("T.Layout on ",
                                   b.scope == ir::Scope::kSharedDyn
                                       ? std::string("shared")
                                       : std::string(ir::ScopeName(b.scope)),
                                   " buffer '", b.name,
                                   "' is not supported yet: Kiln lays out shared and fragment "
                                   "buffers itself (T.make_swizzled_layout asks for a swizzled "
                                   "shared tile); a T.Layout applies to tensor parameters"));
  }
  const ValueList& dims = items[kShape].elts();
  bool same = dims.size() == b.shape.size();
  for (size_t d = 0; same && d < dims.size(); ++d) {
    same = ir::ProvablyEqual(ir::Simplify(*dims[d].expr), ir::Simplify(b.shape[d]));
  }
  if (!same) {
    std::vector<std::string> want;
    for (const ir::Expr& e : b.shape) want.push_back(ir::PrintExpr(e));
    return Error(loc, absl::StrCat("the T.Layout made at line ", layout_loc.line,
                                   " is for another shape than '", b.name, "' [",
                                   absl::StrJoin(want, ", "), "]"));
  }
  ir::IndexLayout l;
  l.loc = layout_loc;
  for (const Value& v : items[kVars].elts()) l.vars.push_back(v.s);
  for (const Value& v : items[kForward].elts()) l.forward.push_back(*v.expr);
  if (b.index_layout && !(*b.index_layout == l)) {
    return Error(loc, absl::StrCat("'", b.name, "' already has another T.Layout (from line ",
                                   b.index_layout->loc.line, ")"));
  }
  // The tensor must hold the physical array (once its shape is known).
  ir::Buffer with = b;
  with.index_layout = l;
  if (absl::StatusOr<std::vector<ir::Expr>> phys =
          ir::CheckedIndexLayoutShape(with, options_.file_name);
      !phys.ok()) {
    bool symbolic = false;
    for (const ir::Expr& e : b.shape) symbolic |= !ir::ConstInt(ir::Simplify(e)).has_value();
    if (!symbolic) return phys.status(); // symbolic shapes are checked again in lowering
  }
  b.index_layout = l;
  // Parameters were copied out of buffers_ when they were declared.
  auto update = [&](ir::Param& p) {
    if (!p.is_scalar && p.buffer.name == b.name) p.buffer.index_layout = l;
  };
  for (ir::Param& p : program_.params) update(p);
  for (auto& [pos, p] : jit_inputs_) update(p);
  for (ir::Param& p : jit_outputs_) update(p);
  return absl::OkStatus();
}

} // namespace kiln::frontend
