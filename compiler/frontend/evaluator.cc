// Statement execution, scopes and assignment.
#include "compiler/frontend/evaluator.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/frontend/names.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "util/status_macros.h"

namespace kiln::frontend {
namespace {

constexpr int kMaxDepth = 200;

} // namespace

Evaluator::Evaluator(const Module& module, const FrontendOptions& options)
    : module_(module), options_(options), budget_(options.limits, options.file_name) {
  frames_.push_back(std::make_unique<Frame>());
}

absl::Status Evaluator::Error(Loc loc, std::string_view message) const {
  return ir::ErrorAt(options_.file_name, loc, message);
}

absl::Status Evaluator::RequireKernel(Loc loc, std::string_view what) const {
  if (in_kernel_) return absl::OkStatus();
  return Error(loc, absl::StrCat(std::string(what), " is only allowed inside a T.Kernel block"));
}

absl::Status Evaluator::EnterNesting(Loc loc) {
  if (++depth_ > kMaxDepth) {
    return Error(loc, absl::StrCat("program nesting too deep (limit ", kMaxDepth, ")"));
  }
  return absl::OkStatus();
}

namespace {

// The expression nodes a statement holds itself (its body's statements are
// emitted, and charged, one by one). Iterative: no recursion on client data.
int64_t OwnExprNodes(const ir::Stmt& s) {
  std::vector<const ir::Expr*> todo;
  auto add = [&todo](const ir::Expr& e) { todo.push_back(&e); };
  for (const ir::Expr& e : s.buffer.shape) add(e);
  add(s.buffer.init);
  for (const ir::Region& r : s.regions) {
    for (const ir::Range& range : r.ranges) {
      add(range.min);
      add(range.extent);
    }
  }
  add(s.value);
  for (const ir::Expr& e : s.extents) add(e);
  add(s.cond);
  for (const ir::Expr& e : s.indices) add(e);
  int64_t nodes = 0;
  while (!todo.empty()) {
    const ir::Expr* e = todo.back();
    todo.pop_back();
    ++nodes;
    for (const ir::Expr& a : e->args) todo.push_back(&a);
  }
  return nodes;
}

} // namespace

void Evaluator::Emit(ir::Stmt s) {
  const int64_t nodes = OwnExprNodes(s);
  (void)budget_.Charge(s.loc, 1 + nodes / 16,
                       static_cast<int64_t>(sizeof(ir::Stmt)) +
                           nodes * static_cast<int64_t>(sizeof(ir::Expr)));
  sink_->push_back(std::move(s));
}

absl::StatusOr<bool> Evaluator::Equals(const Value& a, const Value& b, bool* known, Loc loc) {
  const bool eq = PyEquals(a, b, known, &budget_, loc);
  RETURN_IF_ERROR(budget_.status());
  return eq;
}

std::string Evaluator::UniqueName(std::string_view hint) {
  std::string base = IsIdentifier(hint) ? std::string(hint.substr(0, 64)) : "v";
  if (IsReservedIrName(base)) base += "_";
  std::string name = base;
  for (int k = 1; used_names_.contains(name); ++k) name = absl::StrCat(base, "_", k);
  used_names_.insert(name);
  return name;
}

std::string Evaluator::UserNameFor(std::string_view hint, const std::string& ir_name) {
  std::string user(hint);
  if (!IsIdentifier(user) || user_names_.contains(user)) user = ir_name;
  user_names_.insert(user);
  return user == ir_name ? std::string() : user;
}

// ---------------------------------------------------------------------------
// Scopes.

void Evaluator::Bind(const std::string& name, Value v) {
  auto& vars = frames_[frame_]->vars;
  if (open_scopes_ > 0) {
    auto it = vars.find(name);
    undo_.push_back(UndoEntry{frame_, name,
                              it == vars.end() ? std::nullopt : std::optional<Value>(it->second)});
  }
  vars[name] = std::move(v);
}

size_t Evaluator::OpenScope() {
  ++open_scopes_;
  scope_marks_.emplace_back(undo_.size(), frames_.size());
  return undo_.size();
}

absl::Status Evaluator::CheckRebind(const std::string& name, Loc loc) {
  if (open_scopes_ == 0 || scope_marks_.empty()) return absl::OkStatus();
  const auto [undo_mark, frames_mark] = scope_marks_.back();
  // Frames made inside the scope (a macro's locals) are fresh on every trace.
  if (static_cast<size_t>(frame_) >= frames_mark) return absl::OkStatus();
  if (!frames_[frame_]->vars.contains(name)) return absl::OkStatus();
  // Rebinding a name introduced inside the innermost run-time loop or branch
  // is straight-line code; rebinding one from outside would silently keep
  // only the value of the last trace, not a per-iteration value.
  for (size_t k = undo_mark; k < undo_.size(); ++k) {
    const UndoEntry& u = undo_[k];
    if (u.frame == frame_ && u.name == name && !u.old.has_value()) return absl::OkStatus();
  }
  return Error(loc, absl::StrCat("cannot rebind '", name,
                                 "' inside a run-time loop or branch (it is bound outside); "
                                 "use T.alloc_var for a mutable variable"));
}

void Evaluator::CloseScope(size_t mark) {
  while (undo_.size() > mark) {
    UndoEntry& u = undo_.back();
    auto& vars = frames_[u.frame]->vars;
    if (u.old.has_value()) {
      vars[u.name] = std::move(*u.old);
    } else {
      vars.erase(u.name);
    }
    undo_.pop_back();
  }
  --open_scopes_;
  scope_marks_.pop_back();
}

std::optional<Value> Evaluator::LookupLocal(const std::string& name) {
  for (int f = frame_; f > 0; f = frames_[f]->parent) {
    auto it = frames_[f]->vars.find(name);
    if (it != frames_[f]->vars.end()) return it->second;
  }
  return std::nullopt;
}

absl::StatusOr<Value> Evaluator::LookupName(const std::string& name, Loc loc) {
  if (std::optional<Value> v = LookupLocal(name)) return *std::move(v);
  return LookupModuleName(name, loc);
}

absl::StatusOr<Value> Evaluator::LookupModuleName(const std::string& name, Loc loc) {
  auto& globals = frames_[0]->vars;
  if (auto it = globals.find(name); it != globals.end()) return it->second;
  if (auto it = module_names_.find(name); it != module_names_.end()) {
    ModuleName& m = it->second;
    if (m.evaluating) {
      return Error(loc, absl::StrCat("module-level name '", name, "' depends on itself"));
    }
    if (m.stmt->kind == PyStmtKind::kAugAssign) {
      return Error(m.stmt->loc, absl::StrCat("module-level augmented assignment to '", name,
                                             "' is not supported"));
    }
    // Evaluate the defining statement in the module frame, outside any kernel.
    m.evaluating = true;
    int saved_frame = std::exchange(frame_, 0);
    bool saved_in_kernel = std::exchange(in_kernel_, false);
    int saved_scopes = std::exchange(open_scopes_, 0);
    absl::StatusOr<Flow> r = ExecStmt(*m.stmt);
    open_scopes_ = saved_scopes;
    in_kernel_ = saved_in_kernel;
    frame_ = saved_frame;
    m.evaluating = false;
    RETURN_IF_ERROR(r.status());
    if (auto it2 = globals.find(name); it2 != globals.end()) return it2->second;
    return Error(loc, absl::StrCat("name '", name, "' is not defined"));
  }
  if (auto it = broken_names_.find(name); it != broken_names_.end()) {
    return absl::InvalidArgumentError(it->second->message);
  }
  if (IsPythonBuiltin(name)) return Value::Builtin(name);
  return Error(loc, absl::StrCat("name '", name, "' is not defined"));
}

// ---------------------------------------------------------------------------
// Statements.

absl::StatusOr<Evaluator::Flow> Evaluator::ExecBlock(const std::vector<PyStmt>& body) {
  for (const PyStmt& s : body) {
    ASSIGN_OR_RETURN(Flow f, ExecStmt(s));
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecStmt(const PyStmt& s) {
  RETURN_IF_ERROR(EnterNesting(s.loc));
  struct Leave {
    Evaluator* e;
    ~Leave() { e->LeaveNesting(); }
  } leave{this};
  RETURN_IF_ERROR(Step(s.loc));
  switch (s.kind) {
  case PyStmtKind::kExpr: {
    const PyExpr& e = s.exprs[0];
    if (e.kind == PyExprKind::kString && !e.is_fstring) return Flow::kNormal; // docstring
    ASSIGN_OR_RETURN(Value v, Eval(e));
    (void)v;
    return Flow::kNormal;
  }
  case PyStmtKind::kAssign:
    return ExecAssign(s);
  case PyStmtKind::kAugAssign:
    return ExecAugAssign(s);
  case PyStmtKind::kAnnAssign:
    return ExecAnnAssign(s);
  case PyStmtKind::kFor:
    return ExecFor(s);
  case PyStmtKind::kWhile:
    return ExecWhile(s);
  case PyStmtKind::kIf:
    return ExecIf(s);
  case PyStmtKind::kWith:
    return ExecWith(s);
  case PyStmtKind::kFunctionDef:
    // A dotted entry's next function ends the run of its enclosing body.
    if (StopsAtNestedEntry(s)) return Flow::kReturn;
    return ExecFunctionDef(s);
  case PyStmtKind::kClassDef:
    return Error(s.loc, "class definitions are not supported here");
  case PyStmtKind::kReturn: {
    if (in_kernel_) {
      if (user_calls_in_kernel_ == 0) {
        return Error(s.loc, "'return' inside T.Kernel is not supported");
      }
      if (open_scopes_ > call_scope_base_) {
        return Error(s.loc, "'return' inside a run-time loop or branch is not supported");
      }
    }
    if (s.exprs.empty()) {
      return_value_ = Value::None();
    } else {
      ASSIGN_OR_RETURN(return_value_, Eval(s.exprs[0]));
    }
    return Flow::kReturn;
  }
  case PyStmtKind::kPass:
    return Flow::kNormal;
  case PyStmtKind::kBreak:
  case PyStmtKind::kContinue: {
    const char* what = s.kind == PyStmtKind::kBreak ? "break" : "continue";
    if (in_kernel_) {
      return Error(s.loc, absl::StrCat("'", what, "' is not supported inside T.Kernel"));
    }
    if (ct_loop_depth_ == 0) return Error(s.loc, absl::StrCat("'", what, "' outside loop"));
    return s.kind == PyStmtKind::kBreak ? Flow::kBreak : Flow::kContinue;
  }
  case PyStmtKind::kAssert: {
    ASSIGN_OR_RETURN(Value test, EvalScalar(s.exprs[0]));
    bool known = true;
    bool ok = Truthy(test, &known);
    if (!known) {
      // Checked when the kernel runs (Python evaluates the message only on
      // failure; here it must be known now, or the check goes without it).
      std::optional<Value> msg;
      if (s.exprs.size() > 1) {
        absl::StatusOr<Value> m = Eval(s.exprs[1]);
        if (m.ok()) msg = *m;
      }
      RETURN_IF_ERROR(EmitRuntimeCheck(test, msg, s.loc, "assert"));
      return Flow::kNormal;
    }
    if (ok) return Flow::kNormal;
    std::string message = "assertion failed";
    if (s.exprs.size() > 1) {
      ASSIGN_OR_RETURN(Value msg, Eval(s.exprs[1]));
      if (msg.kind == ValueKind::kString && IsPrintableText(msg.s)) {
        absl::StrAppend(&message, ": ", msg.s.substr(0, 200));
      } else if (msg.is_number()) {
        absl::StrAppend(&message, ": ", Describe(msg));
      }
    }
    return Error(s.loc, message);
  }
  case PyStmtKind::kImport:
  case PyStmtKind::kImportFrom:
    return ExecImport(s, frame_);
  case PyStmtKind::kGlobal:
    return Error(s.loc, "'global' statements are not supported");
  case PyStmtKind::kNonlocal:
    return Error(s.loc, "'nonlocal' statements are not supported");
  case PyStmtKind::kDel:
    return Error(s.loc, "'del' statements are not supported");
  case PyStmtKind::kRaise: {
    std::string what;
    if (!s.exprs.empty()) {
      std::string n = DottedName(s.exprs[0]);
      if (!n.empty()) what = absl::StrCat(" ", n);
    }
    return Error(s.loc, absl::StrCat("exception", what, " raised at compile time"));
  }
  case PyStmtKind::kTry:
  case PyStmtKind::kExcept:
    return Error(s.loc, "'try' statements are not supported");
  }
  return Error(s.loc, "unsupported statement");
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecAssign(const PyStmt& s) {
  const PyExpr& value = s.exprs[0];
  if (s.targets.size() == 1 && s.targets[0].kind == PyExprKind::kName &&
      value.kind == PyExprKind::kCall) {
    name_hint_ = s.targets[0].str;
  }
  absl::StatusOr<Value> v = Eval(value);
  name_hint_.clear();
  RETURN_IF_ERROR(v.status());
  for (const PyExpr& t : s.targets) RETURN_IF_ERROR(Assign(t, *v));
  return Flow::kNormal;
}

absl::Status Evaluator::Assign(const PyExpr& target, const Value& v) {
  switch (target.kind) {
  case PyExprKind::kName: {
    if (in_kernel_ && v.kind != ValueKind::kBuffer) {
      std::optional<Value> cur = LookupLocal(target.str);
      if (cur && cur->kind == ValueKind::kBuffer &&
          buffers_[cur->i].buffer.scope == ir::Scope::kVar) {
        // `x = e` on a T.alloc_var stores into the variable.
        Value access;
        access.kind = ValueKind::kAccess;
        access.i = cur->i;
        access.items = NewValueList(ValueList{Value::Int(0)});
        return StoreTo(access, v, target.loc);
      }
    }
    Value bound = v;
    if (v.kind == ValueKind::kAccess) {
      // A name bound to an element keeps the loaded value (TileLang binds
      // scalar loads; regions stay regions).
      bool has_slice = false;
      for (const Value& x : v.elts()) has_slice |= x.kind == ValueKind::kSlice;
      if (!has_slice) {
        ASSIGN_OR_RETURN(bound, Materialize(v, target.loc));
      }
    }
    if (in_kernel_) RETURN_IF_ERROR(CheckRebind(target.str, target.loc));
    Bind(target.str, std::move(bound));
    return absl::OkStatus();
  }
  case PyExprKind::kTuple:
  case PyExprKind::kList: {
    if (!v.is_sequence()) {
      return Error(target.loc, absl::StrCat("cannot unpack a ", TypeName(v), " value"));
    }
    const ValueList& elts = v.elts();
    for (const PyExpr& t : target.elts) {
      if (t.kind == PyExprKind::kStarred) {
        return Error(t.loc, "starred assignment targets are not supported");
      }
    }
    if (elts.size() != target.elts.size()) {
      return Error(target.loc, absl::StrCat("cannot unpack ", elts.size(), " values into ",
                                            target.elts.size(), " names"));
    }
    ValueList copy = elts; // `a, b = b, a` reads before it writes
    for (size_t k = 0; k < copy.size(); ++k) RETURN_IF_ERROR(Assign(target.elts[k], copy[k]));
    return absl::OkStatus();
  }
  case PyExprKind::kSubscript: {
    ASSIGN_OR_RETURN(Value obj, Eval(target.elts[0]));
    if (obj.kind == ValueKind::kBuffer) {
      ASSIGN_OR_RETURN(Value access, EvalSubscript(target));
      return StoreTo(access, v, target.loc);
    }
    if (obj.kind == ValueKind::kList) {
      ASSIGN_OR_RETURN(Value idx, EvalScalar(target.elts[1]));
      if (idx.kind != ValueKind::kInt) return Error(target.loc, "list index must be an int");
      int64_t n = static_cast<int64_t>(obj.items->size());
      int64_t k = idx.i < 0 ? idx.i + n : idx.i;
      if (k < 0 || k >= n) return Error(target.loc, "list assignment index out of range");
      (*obj.items)[k] = v;
      return absl::OkStatus();
    }
    if (obj.kind == ValueKind::kDict) {
      ASSIGN_OR_RETURN(Value key, EvalScalar(target.elts[1]));
      RETURN_IF_ERROR(ChargeScan(target.loc, obj.items->size()));
      for (size_t k = 0; k < obj.items->size(); ++k) {
        bool known = true;
        ASSIGN_OR_RETURN(bool eq, Equals((*obj.items)[k], key, &known, target.loc));
        if (eq && known) {
          (*obj.values)[k] = v;
          return absl::OkStatus();
        }
      }
      obj.items->push_back(key);
      obj.values->push_back(v);
      return absl::OkStatus();
    }
    return Error(target.loc,
                 absl::StrCat("'", TypeName(obj), "' object does not support item assignment"));
  }
  case PyExprKind::kAttribute:
    return Error(target.loc, "assignment to attributes is not supported");
  default:
    return Error(target.loc, "unsupported assignment target");
  }
}

absl::Status Evaluator::StoreTo(const Value& raw, const Value& v, Loc loc) {
  ASSIGN_OR_RETURN(Value access, ResolveView(raw, loc, /*store=*/true));
  const ir::Buffer& buf = buffers_[access.i].buffer;
  if (!in_kernel_) {
    return Error(loc, absl::StrCat("store to buffer '", buf.name,
                                   "' is only allowed inside a T.Kernel block"));
  }
  ASSIGN_OR_RETURN(std::vector<ir::Expr> indices, ScalarIndices(access, loc));
  ASSIGN_OR_RETURN(Value value, Materialize(v, loc));
  if (!value.is_number() && !value.is_expr()) {
    return Error(loc,
                 absl::StrCat("cannot store a ", TypeName(value), " into buffer '", buf.name, "'"));
  }
  ASSIGN_OR_RETURN(ir::Expr e, ToExprOf(Ctx(loc), value, buf.dtype));
  ir::Stmt st;
  st.kind = ir::StmtKind::kStore;
  st.loc = loc;
  st.name = buf.name;
  st.indices = std::move(indices);
  st.value = std::move(e);
  st.has_value = true;
  Emit(std::move(st));
  return absl::OkStatus();
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecAugAssign(const PyStmt& s) {
  const PyExpr& target = s.targets[0];
  ASSIGN_OR_RETURN(Value rhs, EvalScalar(s.exprs[0]));
  if (target.kind == PyExprKind::kName) {
    std::optional<Value> raw = LookupLocal(target.str);
    if (raw && raw->kind == ValueKind::kBuffer &&
        buffers_[raw->i].buffer.scope == ir::Scope::kVar) {
      Value access;
      access.kind = ValueKind::kAccess;
      access.i = raw->i;
      access.items = NewValueList(ValueList{Value::Int(0)});
      ASSIGN_OR_RETURN(Value cur, Materialize(access, target.loc));
      ASSIGN_OR_RETURN(Value next, ApplyBinary(Ctx(s.loc), s.str, cur, rhs));
      RETURN_IF_ERROR(StoreTo(access, next, s.loc));
      return Flow::kNormal;
    }
    ASSIGN_OR_RETURN(Value cur, EvalScalar(target));
    if (cur.kind == ValueKind::kList && s.str == "+") {
      // list += iterable extends in place.
      ASSIGN_OR_RETURN(std::vector<Value> more, Iterate(rhs, s.loc));
      cur.items->insert(cur.items->end(), more.begin(), more.end());
      return Flow::kNormal;
    }
    ASSIGN_OR_RETURN(Value next, ApplyBinary(Ctx(s.loc), s.str, cur, rhs));
    if (in_kernel_) RETURN_IF_ERROR(CheckRebind(target.str, target.loc));
    Bind(target.str, std::move(next));
    return Flow::kNormal;
  }
  if (target.kind == PyExprKind::kSubscript) {
    ASSIGN_OR_RETURN(Value obj, Eval(target.elts[0]));
    if (obj.kind == ValueKind::kBuffer) {
      ASSIGN_OR_RETURN(Value access, EvalSubscript(target));
      ASSIGN_OR_RETURN(Value cur, Materialize(access, target.loc));
      ASSIGN_OR_RETURN(Value next, ApplyBinary(Ctx(s.loc), s.str, cur, rhs));
      RETURN_IF_ERROR(StoreTo(access, next, s.loc));
      return Flow::kNormal;
    }
    ASSIGN_OR_RETURN(Value cur, EvalScalar(target));
    ASSIGN_OR_RETURN(Value next, ApplyBinary(Ctx(s.loc), s.str, cur, rhs));
    RETURN_IF_ERROR(Assign(target, next));
    return Flow::kNormal;
  }
  return Error(target.loc, "unsupported augmented assignment target");
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecAnnAssign(const PyStmt& s) {
  const PyExpr& target = s.targets[0];
  if (s.exprs.size() < 2) {
    // `A: T.Tensor((M, K), dtype)` declares a parameter of the jit form.
    if (target.kind != PyExprKind::kName) return Flow::kNormal;
    const std::string& name = target.str;
    bool pending = pending_tensor_params_.contains(name) && frame_ == entry_frame_ && !in_kernel_;
    if (!pending) {
      // A plain Python annotation means nothing here, unless it declares a
      // tensor that is not a parameter.
      absl::StatusOr<Value> type = Eval(s.exprs[0]);
      if (type.ok() && type->kind == ValueKind::kTensorType) {
        return Error(target.loc, absl::StrCat("'", name, "' is not a parameter of '",
                                              entry_ ? entry_->str : "", "'"));
      }
      return Flow::kNormal;
    }
    ASSIGN_OR_RETURN(Value type, Eval(s.exprs[0]));
    pending_tensor_params_.erase(name);
    int pos = entry_param_index_[name];
    if (type.kind == ValueKind::kTensorType) {
      ASSIGN_OR_RETURN(int id, AddParamBuffer(name, type, target.loc, false));
      ir::Param p;
      p.buffer = buffers_[id].buffer;
      p.user_name = buffers_[id].user_name;
      jit_inputs_.emplace_back(pos, std::move(p));
      Bind(name, Value::Buffer(id));
      return Flow::kNormal;
    }
    if (type.kind == ValueKind::kDType) {
      ir::Param p;
      ASSIGN_OR_RETURN(Value v, AddScalarParam(name, type.dtype, target.loc, &p));
      jit_inputs_.emplace_back(pos, std::move(p));
      Bind(name, std::move(v));
      return Flow::kNormal;
    }
    return Error(s.exprs[0].loc, absl::StrCat("parameter '", name,
                                              "' must be annotated with T.Tensor(...) or a "
                                              "scalar dtype, not ",
                                              TypeName(type)));
  }
  Value type;
  if (in_kernel_ && target.kind == PyExprKind::kName) {
    ASSIGN_OR_RETURN(type, Eval(s.exprs[0]));
  }
  if (type.kind == ValueKind::kDType) {
    // `x: T.int32 = e` inside the kernel declares a mutable scalar.
    std::vector<Arg> args;
    args.push_back(Arg{type, s.exprs[0].loc, "", {}});
    ASSIGN_OR_RETURN(Value init, EvalScalar(s.exprs[1]));
    args.push_back(Arg{init, s.exprs[1].loc, "init", s.exprs[1].loc});
    call_hint_ = target.str;
    ASSIGN_OR_RETURN(Value buf, Allocate("T.alloc_var", args, s.loc));
    Bind(target.str, std::move(buf));
    return Flow::kNormal;
  }
  ASSIGN_OR_RETURN(Value v, Eval(s.exprs[1]));
  RETURN_IF_ERROR(Assign(target, v));
  return Flow::kNormal;
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecIf(const PyStmt& s) {
  ASSIGN_OR_RETURN(Value test, EvalScalar(s.exprs[0]));
  bool known = true;
  bool taken = Truthy(test, &known);
  if (known) return ExecBlock(taken ? s.body : s.orelse);
  if (!test.is_expr()) {
    return Error(s.exprs[0].loc,
                 absl::StrCat("cannot use a ", TypeName(test), " as an if condition"));
  }
  if (!in_kernel_) {
    return Error(s.exprs[0].loc,
                 "if condition is not known at compile time (only allowed inside T.Kernel)");
  }
  ir::Stmt st;
  st.kind = ir::StmtKind::kIf;
  st.loc = s.loc;
  ASSIGN_OR_RETURN(st.cond, ToCondition(Ctx(s.exprs[0].loc), test));
  std::vector<ir::Stmt>* saved = sink_;
  for (int branch = 0; branch < 2; ++branch) {
    const std::vector<PyStmt>& body = branch == 0 ? s.body : s.orelse;
    sink_ = branch == 0 ? &st.body : &st.else_body;
    size_t mark = OpenScope();
    absl::StatusOr<Flow> flow = ExecBlock(body);
    CloseScope(mark);
    if (!flow.ok()) {
      sink_ = saved;
      return flow.status();
    }
  }
  sink_ = saved;
  Emit(std::move(st));
  return Flow::kNormal;
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecWith(const PyStmt& s) {
  // One T.Kernel or T.ws, and besides it only context managers that do
  // nothing (TileLang's profiling ranges, iket.range): `with T.Kernel(...)
  // as bx, iket.range("k"):` runs as `with T.Kernel(...) as bx:`.
  size_t main_item = 0;
  if (s.exprs.size() > 1) {
    size_t mains = 0;
    for (size_t k = 0; k < s.exprs.size(); ++k) {
      const PyExpr& item = s.exprs[k];
      if (item.kind == PyExprKind::kCall) {
        ASSIGN_OR_RETURN(Value callee, Eval(item.elts[0]));
        if (callee.kind == ValueKind::kBuiltin && (callee.s == "T.Kernel" || callee.s == "T.ws")) {
          main_item = k;
          ++mains;
          continue;
        }
      }
      ASSIGN_OR_RETURN(Value v, Eval(item));
      if (v.kind != ValueKind::kOpaque || v.s.rfind("a profiling range", 0) != 0) {
        return Error(item.loc, absl::StrCat("a with statement may combine T.Kernel or T.ws only "
                                            "with no-op context managers (iket.range), not a ",
                                            TypeName(v)));
      }
      if (k < s.targets.size() && s.targets[k].kind != PyExprKind::kNone) {
        return Error(s.targets[k].loc, "'as' on a profiling range is not supported");
      }
    }
    if (mains != 1) {
      return Error(s.loc, "a with statement must have exactly one T.Kernel or T.ws");
    }
  }
  const PyExpr& cm = s.exprs[main_item];
  if (s.exprs.size() == 1 && IsTCall(cm, "attr")) return ExecThreadAllreduce(s, cm);
  if (cm.kind == PyExprKind::kCall) {
    ASSIGN_OR_RETURN(Value callee, Eval(cm.elts[0]));
    if (callee.kind == ValueKind::kBuiltin && callee.s == "T.Kernel") {
      static const PyExpr kNoTarget;
      return LowerKernel(s, cm, main_item < s.targets.size() ? s.targets[main_item] : kNoTarget);
    }
    if (callee.kind == ValueKind::kBuiltin && callee.s == "T.ws") {
      return LowerWarpSpecialize(s, cm);
    }
  }
  return Error(cm.loc, "only 'with T.Kernel(...)' and 'with T.ws(...)' are supported");
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecFunctionDef(const PyStmt& s) {
  bool prim = false;
  for (const PyExpr& d : s.decorators) {
    if (IsPrimFuncDecorator(d)) {
      prim = true;
      continue;
    }
    std::string n = DottedName(d);
    if (n == "T.macro" || n.ends_with("language.macro") || n == "macro") continue;
    return Error(d.loc, "unsupported decorator on a nested function");
  }
  if (prim) {
    // The first @T.prim_func is lowered where it is defined; another one
    // only in a second run that asks for it (Evaluator::LowerOnly).
    if (lower_only_ != nullptr ? &s == lower_only_ : !prim_func_lowered_) {
      RETURN_IF_ERROR(LowerPrimFunc(s));
    }
    Value v;
    v.kind = ValueKind::kPrimFunc;
    v.func = &s;
    Bind(s.str, std::move(v));
    return Flow::kNormal;
  }
  Value f;
  f.kind = ValueKind::kFunction;
  f.func = &s;
  f.i = frame_;
  Bind(s.str, std::move(f));
  return Flow::kNormal;
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecImport(const PyStmt& s, int frame) {
  int saved = std::exchange(frame_, frame);
  absl::Status status;
  if (s.kind == PyStmtKind::kImport) {
    for (size_t k = 0; k < s.names.size(); ++k) {
      const std::string& name = s.names[k];
      std::string alias = k < s.aliases.size() ? s.aliases[k] : "";
      if (!alias.empty()) {
        Bind(alias, Value::Module(CanonicalModule(name)));
      } else {
        std::string first = name.substr(0, name.find('.'));
        Bind(first, Value::Module(CanonicalModule(first)));
      }
    }
  } else {
    std::string module = CanonicalModule(s.str);
    for (size_t k = 0; k < s.names.size(); ++k) {
      const std::string& name = s.names[k];
      if (name == "*") continue;
      std::string alias = k < s.aliases.size() && !s.aliases[k].empty() ? s.aliases[k] : name;
      std::string path = absl::StrCat(module, ".", name);
      absl::StatusOr<Value> v = ResolveModuleAttr(path, s.loc);
      Bind(alias, v.ok() ? *std::move(v) : Value::Module(CanonicalModule(path)));
    }
  }
  frame_ = saved;
  RETURN_IF_ERROR(status);
  return Flow::kNormal;
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecCompileTimeFor(const PyStmt& s,
                                                              const Value& iterable) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(iterable, s.exprs[0].loc));
  ++ct_loop_depth_;
  absl::StatusOr<Flow> result = Flow::kNormal;
  for (const Value& item : items) {
    absl::Status st = Step(s.loc);
    if (st.ok()) st = Assign(s.targets[0], item);
    if (!st.ok()) {
      result = st;
      break;
    }
    absl::StatusOr<Flow> f = ExecBlock(s.body);
    if (!f.ok() || *f == Flow::kReturn) {
      result = f;
      break;
    }
    if (*f == Flow::kBreak) break;
  }
  --ct_loop_depth_;
  return result;
}

// A `while` runs at compile time: its test must be known each time round.
// Every iteration is a step of the budget, so `while True:` without a break
// ends with the budget's error instead of hanging.
absl::StatusOr<Evaluator::Flow> Evaluator::ExecWhile(const PyStmt& s) {
  ++ct_loop_depth_;
  absl::StatusOr<Flow> result = Flow::kNormal;
  bool broke = false;
  while (true) {
    if (absl::Status st = Step(s.loc); !st.ok()) {
      result = st;
      break;
    }
    absl::StatusOr<Value> test = EvalScalar(s.exprs[0]);
    if (!test.ok()) {
      result = test.status();
      break;
    }
    bool known = true;
    bool t = Truthy(*test, &known);
    if (!known) {
      result = Error(s.exprs[0].loc,
                     "a 'while' loop on a value only known at run time is not supported by Kiln "
                     "yet (use a T.serial loop over a bound with an 'if' inside)");
      break;
    }
    if (!t) break;
    absl::StatusOr<Flow> f = ExecBlock(s.body);
    if (!f.ok() || *f == Flow::kReturn) {
      result = f;
      break;
    }
    if (*f == Flow::kBreak) {
      broke = true;
      break;
    }
  }
  --ct_loop_depth_;
  if (result.ok() && *result == Flow::kNormal && !broke) return ExecBlock(s.orelse);
  return result;
}

} // namespace kiln::frontend
