// Internal to the parser (parser.cc: module and statements, parser_expr.cc:
// expressions). A recursive-descent parser over a TokenStream.
//
// Every Parse* function fills a node in place (no StatusOr<PyExpr> copies on
// the hot path) and returns false after recording the first error; callers
// return false at once. Thread-safety: one Parser per call.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/frontend/ast.h"
#include "compiler/frontend/lexer.h"

namespace kiln::frontend::parser_internal {

enum class TargetContext : uint8_t { kAssign, kAugAssign, kAnnAssign, kDel, kFor, kWith };

class Parser {
 public:
  Parser(const TokenStream& stream, std::string_view file_name)
      : toks_(stream.tokens), errors_(stream.errors), top_level_lines_(stream.top_level_lines),
        file_(file_name) {}

  void ParseFile(Module* module);
  // A whole input that is one expression.
  bool ParseExpressionInput(PyExpr* out);
  // "file:line:col: message" of the first error.
  std::string ErrorText() const;
  Loc error_loc() const { return err_loc_; }
  const std::string& error_message() const { return err_msg_; }

 private:
  friend class DepthGuard;

  // --- tokens ---
  const Token& Cur() const { return toks_[pos_]; }
  const Token& Ahead(size_t k) const {
    size_t i = pos_ + k;
    return toks_[i < toks_.size() ? i : toks_.size() - 1];
  }
  void Advance() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool IsOp(std::string_view op) const { return Cur().kind == TokKind::kOp && Cur().text == op; }
  bool IsKw(std::string_view kw) const {
    return Cur().kind == TokKind::kKeyword && Cur().text == kw;
  }
  bool AcceptOp(std::string_view op) {
    if (!IsOp(op)) return false;
    Advance();
    return true;
  }
  bool AcceptKw(std::string_view kw) {
    if (!IsKw(kw)) return false;
    Advance();
    return true;
  }
  bool ExpectOp(std::string_view op, std::string_view message) {
    return AcceptOp(op) || Fail(Cur(), message);
  }
  bool ExpectKw(std::string_view kw, std::string_view message) {
    return AcceptKw(kw) || Fail(Cur(), message);
  }
  bool ExpectName(std::string* out, std::string_view message);
  bool AtStatementEnd() const;
  static bool StartsExpression(const Token& t);
  // Records the first error (a kError token reports the lexer's message).
  // One more link of a left-deep chain in this statement; false (with the
  // error recorded) past kMaxChainLinks.
  bool CountLink();
  bool Fail(const Token& at, std::string_view message);
  bool FailAt(Loc loc, std::string_view message);
  bool Unexpected(std::string_view what_expected);
  static std::string Describe(const Token& t);
  // Sizing hints the lexer left on an opening bracket (see lexer.h), capped so
  // that hostile input cannot make them allocate much.
  static size_t ItemsHint(const Token& open) { return Cap(open.ival >> 32); }
  static size_t EqualsHint(const Token& open) { return Cap(open.ival & 0xffffffff); }
  static size_t Cap(int64_t n) { return n < 0 ? 0 : n > 64 ? 64 : static_cast<size_t>(n); }

  // --- statements (parser.cc) ---
  bool ParseStatement(std::vector<PyStmt>* out);
  bool ParseSimpleStatements(std::vector<PyStmt>* out);
  bool ParseSimpleStatement(PyStmt* s);
  bool ParseExprOrAssign(PyStmt* s);
  bool ParseBlock(std::vector<PyStmt>* body, std::string_view what, Loc header);
  // `else: BLOCK` if the next token is `else`; true when absent.
  bool ParseOptionalElse(std::vector<PyStmt>* orelse);
  bool ParseDecorated(std::vector<PyStmt>* out);
  bool ParseFunctionDef(PyStmt* s);
  bool ParseClassDef(PyStmt* s);
  bool ParseIf(PyStmt* s);
  bool ParseFor(PyStmt* s);
  bool ParseWhile(PyStmt* s);
  bool ParseWith(PyStmt* s);
  bool ParseWithItem(PyStmt* s);
  bool ParseTry(PyStmt* s);
  bool ParseImport(PyStmt* s);
  bool ParseFromImport(PyStmt* s);
  bool ParseDottedName(std::string* out);
  bool ParseParams(std::vector<Param>* params, bool annotations, std::string_view close);
  bool CheckTarget(const PyExpr& e, TargetContext ctx);

  // Top-level recovery.
  size_t ResyncPoint(size_t start) const;
  std::vector<std::string> GuessDefines(size_t start, size_t end) const;
  bool LineEndsWithColon(size_t start) const;

  // --- expressions (parser_expr.cc) ---
 public:
  bool ParseStarExpressions(PyExpr* out); // `a, *b` -> tuple
  bool ParseTest(PyExpr* out);            // lambda, conditional
 private:
  bool ParseStarOrTest(PyExpr* out);
  bool ParseStarOrNamed(PyExpr* out);
  bool ParseNamedExpr(PyExpr* out);
  bool ParseLambda(PyExpr* out);
  bool ParseOr(PyExpr* out);
  bool ParseAnd(PyExpr* out);
  bool ParseNot(PyExpr* out);
  bool ParseComparison(PyExpr* out);
  bool ParseBinary(PyExpr* out, int min_prec);
  bool ParseFactor(PyExpr* out);
  bool ParsePower(PyExpr* out);
  bool ParsePrimary(PyExpr* out);
  bool ParseAtom(PyExpr* out);
  bool ParseStrings(PyExpr* out);
  // Appends the parts of one string token of an f-string expression to
  // out->elts (ast.h): literal text, and replacement fields whose
  // expressions are parsed here, located in the file.
  bool ParseFStringParts(const Token& tok, PyExpr* out);
  bool ParseParenthesized(PyExpr* out);
  bool ParseListDisplay(PyExpr* out);
  bool ParseBraceDisplay(PyExpr* out);
  bool ParseCallArgs(PyExpr* call);
  bool ParseSubscriptList(PyExpr* out, size_t items_hint);
  bool ParseSliceItem(PyExpr* out);
  bool ParseComprehensionClauses(std::vector<Comprehension>* comps);
  bool ParseTargetList(PyExpr* out); // for-loop and comprehension targets

  const std::vector<Token>& toks_;
  const std::vector<std::string>& errors_;
  int64_t top_level_lines_;
  std::string_view file_;
  size_t pos_ = 0;
  int depth_ = 0;
  int chain_links_ = 0; // chain links of the statement being parsed (CountLink)
  bool failed_ = false;
  Loc err_loc_;
  std::string err_msg_;
};

// Counts one level of recursion that the input controls.
class DepthGuard {
 public:
  explicit DepthGuard(Parser* p) : p_(p) { ++p_->depth_; }
  ~DepthGuard() { --p_->depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
  // False (with the error recorded) when the nesting is too deep.
  bool Ok();

 private:
  Parser* p_;
};

} // namespace kiln::frontend::parser_internal
