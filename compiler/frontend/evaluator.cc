// Entry selection, parameter binding and statement execution.
#include "compiler/frontend/evaluator.h"

#include <algorithm>
#include <string>
#include <utility>

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
constexpr int64_t kMaxSteps = 2'000'000;

// The dotted text of a decorator's callee ("tilelang.jit", "T.prim_func"),
// empty when it is not a dotted name.
std::string DottedName(const PyExpr& e) {
  const PyExpr* x = &e;
  if (x->kind == PyExprKind::kCall && !x->elts.empty()) x = &x->elts[0];
  std::string out;
  while (x->kind == PyExprKind::kAttribute && !x->elts.empty()) {
    out = out.empty() ? x->str : absl::StrCat(x->str, ".", out);
    x = &x->elts[0];
  }
  if (x->kind != PyExprKind::kName) return "";
  return out.empty() ? x->str : absl::StrCat(x->str, ".", out);
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(),
                                                std::string(suffix)) == 0;
}

bool IsJitDecorator(const PyExpr& d) {
  std::string n = DottedName(d);
  return n == "jit" || EndsWith(n, ".jit");
}

bool IsPrimFuncDecorator(const PyExpr& d) {
  std::string n = DottedName(d);
  return n == "prim_func" || EndsWith(n, ".prim_func");
}

bool HasNestedPrimFunc(const std::vector<PyStmt>& body) {
  for (const PyStmt& s : body) {
    if (s.kind == PyStmtKind::kFunctionDef) {
      for (const PyExpr& d : s.decorators) {
        if (IsPrimFuncDecorator(d)) return true;
      }
      continue;
    }
    if (HasNestedPrimFunc(s.body) || HasNestedPrimFunc(s.orelse)) return true;
  }
  return false;
}

bool IsCandidate(const PyStmt& s) {
  if (s.kind != PyStmtKind::kFunctionDef) return false;
  for (const PyExpr& d : s.decorators) {
    if (IsJitDecorator(d) || IsPrimFuncDecorator(d)) return true;
  }
  return HasNestedPrimFunc(s.body);
}

// Names a target expression binds (a, (b, c), [d]).
void TargetNames(const PyExpr& t, std::vector<std::string>* out) {
  if (t.kind == PyExprKind::kName) {
    out->push_back(t.str);
  } else if (t.kind == PyExprKind::kTuple || t.kind == PyExprKind::kList) {
    for (const PyExpr& e : t.elts) TargetNames(e, out);
  } else if (t.kind == PyExprKind::kStarred && !t.elts.empty()) {
    TargetNames(t.elts[0], out);
  }
}

// Names annotated (`A: T.Tensor(...)`) anywhere in a function body outside
// nested defs: the tensor parameters of the @tilelang.jit form.
void AnnotatedNames(const std::vector<PyStmt>& body, absl::flat_hash_set<std::string>* out) {
  for (const PyStmt& s : body) {
    if (s.kind == PyStmtKind::kAnnAssign && s.exprs.size() == 1 && !s.targets.empty() &&
        s.targets[0].kind == PyExprKind::kName) {
      out->insert(s.targets[0].str);
    }
    if (s.kind == PyStmtKind::kFunctionDef || s.kind == PyStmtKind::kClassDef) continue;
    AnnotatedNames(s.body, out);
    AnnotatedNames(s.orelse, out);
  }
}

Value BindingToValue(const BindingValue& b) {
  switch (b.kind) {
    case BindingValue::Kind::kInt:
      return Value::Int(b.ival);
    case BindingValue::Kind::kFloat:
      return Value::Float(b.fval);
    case BindingValue::Kind::kBool:
      return Value::Bool(b.bval);
    case BindingValue::Kind::kString: {
      // "T.float16" / "tilelang.language.float16" name a dtype; plain
      // strings stay strings (a dtype name is accepted wherever a dtype is).
      std::string_view s = b.sval;
      for (std::string_view prefix : {"T.", "tilelang.language.", "torch."}) {
        if (s.substr(0, prefix.size()) == prefix) {
          std::optional<ir::DType> t = ParseDTypeAlias(s.substr(prefix.size()));
          if (t) return Value::DType(*t);
        }
      }
      return Value::Str(b.sval);
    }
  }
  return Value();
}

}  // namespace

Evaluator::Evaluator(const Module& module, const FrontendOptions& options)
    : module_(module), options_(options) {
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

absl::Status Evaluator::Step(Loc loc) {
  if (++steps_ > kMaxSteps) {
    return Error(loc, "compile-time evaluation takes too many steps (is there a huge loop?)");
  }
  return absl::OkStatus();
}

std::string Evaluator::UniqueName(std::string_view hint) {
  std::string base = IsIdentifier(hint) ? std::string(hint.substr(0, 64)) : "v";
  if (IsReservedIrName(base)) base += "_";
  std::string name = base;
  for (int k = 1; used_names_.contains(name); ++k) name = absl::StrCat(base, "_", k);
  used_names_.insert(name);
  return name;
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
  return undo_.size();
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
// Module and entry.

absl::Status Evaluator::IndexModule() {
  for (const BrokenStmt& b : module_.broken) {
    for (const std::string& n : b.defines) broken_names_.emplace(n, &b);
  }
  for (const PyStmt& s : module_.body) {
    switch (s.kind) {
      case PyStmtKind::kImport:
      case PyStmtKind::kImportFrom: {
        absl::StatusOr<Flow> r = ExecImport(s, 0);
        if (!r.ok()) {
          // An import the kernel may never use: fail only if it is used.
          for (const std::string& n : s.aliases.empty() ? s.names : s.aliases) {
            frames_[0]->vars[n] = Value::Opaque("unsupported import");
          }
        }
        break;
      }
      case PyStmtKind::kFunctionDef: {
        Value f;
        f.kind = ValueKind::kFunction;
        f.func = &s;
        f.i = 0;
        frames_[0]->vars[s.str] = f;
        broken_names_.erase(s.str);
        break;
      }
      case PyStmtKind::kClassDef:
        frames_[0]->vars[s.str] = Value::Opaque("class");
        break;
      case PyStmtKind::kAssign:
      case PyStmtKind::kAnnAssign:
      case PyStmtKind::kAugAssign: {
        if (s.kind == PyStmtKind::kAnnAssign && s.exprs.size() < 2) break;
        std::vector<std::string> names;
        for (const PyExpr& t : s.targets) TargetNames(t, &names);
        for (const std::string& n : names) {
          frames_[0]->vars.erase(n);
          module_names_[n] = ModuleName{&s, false};
          broken_names_.erase(n);
        }
        break;
      }
      default:
        break;  // top-level control flow and test drivers are not executed
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<const PyStmt*> Evaluator::SelectEntry() {
  std::vector<const PyStmt*> candidates;
  for (const PyStmt& s : module_.body) {
    if (IsCandidate(s)) candidates.push_back(&s);
  }
  auto names = [&] {
    std::vector<std::string> n;
    for (const PyStmt* c : candidates) n.push_back(c->str);
    return absl::StrJoin(n, ", ");
  };
  if (!options_.entry.empty()) {
    const PyStmt* found = nullptr;
    for (const PyStmt& s : module_.body) {
      if (s.kind == PyStmtKind::kFunctionDef && s.str == options_.entry) found = &s;
    }
    if (found) return found;
    if (auto it = broken_names_.find(options_.entry); it != broken_names_.end()) {
      return absl::InvalidArgumentError(it->second->message);
    }
    std::string entry = IsIdentifier(options_.entry) ? options_.entry : "<invalid name>";
    return Error(Loc{}, absl::StrCat("entry function '", entry, "' not found",
                                     candidates.empty() ? "" : "; candidates: ",
                                     candidates.empty() ? "" : names()));
  }
  if (candidates.size() == 1) return candidates[0];
  if (candidates.empty()) {
    if (!module_.broken.empty()) return absl::InvalidArgumentError(module_.broken[0].message);
    return Error(Loc{},
                 "no kernel function found (expected a function decorated with @tilelang.jit "
                 "or @T.prim_func, or one that defines a @T.prim_func)");
  }
  return Error(Loc{}, absl::StrCat("several kernel functions (", names(),
                                   "); choose one with the entry option"));
}

absl::StatusOr<ir::Program> Evaluator::Run() {
  RETURN_IF_ERROR(IndexModule());
  ASSIGN_OR_RETURN(const PyStmt* entry, SelectEntry());
  entry_ = entry;
  RETURN_IF_ERROR(RunEntry(*entry));
  program_.name = entry->str;
  program_.source_name = options_.file_name;
  return std::move(program_);
}

absl::Status Evaluator::ApplyJitDecorator(const PyExpr& call) {
  int saved = std::exchange(frame_, 0);
  absl::Status status;
  for (const Keyword& kw : call.keywords) {
    if (kw.name != "out_idx" && kw.name != "pass_configs") continue;
    absl::StatusOr<Value> v = Eval(kw.value[0]);
    if (!v.ok()) {
      status = v.status();
      break;
    }
    Loc loc = kw.value[0].loc;
    if (kw.name == "out_idx") {
      if (v->is_none()) continue;
      if (v->kind == ValueKind::kInt) {
        out_idx_.push_back(v->i);
        continue;
      }
      bool ok = v->is_sequence();
      for (const Value& x : v->elts()) ok = ok && x.kind == ValueKind::kInt;
      if (!ok) {
        status = Error(loc, "out_idx must be an int or a list of ints");
        break;
      }
      for (const Value& x : v->elts()) out_idx_.push_back(x.i);
      continue;
    }
    if (v->is_none()) continue;
    if (v->kind != ValueKind::kDict) {
      status = Error(loc, "pass_configs must be a dict");
      break;
    }
    for (size_t k = 0; k < v->elts().size(); ++k) {
      const Value& key = v->elts()[k];
      const Value& val = (*v->values)[k];
      if (key.kind != ValueKind::kString || !IsConfigKey(key.s)) {
        status = Error(loc, "pass_configs keys must be strings such as \"tl.enable_fast_math\"");
        break;
      }
      bool scalar = val.kind == ValueKind::kBool || val.kind == ValueKind::kInt ||
                    val.kind == ValueKind::kFloat ||
                    (val.kind == ValueKind::kString && IsSafeText(val.s));
      if (!scalar) {
        status = Error(loc, absl::StrCat("pass_configs value for '", key.s,
                                         "' must be a bool, number or simple string"));
        break;
      }
      program_.attrs[key.s] = AttrText(val);
    }
    if (!status.ok()) break;
  }
  frame_ = saved;
  return status;
}

absl::Status Evaluator::BindEntryParams(const PyStmt& entry, int frame) {
  absl::flat_hash_set<std::string> annotated;
  AnnotatedNames(entry.body, &annotated);
  int saved = std::exchange(frame_, frame);
  for (size_t k = 0; k < entry.params.size(); ++k) {
    const Param& p = entry.params[k];
    entry_param_index_[p.name] = static_cast<int>(k);
    if (p.kind == Param::kVarArgs) {
      Bind(p.name, Value::Tuple({}));
      continue;
    }
    if (p.kind == Param::kKwArgs) {
      Value d;
      d.kind = ValueKind::kDict;
      d.items = std::make_shared<ValueList>();
      d.values = std::make_shared<ValueList>();
      Bind(p.name, d);
      continue;
    }
    const BindingValue* binding = nullptr;
    for (const auto& [name, value] : options_.bindings) {
      if (name == p.name) binding = &value;
    }
    if (annotated.contains(p.name)) {
      if (binding) {
        frame_ = saved;
        return Error(p.loc, absl::StrCat("parameter '", p.name,
                                         "' is a tensor (annotated in the body) and cannot be "
                                         "bound"));
      }
      pending_tensor_params_.insert(p.name);
      continue;
    }
    binding_names_valid_.push_back(p.name);
    if (binding) {
      bindings_used_.insert(p.name);
      Bind(p.name, BindingToValue(*binding));
      continue;
    }
    if (!p.default_value.empty()) {
      // Defaults are evaluated where the function is defined.
      frame_ = 0;
      absl::StatusOr<Value> v = Eval(p.default_value[0]);
      frame_ = frame;
      if (!v.ok()) {
        frame_ = saved;
        return v.status();
      }
      Bind(p.name, *std::move(v));
      continue;
    }
    frame_ = saved;
    return Error(p.loc,
                 absl::StrCat("parameter '", p.name, "' has no binding and no default"));
  }
  frame_ = saved;
  return absl::OkStatus();
}

absl::Status Evaluator::CheckBindingsUsed() {
  for (const auto& [name, value] : options_.bindings) {
    if (bindings_used_.contains(name)) continue;
    std::vector<std::string> valid = binding_names_valid_;
    std::sort(valid.begin(), valid.end());
    valid.erase(std::unique(valid.begin(), valid.end()), valid.end());
    std::string shown = IsIdentifier(name) ? name : "<invalid name>";
    return Error(entry_->loc, absl::StrCat("unknown binding '", shown, "' for '", entry_->str,
                                     "'; valid names: ",
                                     valid.empty() ? "(none)" : absl::StrJoin(valid, ", ")));
  }
  return absl::OkStatus();
}

absl::Status Evaluator::RunEntry(const PyStmt& entry) {
  bool is_prim = false;
  for (const PyExpr& d : entry.decorators) {
    if (IsPrimFuncDecorator(d)) {
      is_prim = true;
    } else if (IsJitDecorator(d) && d.kind == PyExprKind::kCall) {
      RETURN_IF_ERROR(ApplyJitDecorator(d));
    }
  }
  if (is_prim) {
    frame_ = 0;
    RETURN_IF_ERROR(LowerPrimFunc(entry));
  } else {
    frames_.push_back(std::make_unique<Frame>());
    int frame = static_cast<int>(frames_.size()) - 1;
    frames_[frame]->parent = 0;
    RETURN_IF_ERROR(BindEntryParams(entry, frame));
    frame_ = frame;
    ASSIGN_OR_RETURN(Flow flow, ExecBlock(entry.body));
    (void)flow;
    frame_ = 0;
    if (!prim_func_lowered_) {
      if (!kernel_seen_) {
        return Error(entry.loc, absl::StrCat("'", entry.str, "' defines no T.Kernel"));
      }
      // @tilelang.jit form: inputs in parameter order, then T.empty outputs.
      std::stable_sort(jit_inputs_.begin(), jit_inputs_.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto& [pos, param] : jit_inputs_) program_.params.push_back(std::move(param));
      for (ir::Param& p : jit_outputs_) program_.params.push_back(std::move(p));
    } else if (!jit_outputs_.empty()) {
      return Error(entry.loc, "T.empty cannot be combined with a @T.prim_func");
    }
  }
  RETURN_IF_ERROR(CheckBindingsUsed());
  int n = static_cast<int>(program_.params.size());
  for (int64_t idx : out_idx_) {
    int64_t k = idx < 0 ? idx + n : idx;
    if (k < 0 || k >= n) {
      return Error(entry.loc, absl::StrCat("out_idx ", idx, " is out of range for ", n,
                                           " kernel parameters"));
    }
    program_.params[k].is_output = true;
  }
  return absl::OkStatus();
}

absl::Status Evaluator::LowerPrimFunc(const PyStmt& def) {
  if (prim_func_lowered_) {
    return Error(def.loc, "only one @T.prim_func per kernel function is supported");
  }
  if (in_kernel_) return Error(def.loc, "@T.prim_func inside T.Kernel is not supported");
  frames_.push_back(std::make_unique<Frame>());
  int frame = static_cast<int>(frames_.size()) - 1;
  frames_[frame]->parent = frame_;
  for (const Param& p : def.params) {
    if (p.kind == Param::kVarArgs || p.kind == Param::kKwArgs) {
      return Error(p.loc, "*args and **kwargs are not supported in a @T.prim_func");
    }
    if (p.annotation.empty()) {
      return Error(p.loc, absl::StrCat("parameter '", p.name,
                                       "' of a @T.prim_func needs a type annotation such as "
                                       "T.Tensor((M, N), dtype) or T.int32"));
    }
    ASSIGN_OR_RETURN(Value type, Eval(p.annotation[0]));
    Value bound;
    if (type.kind == ValueKind::kTensorType) {
      ASSIGN_OR_RETURN(int id, AddParamBuffer(p.name, type, p.loc, false));
      ir::Param param;
      param.buffer = buffers_[id].buffer;
      program_.params.push_back(std::move(param));
      bound = Value::Buffer(id);
    } else if (type.kind == ValueKind::kDType ||
               (type.kind == ValueKind::kString && ParseDTypeAlias(type.s))) {
      ASSIGN_OR_RETURN(ir::DType t, ToDType(type, p.annotation[0].loc));
      ir::Param param;
      ASSIGN_OR_RETURN(bound, AddScalarParam(p.name, t, p.loc, &param));
      program_.params.push_back(std::move(param));
    } else {
      return Error(p.annotation[0].loc,
                   absl::StrCat("parameter '", p.name, "' must be annotated with T.Tensor(...), ",
                                "T.Buffer(...) or a scalar dtype, not ", TypeName(type)));
    }
    frames_[frame]->vars[p.name] = std::move(bound);
  }
  int saved = std::exchange(frame_, frame);
  absl::StatusOr<Flow> flow = ExecBlock(def.body);
  frame_ = saved;
  RETURN_IF_ERROR(flow.status());
  if (!kernel_seen_) {
    return Error(def.loc, absl::StrCat("@T.prim_func '", def.str, "' defines no T.Kernel"));
  }
  prim_func_lowered_ = true;
  prim_func_ = &def;
  return absl::OkStatus();
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
      if (e.kind == PyExprKind::kString && !e.is_fstring) return Flow::kNormal;  // docstring
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
      return Error(s.loc, "'while' loops are not supported");
    case PyStmtKind::kIf:
      return ExecIf(s);
    case PyStmtKind::kWith:
      return ExecWith(s);
    case PyStmtKind::kFunctionDef:
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
        return Error(s.loc, "assert on a value only known at run time is not supported");
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
          access.items = std::make_shared<ValueList>(ValueList{Value::Int(0)});
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
      ValueList copy = elts;  // `a, b = b, a` reads before it writes
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
        for (size_t k = 0; k < obj.items->size(); ++k) {
          bool known = true;
          if (PyEquals((*obj.items)[k], key, &known) && known) {
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

absl::Status Evaluator::StoreTo(const Value& access, const Value& v, Loc loc) {
  const ir::Buffer& buf = buffers_[access.i].buffer;
  if (!in_kernel_) {
    return Error(loc, absl::StrCat("store to buffer '", buf.name,
                                   "' is only allowed inside a T.Kernel block"));
  }
  ASSIGN_OR_RETURN(std::vector<ir::Expr> indices, ScalarIndices(access, loc));
  ASSIGN_OR_RETURN(Value value, Materialize(v, loc));
  if (!value.is_number() && !value.is_expr()) {
    return Error(loc, absl::StrCat("cannot store a ", TypeName(value), " into buffer '",
                                   buf.name, "'"));
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
      access.items = std::make_shared<ValueList>(ValueList{Value::Int(0)});
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
  ASSIGN_OR_RETURN(Value type, Eval(s.exprs[0]));
  if (s.exprs.size() < 2) {
    // `A: T.Tensor((M, K), dtype)` declares a parameter of the jit form.
    if (target.kind != PyExprKind::kName) return Flow::kNormal;
    const std::string& name = target.str;
    bool pending = pending_tensor_params_.contains(name) && frame_ != 0 &&
                   frames_[frame_]->parent == 0 && !in_kernel_;
    if (!pending) {
      if (type.kind == ValueKind::kTensorType) {
        return Error(target.loc, absl::StrCat("'", name, "' is not a parameter of '",
                                              entry_ ? entry_->str : "", "'"));
      }
      return Flow::kNormal;  // a plain Python annotation
    }
    pending_tensor_params_.erase(name);
    int pos = entry_param_index_[name];
    if (type.kind == ValueKind::kTensorType) {
      ASSIGN_OR_RETURN(int id, AddParamBuffer(name, type, target.loc, false));
      ir::Param p;
      p.buffer = buffers_[id].buffer;
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
  if (in_kernel_ && target.kind == PyExprKind::kName &&
      (type.kind == ValueKind::kDType)) {
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
  if (s.exprs.size() != 1) {
    return Error(s.loc, "a with statement must have exactly one context manager (T.Kernel)");
  }
  const PyExpr& cm = s.exprs[0];
  if (cm.kind == PyExprKind::kCall) {
    ASSIGN_OR_RETURN(Value callee, Eval(cm.elts[0]));
    if (callee.kind == ValueKind::kBuiltin && callee.s == "T.Kernel") {
      return LowerKernel(s, cm, s.targets[0]);
    }
  }
  return Error(cm.loc, "only 'with T.Kernel(...)' is supported");
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecFunctionDef(const PyStmt& s) {
  bool prim = false;
  for (const PyExpr& d : s.decorators) {
    if (IsPrimFuncDecorator(d)) {
      prim = true;
      continue;
    }
    std::string n = DottedName(d);
    if (n == "T.macro" || EndsWith(n, "language.macro") || n == "macro") continue;
    return Error(d.loc, "unsupported decorator on a nested function");
  }
  if (prim) {
    RETURN_IF_ERROR(LowerPrimFunc(s));
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

}  // namespace kiln::frontend
