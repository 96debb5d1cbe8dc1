// Expressions, by Python's precedence (lowest first): lambda, conditional,
// or, and, not, comparisons, | ^ & << >> + - * / // % @ (precedence climbing),
// unary + - ~, ** (right-associative, binds tighter than a unary operator on
// its left), then primaries (attribute, call, subscript) over atoms.
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/parser_internal.h"

namespace kiln::frontend::parser_internal {
namespace {

// Binding power of the binary operators handled by ParseBinary; -1 otherwise.
int BinaryPrecedence(const Token& t) {
  if (t.kind != TokKind::kOp) return -1;
  std::string_view op = t.text;
  if (op.size() == 1) {
    switch (op[0]) {
    case '|':
      return 0;
    case '^':
      return 1;
    case '&':
      return 2;
    case '+':
    case '-':
      return 4;
    case '*':
    case '/':
    case '%':
    case '@':
      return 5;
    default:
      return -1;
    }
  }
  if (op == "<<" || op == ">>") return 3;
  if (op == "//") return 5;
  return -1;
}

// Wraps *out as the first child of a new node of `kind`; returns the node.
PyExpr* Wrap(PyExpr* out, PyExprKind kind, Loc loc, size_t reserve = 2) {
  PyExpr node;
  node.kind = kind;
  node.loc = loc;
  node.elts.reserve(reserve < 2 ? 2 : reserve);
  node.elts.push_back(std::move(*out));
  *out = std::move(node);
  return out;
}

} // namespace

bool Parser::StartsExpression(const Token& t) {
  switch (t.kind) {
  case TokKind::kName:
  case TokKind::kInt:
  case TokKind::kFloat:
  case TokKind::kString:
  case TokKind::kError:
    return true;
  case TokKind::kKeyword:
    return t.text == "None" || t.text == "True" || t.text == "False" || t.text == "not" ||
           t.text == "lambda" || t.text == "await" || t.text == "yield";
  case TokKind::kOp:
    return t.text == "(" || t.text == "[" || t.text == "{" || t.text == "-" || t.text == "+" ||
           t.text == "~" || t.text == "*" || t.text == "..." || t.text == "**";
  default:
    return false;
  }
}

bool Parser::ParseExpressionInput(PyExpr* out) {
  if (Cur().kind == TokKind::kIndent) return Fail(Cur(), "unexpected indent");
  if (!ParseStarExpressions(out)) return false;
  while (Cur().kind == TokKind::kNewline || Cur().kind == TokKind::kDedent) Advance();
  if (Cur().kind != TokKind::kEnd) return Unexpected("end of expression");
  return true;
}

bool Parser::ParseStarExpressions(PyExpr* out) {
  Loc start = Cur().loc;
  if (!ParseStarOrTest(out)) return false;
  if (!IsOp(",")) {
    if (out->kind == PyExprKind::kStarred)
      return FailAt(out->loc, "cannot use starred expression here");
    return true;
  }
  Wrap(out, PyExprKind::kTuple, start);
  while (AcceptOp(",")) {
    if (!StartsExpression(Cur()) || IsOp("**")) break;
    out->elts.emplace_back();
    if (!ParseStarOrTest(&out->elts.back())) return false;
  }
  return true;
}

bool Parser::ParseStarOrTest(PyExpr* out) {
  if (!IsOp("*")) return ParseTest(out);
  out->kind = PyExprKind::kStarred;
  out->loc = Cur().loc;
  Advance();
  out->elts.emplace_back();
  return ParseBinary(&out->elts.back(), 0);
}

bool Parser::ParseStarOrNamed(PyExpr* out) {
  if (IsOp("*")) return ParseStarOrTest(out);
  return ParseNamedExpr(out);
}

bool Parser::ParseNamedExpr(PyExpr* out) {
  if (Cur().kind == TokKind::kName && Ahead(1).kind == TokKind::kOp && Ahead(1).text == ":=") {
    out->kind = PyExprKind::kNamedExpr;
    out->loc = Cur().loc;
    out->str = std::string(Cur().text);
    Advance();
    Advance();
    out->elts.emplace_back();
    return ParseTest(&out->elts.back());
  }
  if (!ParseTest(out)) return false;
  if (IsOp(":=")) return FailAt(out->loc, "cannot use assignment expressions with this target");
  return true;
}

bool Parser::ParseTest(PyExpr* out) {
  DepthGuard guard(this);
  if (!guard.Ok()) return false;
  if (IsKw("lambda")) return ParseLambda(out);
  Loc start = Cur().loc;
  if (!ParseOr(out)) return false;
  if (!IsKw("if")) return true;
  Advance();
  Wrap(out, PyExprKind::kIfExp, start);
  out->elts.emplace_back();
  if (!ParseOr(&out->elts.back())) return false;
  if (!ExpectKw("else", "expected 'else' after conditional expression")) return false;
  out->elts.emplace_back();
  return ParseTest(&out->elts.back());
}

bool Parser::ParseLambda(PyExpr* out) {
  out->kind = PyExprKind::kLambda;
  out->loc = Cur().loc;
  Advance();
  if (!ParseParams(&out->params, /*annotations=*/false, ":")) return false;
  if (!ExpectOp(":", "expected ':' after lambda parameters")) return false;
  out->elts.emplace_back();
  return ParseTest(&out->elts.back());
}

bool Parser::ParseOr(PyExpr* out) {
  Loc start = Cur().loc;
  if (!ParseAnd(out)) return false;
  if (!IsKw("or")) return true;
  Wrap(out, PyExprKind::kBoolOp, start)->str = "or";
  while (AcceptKw("or")) {
    out->elts.emplace_back();
    if (!ParseAnd(&out->elts.back())) return false;
  }
  return true;
}

bool Parser::ParseAnd(PyExpr* out) {
  Loc start = Cur().loc;
  if (!ParseNot(out)) return false;
  if (!IsKw("and")) return true;
  Wrap(out, PyExprKind::kBoolOp, start)->str = "and";
  while (AcceptKw("and")) {
    out->elts.emplace_back();
    if (!ParseNot(&out->elts.back())) return false;
  }
  return true;
}

bool Parser::ParseNot(PyExpr* out) {
  if (!IsKw("not")) return ParseComparison(out);
  DepthGuard guard(this);
  if (!guard.Ok()) return false;
  out->kind = PyExprKind::kUnaryOp;
  out->loc = Cur().loc;
  out->str = "not";
  Advance();
  out->elts.emplace_back();
  return ParseNot(&out->elts.back());
}

bool Parser::ParseComparison(PyExpr* out) {
  Loc start = Cur().loc;
  if (!ParseBinary(out, 0)) return false;
  bool wrapped = false;
  while (true) {
    const Token& t = Cur();
    const char* op = nullptr;
    int width = 1;
    if (t.kind == TokKind::kOp) {
      std::string_view s = t.text;
      if (s == "<")
        op = "<";
      else if (s == ">")
        op = ">";
      else if (s == "==")
        op = "==";
      else if (s == "<=")
        op = "<=";
      else if (s == ">=")
        op = ">=";
      else if (s == "!=")
        op = "!=";
    } else if (t.kind == TokKind::kKeyword) {
      const Token& n = Ahead(1);
      if (t.text == "in") {
        op = "in";
      } else if (t.text == "is") {
        bool neg = n.kind == TokKind::kKeyword && n.text == "not";
        op = neg ? "is not" : "is";
        width = neg ? 2 : 1;
      } else if (t.text == "not" && n.kind == TokKind::kKeyword && n.text == "in") {
        op = "not in";
        width = 2;
      }
    }
    if (op == nullptr) return true;
    if (!wrapped) {
      Wrap(out, PyExprKind::kCompare, start);
      wrapped = true;
    }
    out->ops.emplace_back(op);
    for (int i = 0; i < width; ++i) Advance();
    out->elts.emplace_back();
    if (!ParseBinary(&out->elts.back(), 0)) return false;
  }
}

bool Parser::ParseBinary(PyExpr* out, int min_prec) {
  // Left-associative precedence climbing: recursion only goes to a higher
  // precedence level, so its depth is bounded by the number of levels; each
  // link of the chain deepens the tree and is counted (CountLink).
  Loc start = Cur().loc;
  if (!ParseFactor(out)) return false;
  while (true) {
    int prec = BinaryPrecedence(Cur());
    if (prec < 0 || prec < min_prec) return true;
    if (!CountLink()) return false;
    std::string_view op = Cur().text;
    Advance();
    Wrap(out, PyExprKind::kBinOp, start)->str = std::string(op);
    out->elts.emplace_back();
    if (!ParseBinary(&out->elts.back(), prec + 1)) return false;
  }
}

bool Parser::ParseFactor(PyExpr* out) {
  if (!IsOp("-") && !IsOp("+") && !IsOp("~")) return ParsePower(out);
  DepthGuard guard(this);
  if (!guard.Ok()) return false;
  out->kind = PyExprKind::kUnaryOp;
  out->loc = Cur().loc;
  out->str = std::string(Cur().text);
  Advance();
  out->elts.emplace_back();
  return ParseFactor(&out->elts.back());
}

bool Parser::ParsePower(PyExpr* out) {
  Loc start = Cur().loc;
  if (!ParsePrimary(out)) return false;
  if (!IsOp("**")) return true;
  DepthGuard guard(this);
  if (!guard.Ok()) return false;
  Advance();
  Wrap(out, PyExprKind::kBinOp, start)->str = "**";
  out->elts.emplace_back();
  return ParseFactor(&out->elts.back());
}

bool Parser::ParsePrimary(PyExpr* out) {
  Loc start = Cur().loc;
  if (!ParseAtom(out)) return false;
  while (true) {
    if ((IsOp(".") || IsOp("(") || IsOp("[")) && !CountLink()) return false;
    if (IsOp(".")) {
      Advance();
      if (Cur().kind != TokKind::kName) return Unexpected("attribute name after '.'");
      Wrap(out, PyExprKind::kAttribute, start)->str = std::string(Cur().text);
      Advance();
    } else if (IsOp("(")) {
      size_t items = ItemsHint(Cur()), equals = EqualsHint(Cur());
      Advance();
      Wrap(out, PyExprKind::kCall, start, 1);
      out->args.reserve(items > equals ? items - equals : 1);
      if (equals > 0) out->keywords.reserve(equals);
      if (!ParseCallArgs(out)) return false;
    } else if (IsOp("[")) {
      size_t items = ItemsHint(Cur());
      Advance();
      Wrap(out, PyExprKind::kSubscript, start);
      out->elts.emplace_back();
      if (!ParseSubscriptList(&out->elts.back(), items)) return false;
      if (!ExpectOp("]", "expected ']' after subscript")) return false;
    } else {
      return true;
    }
  }
}

bool Parser::ParseCallArgs(PyExpr* call) {
  // After '('; consumes the closing ')'.
  bool seen_keyword = false, seen_kwargs = false;
  while (!IsOp(")")) {
    const Token& t = Cur();
    if (IsOp("**")) {
      Keyword& kw = call->keywords.emplace_back();
      kw.loc = t.loc;
      Advance();
      kw.value.emplace_back();
      if (!ParseTest(&kw.value.back())) return false;
      seen_keyword = seen_kwargs = true;
    } else if (IsOp("*")) {
      if (seen_kwargs)
        return Fail(t, "iterable argument unpacking follows keyword argument unpacking");
      call->args.emplace_back();
      if (!ParseStarOrTest(&call->args.back())) return false;
    } else if (t.kind == TokKind::kName && Ahead(1).kind == TokKind::kOp && Ahead(1).text == "=") {
      Keyword& kw = call->keywords.emplace_back();
      kw.loc = t.loc;
      kw.name = std::string(t.text);
      Advance();
      Advance();
      kw.value.emplace_back();
      if (!ParseTest(&kw.value.back())) return false;
      seen_keyword = true;
    } else {
      if (seen_kwargs) return Fail(t, "positional argument follows keyword argument unpacking");
      if (seen_keyword) return Fail(t, "positional argument follows keyword argument");
      PyExpr& arg = call->args.emplace_back();
      if (!ParseNamedExpr(&arg)) return false;
      if (IsKw("for")) {
        // A generator expression as the sole argument: f(x for x in y).
        bool alone = call->args.size() == 1 && call->keywords.empty();
        Wrap(&arg, PyExprKind::kComprehension, arg.loc)->str = "gen";
        if (!ParseComprehensionClauses(&arg.comps)) return false;
        if (!alone || !IsOp(")"))
          return FailAt(arg.loc, "generator expression must be parenthesized");
      } else if (IsOp("=")) {
        return Fail(Cur(), "expression cannot contain assignment, perhaps you meant \"==\"?");
      }
    }
    if (!AcceptOp(",")) break;
  }
  return ExpectOp(")", "expected ',' or ')' after call argument");
}

bool Parser::ParseSubscriptList(PyExpr* out, size_t items_hint) {
  Loc start = Cur().loc;
  if (!ParseSliceItem(out)) return false;
  if (!IsOp(",")) return true;
  Wrap(out, PyExprKind::kTuple, start, items_hint);
  while (AcceptOp(",")) {
    if (IsOp("]")) break;
    out->elts.emplace_back();
    if (!ParseSliceItem(&out->elts.back())) return false;
  }
  return true;
}

bool Parser::ParseSliceItem(PyExpr* out) {
  if (IsOp("*")) return ParseStarOrTest(out);
  Loc start = Cur().loc;
  auto at_slice_end = [&] { return IsOp(",") || IsOp("]"); };
  PyExpr lower;
  lower.loc = start;
  if (!IsOp(":")) {
    if (!ParseNamedExpr(&lower)) return false;
    if (!IsOp(":")) {
      *out = std::move(lower);
      return true;
    }
  }
  out->kind = PyExprKind::kSlice;
  out->loc = start;
  out->elts.resize(3);
  out->elts[0] = std::move(lower);
  out->elts[1].loc = out->elts[2].loc = Cur().loc;
  Advance(); // ':'
  if (!IsOp(":") && !at_slice_end()) {
    if (!ParseTest(&out->elts[1])) return false;
  }
  if (AcceptOp(":")) {
    out->elts[2].loc = Cur().loc;
    if (!at_slice_end() && !ParseTest(&out->elts[2])) return false;
  }
  return true;
}

bool Parser::ParseComprehensionClauses(std::vector<Comprehension>* comps) {
  if (!IsKw("for")) return Unexpected("'for' in comprehension");
  while (IsKw("for")) {
    Advance();
    Comprehension& c = comps->emplace_back();
    c.target.emplace_back();
    if (!ParseTargetList(&c.target.back())) return false;
    if (!CheckTarget(c.target.back(), TargetContext::kFor)) return false;
    if (!ExpectKw("in", "expected 'in' after comprehension target")) return false;
    c.iter.emplace_back();
    if (!ParseOr(&c.iter.back())) return false;
    while (AcceptKw("if")) {
      c.ifs.emplace_back();
      if (!ParseOr(&c.ifs.back())) return false;
    }
    if (IsKw("async")) return Fail(Cur(), "'async' is not supported");
  }
  return true;
}

bool Parser::ParseTargetList(PyExpr* out) {
  // Targets stop below comparisons: `for x in y` must not read `x in y`.
  Loc start = Cur().loc;
  auto item = [&](PyExpr* e) {
    if (!IsOp("*")) return ParseBinary(e, 0);
    e->kind = PyExprKind::kStarred;
    e->loc = Cur().loc;
    Advance();
    e->elts.emplace_back();
    return ParseBinary(&e->elts.back(), 0);
  };
  if (!item(out)) return false;
  if (!IsOp(",")) return true;
  Wrap(out, PyExprKind::kTuple, start);
  while (AcceptOp(",")) {
    if (IsKw("in")) break;
    out->elts.emplace_back();
    if (!item(&out->elts.back())) return false;
  }
  return true;
}

bool Parser::ParseAtom(PyExpr* out) {
  const Token& t = Cur();
  out->loc = t.loc;
  switch (t.kind) {
  case TokKind::kName:
    out->kind = PyExprKind::kName;
    out->str.assign(t.text.data(), t.text.size());
    Advance();
    return true;
  case TokKind::kInt:
    out->kind = PyExprKind::kInt;
    out->ival = t.ival;
    Advance();
    return true;
  case TokKind::kFloat:
    out->kind = PyExprKind::kFloat;
    out->fval = t.fval;
    Advance();
    return true;
  case TokKind::kString:
    return ParseStrings(out);
  case TokKind::kKeyword:
    if (t.text == "None" || t.text == "True" || t.text == "False") {
      out->kind = t.text == "None" ? PyExprKind::kNone : PyExprKind::kBool;
      out->ival = t.text == "True";
      Advance();
      return true;
    }
    if (t.text == "yield" || t.text == "await")
      return Fail(t, absl::StrCat("'", std::string(t.text), "' is not supported"));
    return Unexpected("an expression");
  case TokKind::kOp:
    if (t.text == "(") return ParseParenthesized(out);
    if (t.text == "[") return ParseListDisplay(out);
    if (t.text == "{") return ParseBraceDisplay(out);
    if (t.text == "...") {
      out->kind = PyExprKind::kEllipsis;
      Advance();
      return true;
    }
    return Unexpected("an expression");
  default:
    return Unexpected("an expression");
  }
}

bool Parser::ParseStrings(PyExpr* out) {
  out->kind = PyExprKind::kString;
  size_t first = pos_;
  bool bytes = false;
  while (Cur().kind == TokKind::kString) {
    StringLiteralInfo info = ClassifyStringLiteral(Cur().text);
    if (pos_ == first)
      bytes = info.is_bytes;
    else if (bytes != info.is_bytes)
      return Fail(Cur(), "cannot mix bytes and nonbytes literals");
    out->is_fstring |= info.is_fstring;
    Advance();
  }
  size_t last = pos_;
  if (out->is_fstring) {
    // The raw text stays in str (diagnostics); the parts go to elts.
    for (size_t i = first; i < last; ++i) {
      if (i > first) out->str.push_back(' ');
      out->str.append(toks_[i].text.data(), toks_[i].text.size());
    }
    // A field that does not parse is kept as the expression's error rather
    // than breaking the statement: drivers around kernels use f-string forms
    // that the kernel never evaluates.
    for (size_t i = first; i < last; ++i) {
      if (ParseFStringParts(toks_[i], out)) continue;
      PyExpr error;
      error.kind = PyExprKind::kString;
      error.loc = err_loc_;
      error.str = std::move(err_msg_);
      failed_ = false;
      err_msg_.clear();
      out->elts.clear();
      out->values.push_back(std::move(error));
      break;
    }
    return true;
  }
  std::string error;
  for (size_t i = first; i < last; ++i) {
    size_t offset = 0;
    if (DecodeStringLiteral(toks_[i].text, &out->str, &error, &offset)) continue;
    Loc loc = toks_[i].loc;
    std::string_view before = toks_[i].text.substr(0, offset);
    size_t nl = before.find_last_of('\n');
    if (nl == std::string_view::npos) {
      loc.col += static_cast<int32_t>(offset);
    } else {
      for (char c : before) loc.line += c == '\n';
      loc.col = static_cast<int32_t>(offset - nl);
    }
    return FailAt(loc, error);
  }
  return true;
}

namespace {

// The location of byte `offset` of a token's text that starts at `start`.
Loc LocInToken(Loc start, std::string_view text, size_t offset) {
  Loc loc = start;
  for (size_t k = 0; k < offset && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++loc.line;
      loc.col = 1;
    } else {
      ++loc.col;
    }
  }
  return loc;
}

// Moves the locations of an expression parsed from a piece of text that
// starts at `base` in the file (its own locations start at 1:1).
void ShiftLocs(PyExpr* e, Loc base) {
  auto shift = [&](Loc* l) {
    if (l->line == 1) l->col += base.col - 1;
    l->line += base.line - 1;
  };
  shift(&e->loc);
  for (auto* list : {&e->elts, &e->values, &e->args}) {
    for (PyExpr& x : *list) ShiftLocs(&x, base);
  }
  for (Keyword& k : e->keywords) {
    shift(&k.loc);
    for (PyExpr& x : k.value) ShiftLocs(&x, base);
  }
  for (Param& p : e->params) {
    shift(&p.loc);
    for (PyExpr& x : p.annotation) ShiftLocs(&x, base);
    for (PyExpr& x : p.default_value) ShiftLocs(&x, base);
  }
  for (Comprehension& c : e->comps) {
    for (PyExpr& x : c.target) ShiftLocs(&x, base);
    for (PyExpr& x : c.iter) ShiftLocs(&x, base);
    for (PyExpr& x : c.ifs) ShiftLocs(&x, base);
  }
}

// f-strings nest only through the expressions of their fields, and each
// level needs another quote style, so four levels are Python's limit; the
// bound keeps hostile input from recursing further.
constexpr int kMaxFStringNesting = 4;
thread_local int fstring_nesting = 0;

} // namespace

bool Parser::ParseFStringParts(const Token& tok, PyExpr* out) {
  std::string_view text = tok.text;
  StringLiteralInfo info = ClassifyStringLiteral(text);
  auto add_literal = [&](std::string value) {
    if (value.empty()) return;
    if (!out->elts.empty() && !out->elts.back().is_fstring) {
      out->elts.back().str += value;
      return;
    }
    PyExpr lit;
    lit.kind = PyExprKind::kString;
    lit.loc = tok.loc;
    lit.str = std::move(value);
    out->elts.push_back(std::move(lit));
  };
  if (!info.is_fstring) {
    std::string value, error;
    size_t offset = 0;
    if (!DecodeStringLiteral(text, &value, &error, &offset)) {
      return FailAt(LocInToken(tok.loc, text, offset), error);
    }
    add_literal(std::move(value));
    return true;
  }
  if (text.size() < info.prefix_len + 2 * info.quote_len) {
    return FailAt(tok.loc, "malformed string literal");
  }
  const std::string_view quote = text.substr(info.prefix_len, info.quote_len);
  const size_t end = text.size() - info.quote_len;
  // Literal text between fields: escapes decoded like a plain literal with
  // the same quotes.
  auto flush = [&](size_t from, size_t to) -> bool {
    std::string_view seg = text.substr(from, to - from);
    if (info.is_raw) {
      add_literal(std::string(seg));
      return true;
    }
    std::string lit = std::string(quote) + std::string(seg) + std::string(quote);
    std::string value, error;
    size_t offset = 0;
    if (!DecodeStringLiteral(lit, &value, &error, &offset)) {
      return FailAt(LocInToken(tok.loc, text, from + offset - quote.size()), error);
    }
    add_literal(std::move(value));
    return true;
  };
  size_t i = info.prefix_len + info.quote_len;
  size_t run = i;
  while (i < end) {
    char c = text[i];
    if (c == '\\' && !info.is_raw) {
      i += 2; // an escape never opens or closes a field
      continue;
    }
    if (c == '}') {
      if (i + 1 < end && text[i + 1] == '}') {
        if (!flush(run, i + 1)) return false;
        i += 2;
        run = i;
        continue;
      }
      return FailAt(LocInToken(tok.loc, text, i), "f-string: single '}' is not allowed");
    }
    if (c != '{') {
      ++i;
      continue;
    }
    if (i + 1 < end && text[i + 1] == '{') {
      if (!flush(run, i + 1)) return false;
      i += 2;
      run = i;
      continue;
    }
    if (!flush(run, i)) return false;
    // A replacement field: {expression[!conversion][:spec]}.
    const size_t open = i;
    const Loc field_loc = LocInToken(tok.loc, text, open);
    size_t j = i + 1;
    int depth = 0;
    char in_quote = 0;
    size_t doc_end = 0; // {x = }: the text "x = " (up to here), then repr(x)
    while (j < end) {
      char d = text[j];
      if (!in_quote && depth == 0 && d == '=' &&
          std::string_view("=!<>").find(text[j - 1]) == std::string_view::npos) {
        size_t k = j + 1;
        while (k < end && text[k] == ' ') ++k;
        if (k < end && (text[k] == '}' || text[k] == '!' || text[k] == ':')) {
          doc_end = k;
          break;
        }
      }
      if (in_quote) {
        if (d == '\\') {
          ++j;
        } else if (d == in_quote) {
          in_quote = 0;
        }
      } else if (d == '\'' || d == '"') {
        in_quote = d;
      } else if (d == '(' || d == '[' || d == '{') {
        ++depth;
      } else if (d == ')' || d == ']' || (d == '}' && depth > 0)) {
        --depth;
      } else if (depth == 0 &&
                 (d == '}' || d == ':' || (d == '!' && (j + 1 >= end || text[j + 1] != '=')))) {
        break;
      }
      ++j;
    }
    if (j >= end) return FailAt(field_loc, "f-string: expecting '}'");
    std::string_view expr_text = text.substr(open + 1, j - open - 1);
    if (expr_text.find_first_not_of(" \t\n\r") == std::string_view::npos) {
      return FailAt(field_loc, "f-string: empty expression not allowed");
    }
    const bool self_documenting = doc_end != 0;
    if (self_documenting) {
      add_literal(std::string(text.substr(open + 1, doc_end - open - 1)));
      j = doc_end;
    }
    PyExpr field;
    field.kind = PyExprKind::kString;
    field.is_fstring = true;
    field.loc = field_loc;
    if (text[j] == '!') {
      if (j + 1 >= end || std::string_view("rsa").find(text[j + 1]) == std::string_view::npos) {
        return FailAt(LocInToken(tok.loc, text, j),
                      "f-string: invalid conversion character (expected 'r', 's' or 'a')");
      }
      field.ops.emplace_back(1, text[j + 1]);
      j += 2;
      if (j >= end || (text[j] != ':' && text[j] != '}')) {
        return FailAt(field_loc, "f-string: expecting '}'");
      }
    }
    if (text[j] == ':') {
      size_t spec = j + 1;
      while (j < end && text[j] != '}') {
        if (text[j] == '{') {
          return FailAt(LocInToken(tok.loc, text, j),
                        "f-string: nested replacement fields in a format spec are not supported");
        }
        ++j;
      }
      if (j >= end) return FailAt(field_loc, "f-string: expecting '}'");
      field.str = std::string(text.substr(spec, j - spec));
    }
    if (self_documenting && field.ops.empty() && field.str.empty()) field.ops.emplace_back("r");
    // The expression, parsed on its own and moved to where it is in the file.
    if (fstring_nesting >= kMaxFStringNesting) {
      return FailAt(field_loc, "f-string: expressions nested too deeply");
    }
    // Parenthesized as Python does: leading spaces and line breaks inside
    // the field are then not indentation. The '(' takes the place of '{'.
    std::string source = "(" + std::string(expr_text) + ")";
    absl::StatusOr<TokenStream> sub = Tokenize(source, file_);
    if (!sub.ok()) return FailAt(field_loc, "f-string: invalid expression");
    Parser parser(*sub, file_);
    PyExpr expr;
    ++fstring_nesting;
    bool ok = parser.ParseExpressionInput(&expr);
    --fstring_nesting;
    const Loc base = field_loc;
    if (!ok) {
      Loc at = parser.error_loc();
      if (at.line == 1) at.col += base.col - 1;
      at.line += base.line - 1;
      return FailAt(at, absl::StrCat("f-string: ", parser.error_message()));
    }
    ShiftLocs(&expr, base);
    field.elts.push_back(std::move(expr));
    out->elts.push_back(std::move(field));
    i = j + 1;
    run = i;
  }
  return flush(run, end);
}

bool Parser::ParseParenthesized(PyExpr* out) {
  Loc open = Cur().loc;
  size_t items = ItemsHint(Cur());
  Advance();
  if (AcceptOp(")")) {
    out->kind = PyExprKind::kTuple;
    out->loc = open;
    return true;
  }
  if (IsKw("yield")) return Fail(Cur(), "'yield' is not supported");
  if (!ParseStarOrNamed(out)) return false;
  if (IsKw("for")) {
    Wrap(out, PyExprKind::kComprehension, open)->str = "gen";
    if (!ParseComprehensionClauses(&out->comps)) return false;
    return ExpectOp(")", "expected ')' after generator expression");
  }
  if (!IsOp(",")) {
    if (out->kind == PyExprKind::kStarred)
      return FailAt(out->loc, "cannot use starred expression here");
    return ExpectOp(")", "expected ',' or ')'");
  }
  Wrap(out, PyExprKind::kTuple, open, items);
  while (AcceptOp(",")) {
    if (IsOp(")")) break;
    out->elts.emplace_back();
    if (!ParseStarOrNamed(&out->elts.back())) return false;
  }
  return ExpectOp(")", "expected ',' or ')' in tuple");
}

bool Parser::ParseListDisplay(PyExpr* out) {
  Loc open = Cur().loc;
  size_t items = ItemsHint(Cur());
  Advance();
  out->kind = PyExprKind::kList;
  out->loc = open;
  if (AcceptOp("]")) return true;
  out->elts.reserve(items);
  out->elts.emplace_back();
  if (!ParseStarOrNamed(&out->elts.back())) return false;
  if (IsKw("for")) {
    out->kind = PyExprKind::kComprehension;
    out->str = "list";
    if (!ParseComprehensionClauses(&out->comps)) return false;
    return ExpectOp("]", "expected ']' after list comprehension");
  }
  while (AcceptOp(",")) {
    if (IsOp("]")) break;
    out->elts.emplace_back();
    if (!ParseStarOrNamed(&out->elts.back())) return false;
  }
  return ExpectOp("]", "expected ',' or ']' in list");
}

bool Parser::ParseBraceDisplay(PyExpr* out) {
  Loc open = Cur().loc;
  size_t items = ItemsHint(Cur());
  Advance();
  out->loc = open;
  out->kind = PyExprKind::kDict;
  if (AcceptOp("}")) return true;
  out->elts.reserve(items);
  // Decide dict or set from the first entry.
  auto dict_entry = [&]() {
    if (IsOp("**")) {
      PyExpr& key = out->elts.emplace_back();
      key.loc = Cur().loc;
      key.is_star = true;
      Advance();
      out->values.emplace_back();
      return ParseBinary(&out->values.back(), 0);
    }
    out->elts.emplace_back();
    if (!ParseTest(&out->elts.back())) return false;
    if (!ExpectOp(":", "expected ':' after dict key")) return false;
    out->values.emplace_back();
    return ParseTest(&out->values.back());
  };
  bool is_dict = true;
  if (IsOp("**")) {
    if (!dict_entry()) return false;
  } else {
    out->elts.emplace_back();
    if (!ParseStarOrNamed(&out->elts.back())) return false;
    if (AcceptOp(":")) {
      if (out->elts.back().kind == PyExprKind::kStarred)
        return FailAt(out->elts.back().loc, "cannot use a starred expression in a dict key");
      out->values.emplace_back();
      if (!ParseTest(&out->values.back())) return false;
      if (IsKw("for")) {
        out->kind = PyExprKind::kComprehension;
        out->str = "dict";
        out->elts.push_back(std::move(out->values.back()));
        out->values.clear();
        if (!ParseComprehensionClauses(&out->comps)) return false;
        return ExpectOp("}", "expected '}' after dict comprehension");
      }
    } else {
      is_dict = false;
      out->kind = PyExprKind::kSet;
      if (IsKw("for")) {
        out->kind = PyExprKind::kComprehension;
        out->str = "set";
        if (!ParseComprehensionClauses(&out->comps)) return false;
        return ExpectOp("}", "expected '}' after set comprehension");
      }
    }
  }
  while (AcceptOp(",")) {
    if (IsOp("}")) break;
    if (is_dict) {
      if (!dict_entry()) return false;
    } else {
      out->elts.emplace_back();
      if (!ParseStarOrNamed(&out->elts.back())) return false;
    }
  }
  return ExpectOp("}", is_dict ? "expected ',' or '}' in dict" : "expected ',' or '}' in set");
}

} // namespace kiln::frontend::parser_internal
