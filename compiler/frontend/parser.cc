#include "compiler/frontend/parser.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/lexer.h"
#include "compiler/frontend/parser_internal.h"
#include "compiler/ir/diagnostic.h"

namespace kiln::frontend {
namespace parser_internal {

// --- token helpers -----------------------------------------------------------

bool DepthGuard::Ok() {
  if (p_->depth_ <= kMaxParseDepth) return true;
  return p_->Fail(p_->Cur(), "nesting too deep");
}

bool Parser::CountLink() {
  if (++chain_links_ <= kMaxChainLinks) return true;
  return Fail(Cur(), absl::StrCat("expression chain too long (limit ", kMaxChainLinks,
                                  " operators, calls, subscripts and attributes in a statement)"));
}

bool Parser::Fail(const Token& at, std::string_view message) {
  if (failed_) return false;
  failed_ = true;
  err_loc_ = at.loc;
  if (at.kind == TokKind::kError && at.ival >= 0 && static_cast<size_t>(at.ival) < errors_.size()) {
    err_msg_ = errors_[at.ival];
  } else {
    err_msg_ = std::string(message);
  }
  return false;
}

bool Parser::FailAt(Loc loc, std::string_view message) {
  if (failed_) return false;
  failed_ = true;
  err_loc_ = loc;
  err_msg_ = std::string(message);
  return false;
}

std::string Parser::ErrorText() const {
  return std::string(ir::ErrorAt(file_, err_loc_, err_msg_).message());
}

std::string Parser::Describe(const Token& t) {
  switch (t.kind) {
  case TokKind::kEnd:
    return "end of file";
  case TokKind::kNewline:
    return "end of line";
  case TokKind::kIndent:
    return "indent";
  case TokKind::kDedent:
    return "dedent";
  case TokKind::kName:
    return absl::StrCat("name '", std::string(t.text), "'");
  case TokKind::kInt:
  case TokKind::kFloat:
    return absl::StrCat("number ", std::string(t.text));
  case TokKind::kString:
    return "string literal";
  case TokKind::kKeyword:
  case TokKind::kOp:
    return absl::StrCat("'", std::string(t.text), "'");
  case TokKind::kError:
    return "invalid token";
  }
  return "token";
}

bool Parser::Unexpected(std::string_view what_expected) {
  if (Cur().kind == TokKind::kIndent) return Fail(Cur(), "unexpected indent");
  return Fail(Cur(),
              absl::StrCat("expected ", std::string(what_expected), ", found ", Describe(Cur())));
}

bool Parser::ExpectName(std::string* out, std::string_view message) {
  if (Cur().kind != TokKind::kName) return Fail(Cur(), message);
  out->assign(Cur().text.data(), Cur().text.size());
  Advance();
  return true;
}

bool Parser::AtStatementEnd() const {
  TokKind k = Cur().kind;
  return k == TokKind::kNewline || k == TokKind::kEnd || IsOp(";");
}

// --- module and recovery -------------------------------------------------------

void Parser::ParseFile(Module* module) {
  module->body.reserve(static_cast<size_t>(std::clamp<int64_t>(top_level_lines_, 0, 4096)));
  while (Cur().kind != TokKind::kEnd) {
    if (Cur().kind == TokKind::kNewline || Cur().kind == TokKind::kDedent) {
      Advance();
      continue;
    }
    size_t start = pos_;
    size_t kept = module->body.size();
    if (ParseStatement(&module->body)) continue;
    module->body.resize(kept);
    size_t next = ResyncPoint(start);
    BrokenStmt broken;
    broken.loc = toks_[start].loc;
    broken.message = ErrorText();
    broken.defines = GuessDefines(start, next);
    module->broken.push_back(std::move(broken));
    pos_ = next;
    failed_ = false;
    depth_ = 0;
  }
}

size_t Parser::ResyncPoint(size_t start) const {
  auto is_decorator = [&](size_t i) {
    return toks_[i].kind == TokKind::kOp && toks_[i].text == "@";
  };
  if (is_decorator(start)) {
    // The decorated def/class (and further decorators) belong to the broken
    // statement although they start lines of their own in column 1.
    for (size_t i = start + 1; i < toks_.size(); ++i) {
      const Token& t = toks_[i];
      if (t.kind == TokKind::kEnd) return i;
      if (!t.line_start || t.loc.col != 1 || is_decorator(i)) continue;
      if (t.kind == TokKind::kKeyword && (t.text == "def" || t.text == "class")) start = i;
      break;
    }
  }
  for (size_t i = start + 1; i < toks_.size(); ++i) {
    const Token& t = toks_[i];
    if (t.kind == TokKind::kEnd) return i;
    if (!t.line_start || t.loc.col != 1) continue;
    if (t.kind == TokKind::kKeyword &&
        (t.text == "else" || t.text == "elif" || t.text == "except" || t.text == "finally"))
      continue;
    return i;
  }
  return toks_.size() - 1;
}

std::vector<std::string> Parser::GuessDefines(size_t start, size_t end) const {
  std::vector<std::string> names;
  auto is_op = [&](size_t i, std::string_view op) {
    return i < end && toks_[i].kind == TokKind::kOp && toks_[i].text == op;
  };
  auto is_kw = [&](size_t i, std::string_view kw) {
    return i < end && toks_[i].kind == TokKind::kKeyword && toks_[i].text == kw;
  };
  auto name_at = [&](size_t i) { return i < end && toks_[i].kind == TokKind::kName; };
  size_t i = start;
  while (i < end && toks_[i].kind == TokKind::kIndent) ++i;
  if (is_op(i, "@")) {
    while (i < end && !((is_kw(i, "def") || is_kw(i, "class")) && toks_[i].line_start)) ++i;
  }
  if (is_kw(i, "def") || is_kw(i, "class")) {
    if (name_at(i + 1)) names.emplace_back(toks_[i + 1].text);
    return names;
  }
  if (is_kw(i, "import") || is_kw(i, "from")) {
    bool from = is_kw(i, "from");
    if (from) {
      while (i < end && !is_kw(i, "import")) ++i;
    }
    ++i;
    bool expect_name = true;
    for (; i < end && toks_[i].kind != TokKind::kNewline && !is_op(i, ";"); ++i) {
      if (is_op(i, ",")) {
        expect_name = true;
      } else if (is_kw(i, "as") && name_at(i + 1)) {
        if (!names.empty()) names.back() = std::string(toks_[i + 1].text);
        ++i;
      } else if (expect_name && name_at(i)) {
        names.emplace_back(toks_[i].text); // `import a.b` binds `a`
        expect_name = false;
      }
    }
    return names;
  }
  // `a, b = ...`, `x: T = ...`, `a = b = ...`: names at bracket depth 0 before
  // the last top-level '=' that are not part of an attribute or subscript.
  if (name_at(i) && is_op(i + 1, ":")) {
    names.emplace_back(toks_[i].text);
    return names;
  }
  int depth = 0;
  size_t last_eq = end;
  for (size_t j = i; j < end && toks_[j].kind != TokKind::kNewline && !is_op(j, ";"); ++j) {
    const Token& t = toks_[j];
    if (t.kind != TokKind::kOp) continue;
    if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
    if (t.text == ")" || t.text == "]" || t.text == "}") --depth;
    if (depth == 0 && t.text == "=") last_eq = j;
  }
  if (last_eq == end) return names;
  depth = 0;
  for (size_t j = i; j < last_eq; ++j) {
    const Token& t = toks_[j];
    if (t.kind == TokKind::kOp) {
      if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
      if (t.text == ")" || t.text == "]" || t.text == "}") --depth;
      continue;
    }
    if (t.kind != TokKind::kName || depth != 0) continue;
    if (j > i && is_op(j - 1, ".")) continue;
    if (is_op(j + 1, ".") || is_op(j + 1, "[") || is_op(j + 1, "(")) continue;
    names.emplace_back(t.text);
  }
  return names;
}

bool Parser::LineEndsWithColon(size_t start) const {
  for (size_t i = start; i < toks_.size(); ++i) {
    TokKind k = toks_[i].kind;
    if (k == TokKind::kNewline || k == TokKind::kEnd) {
      return i > start && toks_[i - 1].kind == TokKind::kOp && toks_[i - 1].text == ":";
    }
  }
  return false;
}

// --- statements ------------------------------------------------------------

bool Parser::ParseStatement(std::vector<PyStmt>* out) {
  chain_links_ = 0; // the previous statement's trees are complete
  const Token& t = Cur();
  if (t.kind == TokKind::kIndent) return Fail(t, "unexpected indent");
  if (t.kind == TokKind::kDedent) return Fail(t, "unexpected dedent");
  if (t.kind == TokKind::kOp && t.text == "@") return ParseDecorated(out);
  if (t.kind == TokKind::kKeyword) {
    std::string_view kw = t.text;
    bool (Parser::*compound)(PyStmt*) = nullptr;
    if (kw == "if")
      compound = &Parser::ParseIf;
    else if (kw == "for")
      compound = &Parser::ParseFor;
    else if (kw == "while")
      compound = &Parser::ParseWhile;
    else if (kw == "with")
      compound = &Parser::ParseWith;
    else if (kw == "try")
      compound = &Parser::ParseTry;
    else if (kw == "def")
      compound = &Parser::ParseFunctionDef;
    else if (kw == "class")
      compound = &Parser::ParseClassDef;
    else if (kw == "async")
      return Fail(t, "'async' is not supported");
    else if (kw == "elif" || kw == "else" || kw == "except" || kw == "finally")
      return Fail(t, absl::StrCat("'", std::string(kw), "' without a matching statement"));
    if (compound != nullptr) {
      out->emplace_back();
      return (this->*compound)(&out->back());
    }
  }
  size_t start = pos_;
  if (ParseSimpleStatements(out)) return true;
  if (t.kind == TokKind::kName && t.text == "match" && LineEndsWithColon(start)) {
    failed_ = false;
    return Fail(toks_[start], "'match' statements are not supported");
  }
  return false;
}

bool Parser::ParseBlock(std::vector<PyStmt>* body, std::string_view what, Loc header) {
  if (Cur().kind != TokKind::kNewline) return ParseSimpleStatements(body);
  Advance();
  if (Cur().kind != TokKind::kIndent) {
    return Fail(Cur(), absl::StrCat("expected an indented block after ", std::string(what),
                                    " on line ", header.line));
  }
  body->reserve(static_cast<size_t>(std::clamp<int64_t>(Cur().ival, 0, 1024)));
  Advance();
  DepthGuard guard(this);
  if (!guard.Ok()) return false;
  while (Cur().kind != TokKind::kDedent && Cur().kind != TokKind::kEnd) {
    if (!ParseStatement(body)) return false;
  }
  Advance(); // the DEDENT
  return true;
}

bool Parser::ParseSimpleStatements(std::vector<PyStmt>* out) {
  while (true) {
    out->emplace_back();
    if (!ParseSimpleStatement(&out->back())) return false;
    if (AcceptOp(";")) {
      if (Cur().kind == TokKind::kNewline) {
        Advance();
        return true;
      }
      if (Cur().kind == TokKind::kEnd) return true;
      continue;
    }
    if (Cur().kind == TokKind::kNewline) {
      Advance();
      return true;
    }
    if (Cur().kind == TokKind::kEnd) return true;
    if (IsOp("=")) return Fail(Cur(), "invalid assignment target");
    return Unexpected("end of statement");
  }
}

bool Parser::ParseSimpleStatement(PyStmt* s) {
  chain_links_ = 0; // `a; b`: each simple statement has its own trees
  const Token& t = Cur();
  s->loc = t.loc;
  if (t.kind != TokKind::kKeyword) return ParseExprOrAssign(s);
  std::string_view kw = t.text;
  if (kw == "pass" || kw == "break" || kw == "continue") {
    s->kind = kw == "pass"    ? PyStmtKind::kPass
              : kw == "break" ? PyStmtKind::kBreak
                              : PyStmtKind::kContinue;
    Advance();
    return true;
  }
  if (kw == "return") {
    s->kind = PyStmtKind::kReturn;
    Advance();
    if (AtStatementEnd()) return true;
    s->exprs.emplace_back();
    return ParseStarExpressions(&s->exprs.back());
  }
  if (kw == "raise") {
    s->kind = PyStmtKind::kRaise;
    Advance();
    if (AtStatementEnd()) return true;
    s->exprs.emplace_back();
    if (!ParseTest(&s->exprs.back())) return false;
    if (AcceptKw("from")) {
      s->exprs.emplace_back();
      if (!ParseTest(&s->exprs.back())) return false;
    }
    return true;
  }
  if (kw == "global" || kw == "nonlocal") {
    s->kind = kw == "global" ? PyStmtKind::kGlobal : PyStmtKind::kNonlocal;
    Advance();
    std::string message = absl::StrCat("expected a name after '", std::string(kw), "'");
    do {
      if (!ExpectName(&s->names.emplace_back(), message)) return false;
    } while (AcceptOp(","));
    return true;
  }
  if (kw == "del") {
    s->kind = PyStmtKind::kDel;
    Advance();
    do {
      if (AtStatementEnd() && !s->targets.empty()) break;
      s->targets.emplace_back();
      if (!ParseBinary(&s->targets.back(), 0)) return false;
      if (!CheckTarget(s->targets.back(), TargetContext::kDel)) return false;
    } while (AcceptOp(","));
    return true;
  }
  if (kw == "assert") {
    s->kind = PyStmtKind::kAssert;
    Advance();
    s->exprs.emplace_back();
    if (!ParseTest(&s->exprs.back())) return false;
    if (AcceptOp(",")) {
      s->exprs.emplace_back();
      if (!ParseTest(&s->exprs.back())) return false;
    }
    return true;
  }
  if (kw == "import") return ParseImport(s);
  if (kw == "from") return ParseFromImport(s);
  if (kw == "yield") return Fail(t, "'yield' is not supported");
  return ParseExprOrAssign(s);
}

namespace {

bool IsAugAssignOp(const Token& t) {
  if (t.kind != TokKind::kOp || t.text.size() < 2 || t.text.back() != '=') return false;
  return t.text != "==" && t.text != "<=" && t.text != ">=" && t.text != "!=";
}

} // namespace

bool Parser::ParseExprOrAssign(PyStmt* s) {
  PyExpr first;
  if (!ParseStarExpressions(&first)) return false;
  if (IsOp(":")) {
    if (!CheckTarget(first, TargetContext::kAnnAssign)) return false;
    Advance();
    s->kind = PyStmtKind::kAnnAssign;
    s->targets.push_back(std::move(first));
    s->exprs.emplace_back();
    if (!ParseTest(&s->exprs.back())) return false;
    if (AcceptOp("=")) {
      s->exprs.emplace_back();
      if (!ParseStarExpressions(&s->exprs.back())) return false;
    }
    return true;
  }
  if (IsAugAssignOp(Cur())) {
    if (!CheckTarget(first, TargetContext::kAugAssign)) return false;
    s->kind = PyStmtKind::kAugAssign;
    s->str = std::string(Cur().text.substr(0, Cur().text.size() - 1));
    Advance();
    s->targets.push_back(std::move(first));
    s->exprs.emplace_back();
    return ParseStarExpressions(&s->exprs.back());
  }
  if (!IsOp("=")) {
    s->kind = PyStmtKind::kExpr;
    s->exprs.push_back(std::move(first));
    return true;
  }
  s->kind = PyStmtKind::kAssign;
  if (!CheckTarget(first, TargetContext::kAssign)) return false;
  s->targets.push_back(std::move(first));
  while (AcceptOp("=")) {
    if (Cur().kind == TokKind::kKeyword && Cur().text == "yield")
      return Fail(Cur(), "'yield' is not supported");
    PyExpr value;
    if (!ParseStarExpressions(&value)) return false;
    if (IsOp("=")) {
      if (!CheckTarget(value, TargetContext::kAssign)) return false;
      s->targets.push_back(std::move(value));
    } else {
      s->exprs.push_back(std::move(value));
    }
  }
  return true;
}

namespace {

const char* DescribeExprForTarget(const PyExpr& e) {
  switch (e.kind) {
  case PyExprKind::kCall:
    return "function call";
  case PyExprKind::kInt:
  case PyExprKind::kFloat:
  case PyExprKind::kString:
  case PyExprKind::kEllipsis:
    return "literal";
  case PyExprKind::kBool:
    return e.ival ? "True" : "False";
  case PyExprKind::kNone:
    return "None";
  case PyExprKind::kCompare:
    return "comparison";
  case PyExprKind::kBinOp:
  case PyExprKind::kUnaryOp:
  case PyExprKind::kBoolOp:
    return "expression";
  case PyExprKind::kIfExp:
    return "conditional expression";
  case PyExprKind::kLambda:
    return "lambda";
  case PyExprKind::kComprehension:
    return e.str == "gen" ? "generator expression" : "comprehension";
  case PyExprKind::kDict:
    return "dict literal";
  case PyExprKind::kSet:
    return "set display";
  case PyExprKind::kNamedExpr:
    return "named expression";
  case PyExprKind::kSlice:
    return "slice";
  default:
    return "expression";
  }
}

} // namespace

bool Parser::CheckTarget(const PyExpr& e, TargetContext ctx) {
  switch (e.kind) {
  case PyExprKind::kName:
  case PyExprKind::kAttribute:
  case PyExprKind::kSubscript:
    return true;
  case PyExprKind::kTuple:
  case PyExprKind::kList:
    if (ctx == TargetContext::kAugAssign)
      return FailAt(e.loc, absl::StrCat("'", e.kind == PyExprKind::kTuple ? "tuple" : "list",
                                        "' is an illegal expression for augmented assignment"));
    if (ctx == TargetContext::kAnnAssign)
      return FailAt(e.loc, "only single target (not tuple) can be annotated");
    for (const PyExpr& x : e.elts)
      if (!CheckTarget(x, ctx)) return false;
    return true;
  case PyExprKind::kStarred:
    if (ctx == TargetContext::kAugAssign || ctx == TargetContext::kAnnAssign ||
        ctx == TargetContext::kDel)
      return FailAt(e.loc, "cannot use starred expression here");
    if (!e.elts.empty() && e.elts[0].kind == PyExprKind::kStarred)
      return FailAt(e.loc, "cannot use starred expression here");
    return e.elts.empty() || CheckTarget(e.elts[0], ctx);
  default:
    break;
  }
  const char* verb = ctx == TargetContext::kDel ? "delete" : "assign to";
  return FailAt(e.loc, absl::StrCat("cannot ", verb, " ", DescribeExprForTarget(e)));
}

bool Parser::ParseDecorated(std::vector<PyStmt>* out) {
  std::vector<PyExpr> decorators;
  while (IsOp("@")) {
    Advance();
    decorators.emplace_back();
    if (!ParseNamedExpr(&decorators.back())) return false;
    if (Cur().kind != TokKind::kNewline) return Unexpected("end of line after decorator");
    Advance();
  }
  out->emplace_back();
  PyStmt* s = &out->back();
  s->decorators = std::move(decorators);
  if (IsKw("def")) return ParseFunctionDef(s);
  if (IsKw("class")) return ParseClassDef(s);
  if (IsKw("async")) return Fail(Cur(), "'async' is not supported");
  return Unexpected("'def' or 'class' after decorator");
}

bool Parser::ParseFunctionDef(PyStmt* s) {
  s->kind = PyStmtKind::kFunctionDef;
  s->loc = Cur().loc;
  Advance(); // def
  if (!ExpectName(&s->str, "expected function name after 'def'")) return false;
  if (!ExpectOp("(", "expected '(' after function name")) return false;
  if (!ParseParams(&s->params, /*annotations=*/true, ")")) return false;
  if (!ExpectOp(")", "expected ',' or ')' in parameter list")) return false;
  if (AcceptOp("->")) {
    s->exprs.emplace_back();
    if (!ParseTest(&s->exprs.back())) return false;
  }
  if (!ExpectOp(":", "expected ':' after function signature")) return false;
  return ParseBlock(&s->body, "function definition", s->loc);
}

bool Parser::ParseParams(std::vector<Param>* params, bool annotations, std::string_view close) {
  bool seen_default = false, seen_slash = false, seen_star = false, seen_kwargs = false;
  bool bare_star = false;
  Loc bare_star_loc;
  while (!IsOp(close)) {
    if (seen_kwargs) return Fail(Cur(), "parameters cannot follow '**' parameter");
    const Token& t = Cur();
    if (IsOp("/")) {
      if (seen_slash) return Fail(t, "'/' may appear only once");
      if (seen_star) return Fail(t, "'/' must be ahead of '*'");
      if (params->empty()) return Fail(t, "at least one parameter must precede '/'");
      for (Param& p : *params) p.kind = Param::kPosOnly;
      seen_slash = true;
      Advance();
    } else {
      Param p;
      p.loc = t.loc;
      if (IsOp("*")) {
        if (seen_star) return Fail(t, "'*' parameter may appear only once");
        seen_star = true;
        Advance();
        if (IsOp(",") || IsOp(close)) {
          bare_star = true;
          bare_star_loc = t.loc;
          if (!AcceptOp(",")) break;
          continue;
        }
        p.kind = Param::kVarArgs;
      } else if (IsOp("**")) {
        seen_kwargs = true;
        Advance();
        p.kind = Param::kKwArgs;
      } else {
        p.kind = seen_star ? Param::kKwOnly : Param::kNormal;
      }
      if (!ExpectName(&p.name, "expected parameter name")) return false;
      if (annotations && AcceptOp(":")) {
        p.annotation.emplace_back();
        if (!ParseTest(&p.annotation.back())) return false;
      }
      if (IsOp("=")) {
        if (p.kind == Param::kVarArgs || p.kind == Param::kKwArgs)
          return Fail(Cur(), "var-positional and var-keyword parameters cannot have defaults");
        Advance();
        p.default_value.emplace_back();
        if (!ParseTest(&p.default_value.back())) return false;
        if (p.kind == Param::kNormal) seen_default = true;
      } else if (p.kind == Param::kNormal && seen_default) {
        return FailAt(p.loc, "parameter without a default follows parameter with a default");
      }
      if (p.kind == Param::kKwOnly) bare_star = false;
      params->push_back(std::move(p));
    }
    if (!AcceptOp(",")) break;
  }
  if (bare_star) return FailAt(bare_star_loc, "named parameters must follow bare '*'");
  return true;
}

bool Parser::ParseClassDef(PyStmt* s) {
  s->kind = PyStmtKind::kClassDef;
  s->loc = Cur().loc;
  Advance(); // class
  if (!ExpectName(&s->str, "expected class name after 'class'")) return false;
  if (AcceptOp("(")) {
    PyExpr call;
    if (!ParseCallArgs(&call)) return false;
    s->exprs = std::move(call.args);
    s->keywords = std::move(call.keywords);
  }
  if (!ExpectOp(":", "expected ':' after class header")) return false;
  return ParseBlock(&s->body, "class definition", s->loc);
}

bool Parser::ParseIf(PyStmt* s) {
  // An elif chain is built iteratively so that its length is not a nesting
  // depth.
  PyStmt* cur = s;
  while (true) {
    bool is_elif = IsKw("elif");
    cur->kind = PyStmtKind::kIf;
    cur->loc = Cur().loc;
    Advance();
    cur->exprs.emplace_back();
    if (!ParseNamedExpr(&cur->exprs.back())) return false;
    if (!ExpectOp(":", is_elif ? "expected ':' after 'elif' condition"
                               : "expected ':' after 'if' condition"))
      return false;
    if (!ParseBlock(&cur->body, is_elif ? "'elif' statement" : "'if' statement", cur->loc))
      return false;
    if (IsKw("elif")) {
      cur->orelse.emplace_back();
      cur = &cur->orelse.back();
      continue;
    }
    return ParseOptionalElse(&cur->orelse);
  }
}

bool Parser::ParseOptionalElse(std::vector<PyStmt>* orelse) {
  if (!IsKw("else")) return true;
  Loc loc = Cur().loc;
  Advance();
  if (!ExpectOp(":", "expected ':' after 'else'")) return false;
  return ParseBlock(orelse, "'else' statement", loc);
}

bool Parser::ParseFor(PyStmt* s) {
  s->kind = PyStmtKind::kFor;
  s->loc = Cur().loc;
  Advance();
  s->targets.emplace_back();
  if (!ParseTargetList(&s->targets.back())) return false;
  if (!CheckTarget(s->targets.back(), TargetContext::kFor)) return false;
  if (!ExpectKw("in", "expected 'in' after 'for' target")) return false;
  s->exprs.emplace_back();
  if (!ParseStarExpressions(&s->exprs.back())) return false;
  if (!ExpectOp(":", "expected ':' after 'for' iterable")) return false;
  if (!ParseBlock(&s->body, "'for' statement", s->loc)) return false;
  return ParseOptionalElse(&s->orelse);
}

bool Parser::ParseWhile(PyStmt* s) {
  s->kind = PyStmtKind::kWhile;
  s->loc = Cur().loc;
  Advance();
  s->exprs.emplace_back();
  if (!ParseNamedExpr(&s->exprs.back())) return false;
  if (!ExpectOp(":", "expected ':' after 'while' condition")) return false;
  if (!ParseBlock(&s->body, "'while' statement", s->loc)) return false;
  return ParseOptionalElse(&s->orelse);
}

bool Parser::ParseWithItem(PyStmt* s) {
  s->exprs.emplace_back();
  if (!ParseTest(&s->exprs.back())) return false;
  PyExpr& target = s->targets.emplace_back();
  target.loc = s->exprs.back().loc;
  if (!AcceptKw("as")) return true;
  if (!ParseBinary(&target, 0)) return false;
  return CheckTarget(target, TargetContext::kWith);
}

bool Parser::ParseWith(PyStmt* s) {
  s->kind = PyStmtKind::kWith;
  s->loc = Cur().loc;
  Advance();
  bool done = false;
  if (IsOp("(")) {
    // Python 3.10's `with (a as b, c as d):`. `with (a, b) as c:` is a tuple
    // context manager instead, so try the parenthesized form first and fall
    // back to a plain expression (the only backtracking in the parser).
    size_t save = pos_;
    Advance();
    bool ok = true;
    while (ok && !IsOp(")")) {
      ok = ParseWithItem(s);
      if (ok && !AcceptOp(",")) break;
    }
    ok = ok && AcceptOp(")") && IsOp(":");
    if (ok) {
      done = true;
    } else {
      pos_ = save;
      failed_ = false;
      s->exprs.clear();
      s->targets.clear();
    }
  }
  if (!done) {
    do {
      if (!ParseWithItem(s)) return false;
    } while (AcceptOp(","));
  }
  if (!ExpectOp(":", "expected ':' after 'with' items")) return false;
  return ParseBlock(&s->body, "'with' statement", s->loc);
}

bool Parser::ParseTry(PyStmt* s) {
  s->kind = PyStmtKind::kTry;
  s->loc = Cur().loc;
  Advance();
  if (!ExpectOp(":", "expected ':' after 'try'")) return false;
  if (!ParseBlock(&s->body, "'try' statement", s->loc)) return false;
  bool bare_seen = false;
  while (IsKw("except")) {
    if (bare_seen) return Fail(Cur(), "default 'except:' must be last");
    PyStmt& h = s->handlers.emplace_back();
    h.kind = PyStmtKind::kExcept;
    h.loc = Cur().loc;
    Advance();
    if (IsOp("*")) return Fail(Cur(), "'except*' is not supported");
    if (IsOp(":")) {
      bare_seen = true;
    } else {
      h.exprs.emplace_back();
      if (!ParseTest(&h.exprs.back())) return false;
      if (IsOp(",")) return Fail(Cur(), "multiple exception types must be parenthesized");
      if (AcceptKw("as") && !ExpectName(&h.str, "expected a name after 'as'")) return false;
    }
    if (!ExpectOp(":", "expected ':' after 'except' clause")) return false;
    if (!ParseBlock(&h.body, "'except' statement", h.loc)) return false;
  }
  if (IsKw("else") && s->handlers.empty()) {
    return Fail(Cur(), "'else' of 'try' needs an 'except' clause");
  }
  if (!ParseOptionalElse(&s->orelse)) return false;
  if (IsKw("finally")) {
    Loc loc = Cur().loc;
    Advance();
    if (!ExpectOp(":", "expected ':' after 'finally'")) return false;
    if (!ParseBlock(&s->finalbody, "'finally' statement", loc)) return false;
  }
  if (s->handlers.empty() && s->finalbody.empty()) return Unexpected("'except' or 'finally' block");
  return true;
}

bool Parser::ParseDottedName(std::string* out) {
  if (!ExpectName(out, "expected a module name")) return false;
  while (IsOp(".")) {
    Advance();
    if (Cur().kind != TokKind::kName) return Fail(Cur(), "expected a name after '.'");
    absl::StrAppend(out, ".", std::string(Cur().text));
    Advance();
  }
  return true;
}

bool Parser::ParseImport(PyStmt* s) {
  s->kind = PyStmtKind::kImport;
  Advance();
  do {
    if (!ParseDottedName(&s->names.emplace_back())) return false;
    std::string& alias = s->aliases.emplace_back();
    if (AcceptKw("as") && !ExpectName(&alias, "expected a name after 'as'")) return false;
  } while (AcceptOp(","));
  return true;
}

bool Parser::ParseFromImport(PyStmt* s) {
  s->kind = PyStmtKind::kImportFrom;
  Advance();
  while (IsOp(".") || IsOp("...")) {
    s->str.append(Cur().text.data(), Cur().text.size());
    Advance();
  }
  if (Cur().kind == TokKind::kName) {
    std::string dotted;
    if (!ParseDottedName(&dotted)) return false;
    s->str += dotted;
  } else if (s->str.empty()) {
    return Fail(Cur(), "expected a module name after 'from'");
  }
  if (!ExpectKw("import", "expected 'import' after module name in 'from' statement")) return false;
  if (AcceptOp("*")) {
    s->names.emplace_back("*");
    s->aliases.emplace_back();
    return true;
  }
  bool paren = AcceptOp("(");
  while (true) {
    if (!ExpectName(&s->names.emplace_back(), "expected a name to import")) return false;
    std::string& alias = s->aliases.emplace_back();
    if (AcceptKw("as") && !ExpectName(&alias, "expected a name after 'as'")) return false;
    if (!AcceptOp(",")) break;
    if (paren && IsOp(")")) break;
    if (!paren && AtStatementEnd())
      return Fail(Cur(), "trailing comma not allowed without surrounding parentheses");
  }
  if (paren && !ExpectOp(")", "expected ',' or ')' in import list")) return false;
  return true;
}

} // namespace parser_internal

absl::StatusOr<Module> ParseModule(std::string_view source, std::string_view file_name) {
  absl::StatusOr<TokenStream> tokens = Tokenize(source, file_name);
  if (!tokens.ok()) return tokens.status();
  Module module;
  module.file_name = std::string(file_name);
  parser_internal::Parser parser(*tokens, file_name);
  parser.ParseFile(&module);
  return module;
}

absl::StatusOr<PyExpr> ParseExpression(std::string_view source, std::string_view file_name) {
  absl::StatusOr<TokenStream> tokens = Tokenize(source, file_name);
  if (!tokens.ok()) return tokens.status();
  parser_internal::Parser parser(*tokens, file_name);
  PyExpr expr;
  if (!parser.ParseExpressionInput(&expr))
    return ir::ErrorAt(file_name, parser.error_loc(), parser.error_message());
  return expr;
}

} // namespace kiln::frontend
