// Entry selection, parameter binding, @T.prim_func lowering and the
// module-level name index.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/frontend/names.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "util/status_macros.h"

namespace kiln::frontend {
namespace {

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

// The function definitions in `body`, looking through control flow but not
// into nested functions or classes: the functions that running `body`
// defines. Only those named `name` when it is not empty.
void NestedDefs(const std::vector<PyStmt>& body, const std::string& name,
                std::vector<const PyStmt*>* out) {
  for (const PyStmt& s : body) {
    if (s.kind == PyStmtKind::kFunctionDef) {
      if (name.empty() || s.str == name) out->push_back(&s);
      continue;
    }
    if (s.kind == PyStmtKind::kClassDef) continue;
    NestedDefs(s.body, name, out);
    NestedDefs(s.orelse, name, out);
    NestedDefs(s.handlers, name, out);
    NestedDefs(s.finalbody, name, out);
  }
}

// "a, b, c" of the names of `defs`, each once, in order.
std::string DefNames(const std::vector<const PyStmt*>& defs) {
  std::vector<std::string> names;
  for (const PyStmt* d : defs) {
    if (std::find(names.begin(), names.end(), d->str) == names.end()) names.push_back(d->str);
  }
  return absl::StrJoin(names, ", ");
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
  case BindingValue::Kind::kIntList: {
    ValueList items;
    for (int64_t i : b.ivals) items.push_back(Value::Int(i));
    return b.tuple ? Value::Tuple(std::move(items)) : Value::List(std::move(items));
  }
  }
  return Value();
}

} // namespace

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
      break; // top-level control flow and test drivers are not executed
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
    std::vector<std::string> all;
    for (const PyStmt* c : candidates) all.push_back(c->str);
    for (std::string& n : NestedCandidates()) all.push_back(std::move(n));
    return Error(Loc{},
                 absl::StrCat("entry function '", entry, "' not found",
                              all.empty() ? "" : "; candidates: ", absl::StrJoin(all, ", ")));
  }
  if (candidates.size() == 1) return candidates[0];
  if (candidates.empty()) {
    if (!module_.broken.empty()) return absl::InvalidArgumentError(module_.broken[0].message);
    std::vector<std::string> nested = NestedCandidates();
    if (!nested.empty()) {
      return Error(Loc{},
                   absl::StrCat("no module-level kernel function; kernels defined inside "
                                "functions: ",
                                absl::StrJoin(nested, ", "),
                                " (name one with the entry option, e.g. '", nested[0], "')"));
    }
    return Error(Loc{},
                 "no kernel function found (expected a function decorated with @tilelang.jit "
                 "or @T.prim_func, or one that defines a @T.prim_func)");
  }
  return Error(Loc{}, absl::StrCat("several kernel functions (", names(),
                                   "); choose one with the entry option"));
}

std::vector<std::string> Evaluator::NestedCandidates() const {
  std::vector<std::string> out;
  for (const PyStmt& s : module_.body) {
    // A kernel function's own nested @T.prim_func is its kernel, not another.
    if (s.kind != PyStmtKind::kFunctionDef || IsCandidate(s)) continue;
    std::vector<const PyStmt*> defs;
    NestedDefs(s.body, "", &defs);
    for (const PyStmt* d : defs) {
      std::string name = absl::StrCat(s.str, ".", d->str);
      if (IsCandidate(*d) && std::find(out.begin(), out.end(), name) == out.end()) {
        out.push_back(std::move(name));
      }
    }
  }
  return out;
}

std::string Evaluator::EntryDisplayName() const {
  if (options_.entry.find('.') != std::string::npos) return options_.entry;
  return entry_ ? entry_->str : options_.entry;
}

namespace {

// The parts of a dotted entry ("outer.inner"); an error unless each is an
// identifier. The entry is shown only when it is made of name characters
// and dots (a client's text in a diagnostic).
absl::StatusOr<std::vector<std::string>> SplitDottedEntry(const std::string& entry,
                                                          const std::string& file) {
  std::vector<std::string> path = absl::StrSplit(entry, '.');
  bool ok = true;
  bool showable = entry.size() <= 256;
  for (const std::string& part : path) {
    ok = ok && IsIdentifier(part);
    showable = showable && (part.empty() || IsIdentifier(absl::StrCat("_", part)));
  }
  if (ok) return path;
  return absl::InvalidArgumentError(absl::StrCat(
      file, ": entry '", showable ? entry : "<invalid name>",
      "' is neither a function name nor a dotted path of nested functions (outer.inner)"));
}

} // namespace

bool Evaluator::StopsAtNestedEntry(const PyStmt& def) {
  if (nested_run_frame_ < 0 || frame_ != nested_run_frame_) return false;
  if (std::find(nested_stop_defs_.begin(), nested_stop_defs_.end(), &def) ==
      nested_stop_defs_.end()) {
    return false;
  }
  nested_reached_ = &def;
  return true;
}

namespace {

// The module-level function `name` (the last definition, as Python binds
// it), or nullptr.
const PyStmt* ModuleFunction(const Module& module, const std::string& name) {
  const PyStmt* found = nullptr;
  for (const PyStmt& s : module.body) {
    if (s.kind == PyStmtKind::kFunctionDef && s.str == name) found = &s;
  }
  return found;
}

// The definitions of `name` that running `fn` (called `prefix` in the
// entry) may reach; an error naming the functions it defines when none.
absl::StatusOr<std::vector<const PyStmt*>> DefsNamed(const PyStmt& fn, const std::string& prefix,
                                                     const std::string& name,
                                                     const std::string& file) {
  std::vector<const PyStmt*> next;
  NestedDefs(fn.body, name, &next);
  if (!next.empty()) return next;
  std::vector<const PyStmt*> defined;
  NestedDefs(fn.body, "", &defined);
  return ir::ErrorAt(file, fn.loc,
                     absl::StrCat("'", prefix, "' defines no function '", name, "'",
                                  defined.empty() ? " (it defines no functions)" : "; it defines: ",
                                  DefNames(defined)));
}

} // namespace

absl::Status Evaluator::OuterNotFound(const std::string& name) const {
  if (auto it = broken_names_.find(name); it != broken_names_.end()) {
    return absl::InvalidArgumentError(it->second->message);
  }
  std::vector<std::string> nested = NestedCandidates();
  return Error(Loc{}, absl::StrCat("function '", name, "' of entry '", options_.entry,
                                   "' not found at module level",
                                   nested.empty() ? "" : "; kernels defined inside functions: ",
                                   absl::StrJoin(nested, ", ")));
}

absl::StatusOr<const PyStmt*> Evaluator::RunToNestedEntry(const std::vector<std::string>& path) {
  const PyStmt* fn = ModuleFunction(module_, path[0]);
  if (fn == nullptr) return OuterNotFound(path[0]);
  int def_frame = 0;
  std::string prefix = path[0];
  for (size_t level = 1; level < path.size(); ++level) {
    const std::string& next_name = path[level];
    ASSIGN_OR_RETURN(std::vector<const PyStmt*> next,
                     DefsNamed(*fn, prefix, next_name, options_.file_name));
    // Run `fn` as a call would, its parameters bound from the bindings,
    // until it reaches a definition of `next_name`.
    RETURN_IF_ERROR(budget_.Charge(fn->loc, kCallSteps, kFrameBytes));
    frames_.push_back(std::make_unique<Frame>());
    int frame = static_cast<int>(frames_.size()) - 1;
    frames_[frame]->parent = def_frame;
    RETURN_IF_ERROR(BindEntryParams(*fn, frame, def_frame, /*is_kernel=*/false));
    nested_stop_defs_ = next;
    nested_run_frame_ = frame;
    nested_reached_ = nullptr;
    frame_ = frame;
    absl::StatusOr<Flow> flow = ExecBlock(fn->body);
    frame_ = 0;
    nested_stop_defs_.clear();
    nested_run_frame_ = -1;
    std::string target = absl::StrCat("'", next_name, "' (line ", next[0]->loc.line, ")");
    if (!flow.ok()) {
      return absl::Status(flow.status().code(),
                          absl::StrCat(flow.status().message(), " (while running '", prefix,
                                       "' up to its definition of ", target, ")"));
    }
    if (nested_reached_ == nullptr) {
      return Error(next[0]->loc, absl::StrCat("'", prefix, "' ",
                                              *flow == Flow::kReturn ? "returns before it defines "
                                                                     : "ends without defining ",
                                              target, " with these bindings; entry '",
                                              options_.entry, "' needs that definition to run"));
    }
    fn = nested_reached_;
    nested_reached_ = nullptr;
    def_frame = frame;
    absl::StrAppend(&prefix, ".", next_name);
  }
  entry_def_frame_ = def_frame;
  return fn;
}

absl::StatusOr<ir::Program> Evaluator::Run() {
  RETURN_IF_ERROR(IndexModule());
  const PyStmt* entry = nullptr;
  if (options_.entry.find('.') != std::string::npos) {
    ASSIGN_OR_RETURN(std::vector<std::string> path,
                     SplitDottedEntry(options_.entry, options_.file_name));
    ASSIGN_OR_RETURN(entry, RunToNestedEntry(path));
  } else {
    ASSIGN_OR_RETURN(entry, SelectEntry());
  }
  entry_ = entry;
  RETURN_IF_ERROR(RunEntry(*entry));
  RETURN_IF_ERROR(budget_.status()); // a charge no later step reported (Emit's)
  program_.name = entry->str;
  program_.source_name = options_.file_name;
  return std::move(program_);
}

namespace {

// A literal default value (`3`, `-1`, `2.5`, `True`, `"float16"`), else
// nullopt.
std::optional<BindingValue> LiteralDefault(const PyExpr& e) {
  BindingValue v;
  switch (e.kind) {
  case PyExprKind::kInt:
    v.kind = BindingValue::Kind::kInt;
    v.ival = e.ival;
    return v;
  case PyExprKind::kFloat:
    v.kind = BindingValue::Kind::kFloat;
    v.fval = e.fval;
    return v;
  case PyExprKind::kBool:
    v.kind = BindingValue::Kind::kBool;
    v.bval = e.ival != 0;
    return v;
  case PyExprKind::kString:
    if (e.is_fstring) return std::nullopt;
    v.kind = BindingValue::Kind::kString;
    v.sval = e.str;
    return v;
  case PyExprKind::kUnaryOp:
    if (e.str == "-" && e.elts.size() == 1 && e.elts[0].kind == PyExprKind::kInt) {
      v.kind = BindingValue::Kind::kInt;
      v.ival = -e.elts[0].ival;
      return v;
    }
    return std::nullopt;
  default:
    return std::nullopt;
  }
}

} // namespace

absl::StatusOr<EntrySignature> Evaluator::DescribeEntry() {
  RETURN_IF_ERROR(IndexModule());
  if (options_.entry.find('.') != std::string::npos) {
    ASSIGN_OR_RETURN(std::vector<std::string> path,
                     SplitDottedEntry(options_.entry, options_.file_name));
    return DescribeNestedEntry(path);
  }
  ASSIGN_OR_RETURN(const PyStmt* entry, SelectEntry());
  absl::flat_hash_set<std::string> annotated;
  AnnotatedNames(entry->body, &annotated);
  EntrySignature out;
  out.name = entry->str;
  for (const Param& p : entry->params) {
    if (p.kind == Param::kVarArgs || p.kind == Param::kKwArgs) continue;
    EntryParam e;
    e.name = p.name;
    e.is_tensor = annotated.contains(p.name) || !p.annotation.empty();
    e.has_default = !p.default_value.empty();
    if (e.has_default) e.default_value = LiteralDefault(p.default_value[0]);
    out.params.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<EntrySignature>
Evaluator::DescribeNestedEntry(const std::vector<std::string>& path) {
  // Nothing runs: each level's first definition of the next name stands for
  // the function a run would reach.
  std::vector<const PyStmt*> levels;
  const PyStmt* fn = ModuleFunction(module_, path[0]);
  if (fn == nullptr) return OuterNotFound(path[0]);
  levels.push_back(fn);
  std::string prefix = path[0];
  for (size_t level = 1; level < path.size(); ++level) {
    ASSIGN_OR_RETURN(std::vector<const PyStmt*> next,
                     DefsNamed(*fn, prefix, path[level], options_.file_name));
    fn = next[0];
    levels.push_back(fn);
    absl::StrAppend(&prefix, ".", path[level]);
  }
  EntrySignature out;
  out.name = prefix;
  // The kernel function's parameters, then each enclosing function's, from
  // the innermost out; a name that several levels declare is listed once,
  // as the innermost declares it (a binding binds it at every level).
  absl::flat_hash_set<std::string> seen;
  for (size_t k = levels.size(); k-- > 0;) {
    const PyStmt& def = *levels[k];
    const bool is_kernel = k + 1 == levels.size();
    absl::flat_hash_set<std::string> annotated;
    if (is_kernel) AnnotatedNames(def.body, &annotated);
    for (const Param& p : def.params) {
      if (p.kind == Param::kVarArgs || p.kind == Param::kKwArgs) continue;
      if (!seen.insert(p.name).second) continue;
      EntryParam e;
      e.name = p.name;
      e.is_tensor = is_kernel && (annotated.contains(p.name) || !p.annotation.empty());
      e.has_default = !p.default_value.empty();
      if (e.has_default) e.default_value = LiteralDefault(p.default_value[0]);
      out.params.push_back(std::move(e));
    }
  }
  return out;
}

absl::Status Evaluator::ApplyJitDecorator(const PyExpr& call) {
  // Decorator arguments are evaluated where the function is defined.
  int saved = std::exchange(frame_, entry_def_frame_);
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

absl::Status Evaluator::BindEntryParams(const PyStmt& entry, int frame, int def_frame,
                                        bool is_kernel) {
  // Only the kernel function declares tensors (`A: T.Tensor(...)` in its
  // body); an enclosing function's parameters are plain Python values.
  absl::flat_hash_set<std::string> annotated;
  if (is_kernel) AnnotatedNames(entry.body, &annotated);
  int saved = std::exchange(frame_, frame);
  for (size_t k = 0; k < entry.params.size(); ++k) {
    const Param& p = entry.params[k];
    if (is_kernel) entry_param_index_[p.name] = static_cast<int>(k);
    if (p.kind == Param::kVarArgs) {
      Bind(p.name, Value::Tuple({}));
      continue;
    }
    if (p.kind == Param::kKwArgs) {
      Value d;
      d.kind = ValueKind::kDict;
      d.items = NewValueList();
      d.values = NewValueList();
      Bind(p.name, d);
      continue;
    }
    const BindingValue* binding = nullptr;
    for (const auto& [name, value] : options_.bindings) {
      if (name == p.name) binding = &value;
    }
    if (annotated.contains(p.name)) {
      if (IsDynamicParam(p.name)) {
        frame_ = saved;
        return Error(p.loc, absl::StrCat("parameter '", p.name,
                                         "' is a tensor (annotated in the body) and cannot be "
                                         "dynamic; its shape can use T.dynamic symbols"));
      }
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
    if (IsDynamicParam(p.name)) {
      if (binding) {
        frame_ = saved;
        return Error(p.loc, absl::StrCat("parameter '", p.name,
                                         "' is both bound and named dynamic; give one of them"));
      }
      dynamic_used_.insert(p.name);
      // A name that several levels of a dotted entry declare is one symbol.
      auto [it, fresh] = dynamic_values_.try_emplace(p.name);
      if (fresh) it->second = DeclareDynamicParam(p);
      Bind(p.name, it->second);
      continue;
    }
    if (binding) {
      bindings_used_.insert(p.name);
      Bind(p.name, BindingToValue(*binding));
      continue;
    }
    if (!p.default_value.empty()) {
      // Defaults are evaluated where the function is defined.
      frame_ = def_frame;
      absl::StatusOr<Value> v = Eval(p.default_value[0]);
      frame_ = frame;
      if (!v.ok()) {
        frame_ = saved;
        return v.status();
      }
      // A None default usually means "the autotuner fills this in": keep
      // the name so that using it says which parameter needs a binding.
      if (v->is_none()) v->s = p.name;
      Bind(p.name, *std::move(v));
      continue;
    }
    frame_ = saved;
    return Error(p.loc, absl::StrCat("parameter '", p.name, "'",
                                     is_kernel ? "" : absl::StrCat(" of '", entry.str, "'"),
                                     " has no binding and no default"));
  }
  frame_ = saved;
  return absl::OkStatus();
}

bool Evaluator::IsDynamicParam(const std::string& name) const {
  return std::find(options_.dynamic_params.begin(), options_.dynamic_params.end(), name) !=
         options_.dynamic_params.end();
}

Value Evaluator::DeclareDynamicParam(const Param& p) {
  ir::Symbol sym;
  sym.name = UniqueName(p.name);
  sym.user_name = UserNameFor(p.name, sym.name);
  sym.dtype = ir::DType::kInt32;
  sym.loc = p.loc;
  Value v = Value::Expr(ir::VarRef(sym.name, sym.dtype, p.loc));
  program_.symbols.push_back(std::move(sym));
  return v;
}

absl::Status Evaluator::CheckBindingsUsed() {
  for (const std::string& name : options_.dynamic_params) {
    if (dynamic_used_.contains(name)) continue;
    std::string shown = IsIdentifier(name) ? name : "<invalid name>";
    return Error(entry_->loc,
                 absl::StrCat("dynamic parameter '", shown,
                              "' is neither an integer parameter nor a shape symbol of '",
                              EntryDisplayName(), "'"));
  }
  for (const auto& [name, value] : options_.bindings) {
    if (bindings_used_.contains(name)) continue;
    std::vector<std::string> valid = binding_names_valid_;
    std::sort(valid.begin(), valid.end());
    valid.erase(std::unique(valid.begin(), valid.end()), valid.end());
    std::string shown = IsIdentifier(name) ? name : "<invalid name>";
    return Error(entry_->loc, absl::StrCat("unknown binding '", shown, "' for '",
                                           EntryDisplayName(), "'; valid names: ",
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
    frame_ = entry_def_frame_;
    RETURN_IF_ERROR(LowerPrimFunc(entry));
  } else {
    frames_.push_back(std::make_unique<Frame>());
    int frame = static_cast<int>(frames_.size()) - 1;
    frames_[frame]->parent = entry_def_frame_;
    RETURN_IF_ERROR(BindEntryParams(entry, frame, entry_def_frame_, /*is_kernel=*/true));
    frame_ = frame;
    entry_frame_ = frame;
    ASSIGN_OR_RETURN(Flow flow, ExecBlock(entry.body));
    frame_ = 0;
    if (flow == Flow::kReturn && return_value_.kind == ValueKind::kPrimFunc &&
        return_value_.func != prim_func_ && lower_only_ == nullptr) {
      // It returns a @T.prim_func other than the one lowered: run again
      // lowering that one (Evaluator::LowerOnly).
      returned_prim_func_ = return_value_.func;
      return absl::AbortedError(absl::StrCat("'", entry.str, "' returns another @T.prim_func"));
    }
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
      return Error(entry.loc,
                   absl::StrCat("out_idx ", idx, " is out of range for ", n, " kernel parameters"));
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
      param.user_name = buffers_[id].user_name;
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

} // namespace kiln::frontend
