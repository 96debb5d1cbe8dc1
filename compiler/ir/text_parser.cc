// Recursive-descent parser of the textual tile IR.
//
// 1. The whole input is lexed up front (text_lexer.h); a lexical error is a
//    token that the parser reports when it reaches it.
// 2. Declarations and statements are parsed top-down while a stack of scope
//    frames maps names to their dtypes, so that every expression gets its
//    dtype as it is built (a name from its definition, a load from its
//    buffer, operators by the builder's rules).
// 3. Locations: an expression or region without an `@L:C` annotation takes
//    the location of its parent. The parent's location is often only known
//    later (`(a + b)@3:4`, or `loc(...)` at the end of a statement), so such
//    nodes carry kInherit until the statement is complete and ResolveLocs
//    fills them in top-down. Statement-level constructs without `loc(...)`
//    take their position in the text, so that later diagnostics about a
//    hand-written .kir file point into it.
// 4. Expression-tree depth is bounded by kMaxDepth and expression recursion
//    (unary operators, parentheses) by three times that, blocks by kMaxDepth,
//    so hostile input cannot overflow the stack here or in the passes that
//    walk the result. The factor three is what printing can add: with
//    locations, each negation of a chain prints as `(-(...)@L:C)`, three
//    frames per tree level, and whatever parses must parse again after
//    printing. The recursive path keeps small frames (cold cases out of
//    line, statements and operands parsed in place): docs/design/ir-text.md
//    (Limits) gives the stack the deepest accepted text needs.
// 5. Size: at most text::kMaxTokens tokens (a longer text is refused before
//    parsing) and kMaxStatements statements (limits.h), so that what a text
//    costs is bounded before anything is built.
#include "compiler/ir/text_parser.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/intrinsics.h"
#include "compiler/ir/limits.h"
#include "compiler/ir/text_lexer.h"
#include "util/status_macros.h"

namespace kiln::ir {
namespace {

using text::Token;
using text::TokKind;

constexpr int kMaxDepth = 256;
// Placeholder for "take the parent's location"; never survives parsing.
constexpr Loc kInherit{-1, -1};

std::string S(std::string_view sv) { return std::string(sv); }

struct BufferInfo {
  DType dtype = DType::kFloat32;
  Scope scope = Scope::kGlobal;
};

// The names one scope defines. Variables and buffers are separate
// namespaces: `x` reads a variable, `x[i]` loads from a buffer.
struct Frame {
  absl::flat_hash_map<std::string, DType> vars;
  absl::flat_hash_map<std::string, BufferInfo> buffers;
};

class DepthScope {
 public:
  explicit DepthScope(int* depth) : depth_(depth) { ++*depth_; }
  ~DepthScope() { --*depth_; }
  DepthScope(const DepthScope&) = delete;
  DepthScope& operator=(const DepthScope&) = delete;

 private:
  int* depth_;
};

void ResolveLocs(Expr* e, Loc parent) {
  if (e->loc == kInherit) e->loc = parent;
  for (Expr& a : e->args) ResolveLocs(&a, e->loc);
}

void ResolveLocs(Region* r, Loc parent) {
  if (r->loc == kInherit) r->loc = parent;
  for (Range& range : r->ranges) {
    ResolveLocs(&range.min, r->loc);
    ResolveLocs(&range.extent, r->loc);
  }
}

void ResolveLocs(Buffer* b, Loc parent) {
  if (b->loc == kInherit) b->loc = parent;
  for (Expr& e : b->shape) ResolveLocs(&e, b->loc);
  ResolveLocs(&b->init, b->loc);
  if (b->index_layout) {
    IndexLayout& l = *b->index_layout;
    if (l.loc == kInherit) l.loc = b->loc;
    for (Expr& e : l.forward) ResolveLocs(&e, l.loc);
  }
}

// Every field of a statement except its bodies (resolved on their own).
void ResolveStmtLocs(Stmt* s) {
  ResolveLocs(&s->buffer, s->loc);
  for (Region& r : s->regions) ResolveLocs(&r, s->loc);
  ResolveLocs(&s->value, s->loc);
  ResolveLocs(&s->cond, s->loc);
  for (Expr& e : s->extents) ResolveLocs(&e, s->loc);
  for (Expr& e : s->indices) ResolveLocs(&e, s->loc);
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view file) : tokens_(text::Lex(text)), file_(file) {}

  absl::StatusOr<Program> Run() {
    // A text past the token limit is reported as such before anything else:
    // looking ahead at its last token could otherwise read as a syntax error.
    if (tokens_.size() > text::kMaxTokens && tokens_.back().kind == TokKind::kError) {
      return Error(tokens_.back(), "");
    }
    Program p;
    p.source_name = file_;
    RETURN_IF_ERROR(ExpectWord("program"));
    RETURN_IF_ERROR(ExpectPunct("@"));
    if (Peek().kind == TokKind::kString) {
      p.name = Next().value;
    } else {
      ASSIGN_OR_RETURN(p.name, ExpectName("a program name"));
    }
    const Token& open = Peek();
    RETURN_IF_ERROR(ExpectPunct("{"));
    frames_.emplace_back();
    while (true) {
      if (IsWord("attr")) {
        RETURN_IF_ERROR(ParseAttr(&p));
      } else if (IsWord("sym")) {
        RETURN_IF_ERROR(ParseSymbol(&p));
      } else if (IsWord("param")) {
        RETURN_IF_ERROR(ParseParam(&p));
      } else if (IsWord("workspace")) {
        RETURN_IF_ERROR(ParseWorkspace(&p));
      } else if (IsWord("kernel")) {
        RETURN_IF_ERROR(ParseKernel(&p.kernel));
        // Further kernels run after it (ir.h: Program::next_kernels).
        while (IsWord("kernel")) {
          if (p.next_kernels.size() + 1 >= kMaxKernels) {
            return Error(Peek(), absl::StrCat("a program has at most ", kMaxKernels, " kernels"));
          }
          RETURN_IF_ERROR(ParseKernel(&p.next_kernels.emplace_back()));
        }
        break;
      } else {
        return Expected("'attr', 'sym', 'param', 'workspace' or 'kernel'");
      }
    }
    RETURN_IF_ERROR(ExpectClose(open, "program"));
    if (Peek().kind != TokKind::kEof) return Expected("end of input");
    return p;
  }

 private:
  // --- tokens ---------------------------------------------------------------

  const Token& Peek(size_t k = 0) const { return tokens_[std::min(pos_ + k, tokens_.size() - 1)]; }
  const Token& Next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool IsPunct(std::string_view p, size_t k = 0) const {
    return Peek(k).kind == TokKind::kPunct && Peek(k).text == p;
  }
  bool IsWord(std::string_view w, size_t k = 0) const {
    return Peek(k).kind == TokKind::kIdent && Peek(k).text == w;
  }
  // True if token k+1 starts right where token k ends (`-5`, `<-`).
  bool Adjacent(size_t k) const { return Peek(k).end == Peek(k + 1).begin; }

  absl::Status Error(const Token& t, std::string_view message) const {
    if (t.kind == TokKind::kError) return ErrorAt(file_, t.loc, t.value);
    return ErrorAt(file_, t.loc, message);
  }

  static std::string Describe(const Token& t) {
    switch (t.kind) {
    case TokKind::kEof:
      return "end of input";
    case TokKind::kString:
      return "a string";
    default:
      return absl::StrCat("'", S(t.text), "'");
    }
  }

  absl::Status Expected(std::string_view what) const {
    return Error(Peek(), absl::StrCat("expected ", S(what), ", got ", Describe(Peek())));
  }

  absl::Status ExpectPunct(std::string_view p) {
    if (!IsPunct(p)) return Expected(absl::StrCat("'", S(p), "'"));
    Next();
    return absl::OkStatus();
  }

  absl::Status ExpectWord(std::string_view w) {
    if (!IsWord(w)) return Expected(absl::StrCat("'", S(w), "'"));
    Next();
    return absl::OkStatus();
  }

  // The `}` matching `open`, with a message naming the block at end of input.
  absl::Status ExpectClose(const Token& open, std::string_view what) {
    if (IsPunct("}")) {
      Next();
      return absl::OkStatus();
    }
    if (Peek().kind == TokKind::kEof) {
      return Error(Peek(),
                   absl::StrCat("unterminated ", S(what), ": expected '}' to close the '{' at ",
                                open.loc.line, ":", open.loc.col, ", got end of input"));
    }
    return Expected("'}'");
  }

  absl::StatusOr<std::string> ExpectName(std::string_view what) {
    const Token& t = Peek();
    if (t.kind != TokKind::kIdent || !text::IsIdentifier(t.text)) return Expected(what);
    Next();
    return S(t.text);
  }

  absl::StatusOr<DType> ExpectDType() {
    const Token& t = Peek();
    if (t.kind != TokKind::kIdent) return Expected("a dtype");
    std::optional<DType> d = ParseDType(t.text);
    if (!d) return Error(t, absl::StrCat("unknown dtype '", S(t.text), "'"));
    Next();
    return *d;
  }

  absl::StatusOr<Scope> ExpectScope() {
    const Token& t = Peek();
    if (t.kind != TokKind::kIdent) return Expected("a scope");
    std::optional<Scope> s = ParseScope(t.text);
    if (!s) return Error(t, absl::StrCat("unknown scope '", S(t.text), "'"));
    Next();
    return *s;
  }

  // --- numbers --------------------------------------------------------------

  absl::StatusOr<int64_t> IntValue(const Token& t, bool negative) const {
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    uint64_t limit =
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
    if (ec != std::errc() || ptr != t.text.data() + t.text.size() || v > limit) {
      return Error(t, "integer literal out of range");
    }
    if (!negative) return static_cast<int64_t>(v);
    return v == limit ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(v);
  }

  absl::StatusOr<double> FloatValue(const Token& t, bool negative) const {
    double v = 0;
    auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || ptr != t.text.data() + t.text.size()) {
      return Error(t, "float literal out of range");
    }
    return negative ? -v : v;
  }

  // An integer with an optional attached `-` (flags, thread counts).
  absl::StatusOr<int64_t> ExpectInt() {
    bool negative = IsPunct("-") && Peek(1).kind == TokKind::kInt && Adjacent(0);
    if (negative) Next();
    if (Peek().kind != TokKind::kInt) return Expected("an integer");
    return IntValue(Next(), negative);
  }

  absl::StatusOr<int32_t> ExpectInt32() {
    const Token& t = Peek();
    ASSIGN_OR_RETURN(int64_t v, ExpectInt());
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      return Error(t, "integer out of range for int32");
    }
    return static_cast<int32_t>(v);
  }

  absl::StatusOr<bool> ExpectBool() {
    if (IsWord("true") || IsWord("false")) return Next().text == "true";
    return Expected("'true' or 'false'");
  }

  absl::StatusOr<std::string> ExpectWordOrString(std::string_view what) {
    const Token& t = Peek();
    if (t.kind == TokKind::kString) return Next().value;
    if (t.kind == TokKind::kIdent) return S(Next().text);
    return Expected(what);
  }

  // `L:C` after `@` or inside `loc(...)`.
  absl::StatusOr<Loc> ParseLocNumbers() {
    Loc loc;
    ASSIGN_OR_RETURN(loc.line, ExpectLocPart());
    RETURN_IF_ERROR(ExpectPunct(":"));
    ASSIGN_OR_RETURN(loc.col, ExpectLocPart());
    return loc;
  }

  absl::StatusOr<int32_t> ExpectLocPart() {
    if (Peek().kind != TokKind::kInt) return Expected("a line or column number");
    const Token& t = Next();
    ASSIGN_OR_RETURN(int64_t v, IntValue(t, false));
    if (v > std::numeric_limits<int32_t>::max()) return Error(t, "location out of range");
    return static_cast<int32_t>(v);
  }

  // An optional ` loc(L:C)`; `loc` stays unchanged without one.
  absl::Status ParseStmtLoc(Loc* loc) {
    if (!IsWord("loc") || !IsPunct("(", 1)) return absl::OkStatus();
    Next();
    Next();
    ASSIGN_OR_RETURN(*loc, ParseLocNumbers());
    return ExpectPunct(")");
  }

  // An optional postfix `@L:C`.
  absl::Status ParseAnnotation(Loc* loc) {
    if (!IsPunct("@")) return absl::OkStatus();
    Next();
    ASSIGN_OR_RETURN(*loc, ParseLocNumbers());
    if (IsPunct("@")) return Error(Peek(), "duplicate location annotation");
    return absl::OkStatus();
  }

  // --- scopes ---------------------------------------------------------------

  const DType* FindVar(const std::string& name) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      auto found = it->vars.find(name);
      if (found != it->vars.end()) return &found->second;
    }
    return nullptr;
  }

  const BufferInfo* FindBuffer(const std::string& name) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      auto found = it->buffers.find(name);
      if (found != it->buffers.end()) return &found->second;
    }
    return nullptr;
  }

  absl::StatusOr<BufferInfo> ExpectBuffer() {
    const Token& t = Peek();
    if (t.kind != TokKind::kIdent) return Expected("a buffer name");
    const BufferInfo* info = FindBuffer(S(t.text));
    if (info == nullptr) return Error(t, absl::StrCat("unknown buffer '", S(t.text), "'"));
    Next();
    return *info;
  }

  // --- expressions ----------------------------------------------------------

  absl::Status DepthError(const Token& t) const {
    return Error(t, absl::StrCat("nesting too deep (more than ", kMaxDepth, " levels)"));
  }

  absl::StatusOr<Expr> ParseExpr() {
    Expr e;
    int depth = 0;
    RETURN_IF_ERROR(ParseBinary(1, &e, &depth));
    return e;
  }

  // Precedence climbing; `depth` receives the height of the built tree.
  absl::Status ParseBinary(int min_prec, Expr* out, int* depth) {
    RETURN_IF_ERROR(ParseUnary(out, depth));
    while (Peek().kind == TokKind::kPunct) {
      std::optional<BinOp> op = text::BinOpFromSpelling(Peek().text);
      if (!op || text::BinOpPrecedence(*op) < min_prec) break;
      const Token& op_tok = Next();
      Expr rhs;
      int rhs_depth = 0;
      RETURN_IF_ERROR(ParseBinary(text::BinOpPrecedence(*op) + 1, &rhs, &rhs_depth));
      *depth = std::max(*depth, rhs_depth) + 1;
      if (*depth > kMaxDepth) return DepthError(op_tok);
      Combine(*op, out, &rhs);
    }
    return absl::OkStatus();
  }

  // *out = *out OP *rhs. Out of line, like the helpers below, so that the
  // builder's temporaries are not in the frames of the recursion
  // (ParseBinary -> ParseUnary -> ParsePrimary -> ParseBinary), which a deep
  // nest repeats up to 3 * kMaxDepth times.
  ABSL_ATTRIBUTE_NOINLINE static void Combine(BinOp op, Expr* out, Expr* rhs) {
    *out = Binary(op, std::move(*out), std::move(*rhs), kInherit);
  }

  bool AtNegativeLiteral() const {
    if (!IsPunct("-") || !Adjacent(0)) return false;
    TokKind k = Peek(1).kind;
    return k == TokKind::kInt || k == TokKind::kFloat || IsWord("inf", 1);
  }

  absl::Status ParseUnary(Expr* out, int* depth) {
    const Token& t = Peek();
    DepthScope scope(&depth_);
    if (depth_ > 3 * kMaxDepth) return DepthError(t);
    if (AtNegativeLiteral()) {
      *depth = 1;
      return ParseAnnotatedLiteral(out);
    }
    if (IsPunct("-") || IsPunct("!") || IsPunct("~")) {
      Next();
      UnOp op = t.text == "-" ? UnOp::kNeg : t.text == "!" ? UnOp::kNot : UnOp::kBitNot;
      // The operand is parsed into its final place (no temporaries here).
      out->args.clear();
      RETURN_IF_ERROR(ParseUnary(&out->args.emplace_back(), depth));
      *depth += 1;
      if (*depth > kMaxDepth) return DepthError(t);
      WrapUnary(op, out);
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(ParsePrimary(out, depth));
    return ParseAnnotation(&out->loc);
  }

  ABSL_ATTRIBUTE_NOINLINE absl::Status ParseAnnotatedLiteral(Expr* out) {
    ASSIGN_OR_RETURN(*out, ParseLiteral());
    return ParseAnnotation(&out->loc);
  }

  // *out holds its operand in args[0]; makes it that operand under `op`.
  ABSL_ATTRIBUTE_NOINLINE static void WrapUnary(UnOp op, Expr* out) {
    Expr x = std::move(out->args[0]);
    *out = Unary(op, std::move(x), kInherit);
  }

  // A number (with an optional attached `-`), inf, nan, true or false:
  // int32, float32 or bool; the `DTYPE(...)` form retypes it.
  absl::StatusOr<Expr> ParseLiteral() {
    bool negative = AtNegativeLiteral();
    if (negative) Next();
    const Token& t = Peek();
    if (t.kind == TokKind::kInt) {
      Next();
      ASSIGN_OR_RETURN(int64_t v, IntValue(t, negative));
      return IntImm(v, DType::kInt32, kInherit);
    }
    if (t.kind == TokKind::kFloat) {
      Next();
      ASSIGN_OR_RETURN(double v, FloatValue(t, negative));
      return FloatImm(v, DType::kFloat32, kInherit);
    }
    if (IsWord("inf")) {
      Next();
      double inf = std::numeric_limits<double>::infinity();
      return FloatImm(negative ? -inf : inf, DType::kFloat32, kInherit);
    }
    if (IsWord("nan")) {
      Next();
      return FloatImm(std::numeric_limits<double>::quiet_NaN(), DType::kFloat32, kInherit);
    }
    if (IsWord("true") || IsWord("false")) {
      Next();
      return BoolImm(t.text == "true", kInherit);
    }
    return Expected("a literal");
  }

  // `(a, b, ...)` or `[a, b, ...]`; `depth` receives the tallest argument.
  absl::Status ParseExprList(std::string_view open, std::string_view close, std::vector<Expr>* out,
                             int* depth) {
    RETURN_IF_ERROR(ExpectPunct(open));
    *depth = 0;
    if (IsPunct(close)) {
      Next();
      return absl::OkStatus();
    }
    while (true) {
      int d = 0;
      // In place: nothing else appends to `out` while an element is parsed.
      RETURN_IF_ERROR(ParseBinary(1, &out->emplace_back(), &d));
      *depth = std::max(*depth, d);
      if (IsPunct(close)) {
        Next();
        return absl::OkStatus();
      }
      if (!IsPunct(",")) return ExpectedCommaOr(close);
      Next();
    }
  }

  ABSL_ATTRIBUTE_NOINLINE absl::Status ExpectedCommaOr(std::string_view close) const {
    return Expected(absl::StrCat("',' or '", S(close), "'"));
  }

  absl::Status CheckArity(const Token& name, size_t want, size_t got) const {
    if (want == got) return absl::OkStatus();
    return Error(name, absl::StrCat("'", S(name.text), "' takes ", want,
                                    want == 1 ? " argument" : " arguments", ", got ", got));
  }

  absl::Status ParsePrimary(Expr* out, int* depth) {
    *depth = 1;
    if (IsPunct("(")) {
      Next();
      RETURN_IF_ERROR(ParseBinary(1, out, depth));
      return ExpectPunct(")");
    }
    return ParseAtom(out, depth);
  }

  // A primary other than a parenthesised expression. The recursion of a
  // deep expression passes through here, so this only dispatches: each form
  // is parsed out of line, its locals and error messages in its own frame.
  ABSL_ATTRIBUTE_NOINLINE absl::Status ParseAtom(Expr* out, int* depth) {
    const Token& t = Peek();
    if (t.kind == TokKind::kInt || t.kind == TokKind::kFloat) return ParseLiteralInto(out);
    if (IsPunct("&")) {
      return Error(t, "an address (&BUF[i]) is only allowed as an argument of a 'call' statement");
    }
    if (t.kind != TokKind::kIdent) return Expected("an expression");
    if (t.text == "true" || t.text == "false" || t.text == "inf" || t.text == "nan") {
      return ParseLiteralInto(out);
    }
    if ((t.text == "cast" || t.text == "reinterpret") && IsPunct("<", 1)) {
      return ParseCast(out, depth);
    }
    if (IsPunct("(", 1)) return ParseCall(out, depth);
    if (IsPunct("[", 1)) return ParseLoad(out, depth);
    return ParseName(out);
  }

  // "PREFIX" NAME "'" at `t`, out of line (see ParseAtom).
  ABSL_ATTRIBUTE_NOINLINE absl::Status NameError(const Token& t, std::string_view prefix) const {
    return Error(t, absl::StrCat(S(prefix), S(t.text), "'"));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::Status ParseLiteralInto(Expr* out) {
    ASSIGN_OR_RETURN(*out, ParseLiteral());
    return absl::OkStatus();
  }

  // cast<DTYPE>(x) or reinterpret<DTYPE>(x)
  ABSL_ATTRIBUTE_NOINLINE absl::Status ParseCast(Expr* out, int* depth) {
    const Token& t = Next();
    Next();
    ASSIGN_OR_RETURN(DType dtype, ExpectDType());
    RETURN_IF_ERROR(ExpectPunct(">"));
    out->args.clear();
    RETURN_IF_ERROR(ParseExprList("(", ")", &out->args, depth));
    RETURN_IF_ERROR(CheckArity(t, 1, out->args.size()));
    if (t.text == "reinterpret") {
      *out = Call(Intrinsic::kReinterpret, std::move(out->args), kInherit);
      out->dtype = dtype;
    } else {
      MakeCast(dtype, out);
    }
    return CountLevel(t, depth);
  }

  // *out holds the operand in args[0]; makes it cast<dtype>(operand).
  ABSL_ATTRIBUTE_NOINLINE static void MakeCast(DType dtype, Expr* out) {
    Expr x = std::move(out->args[0]);
    *out = Cast(dtype, std::move(x), kInherit);
  }

  // BUFFER[i, ...]
  ABSL_ATTRIBUTE_NOINLINE absl::Status ParseLoad(Expr* out, int* depth) {
    const Token& t = Peek();
    const BufferInfo* info = FindBuffer(S(t.text));
    if (info == nullptr) return NameError(t, "unknown buffer '");
    const DType dtype = info->dtype;
    Next();
    out->args.clear();
    RETURN_IF_ERROR(ParseExprList("[", "]", &out->args, depth));
    MakeLoad(S(t.text), dtype, out);
    return CountLevel(t, depth);
  }

  // *out holds the indices in args; makes it a load of `buffer`.
  ABSL_ATTRIBUTE_NOINLINE static void MakeLoad(std::string buffer, DType dtype, Expr* out) {
    std::vector<Expr> indices = std::move(out->args);
    *out = Load(std::move(buffer), dtype, std::move(indices), kInherit);
  }

  // A variable, or the bare name of a T.alloc_var scalar.
  ABSL_ATTRIBUTE_NOINLINE absl::Status ParseName(Expr* out) {
    const Token& t = Next();
    std::string name = S(t.text);
    if (const DType* dtype = FindVar(name)) {
      *out = VarRef(name, *dtype, kInherit);
      return absl::OkStatus();
    }
    if (const BufferInfo* info = FindBuffer(name)) {
      if (info->scope == Scope::kVar) {
        *out = VarRef(name, info->dtype, kInherit);
        return absl::OkStatus();
      }
      return Error(t, absl::StrCat("'", name, "' is a buffer; index it as ", name, "[...]"));
    }
    return Error(t, absl::StrCat("unknown name '", name, "'"));
  }

  // One more level above the arguments just parsed.
  absl::Status CountLevel(const Token& t, int* depth) const {
    *depth += 1;
    return *depth > kMaxDepth ? DepthError(t) : absl::OkStatus();
  }

  // NAME(...): min/max, select, thread_idx, an intrinsic, or DTYPE(literal).
  ABSL_ATTRIBUTE_NOINLINE absl::Status ParseCall(Expr* out, int* depth) {
    const Token& t = Peek();
    if (ParseDType(t.text) || t.text == "thread_idx") return ParseLiteralCall(out);
    const bool known =
        text::IntrinsicFromName(t.text) || t.text == "min" || t.text == "max" || t.text == "select";
    if (!known) return NameError(t, "unknown function '");
    Next();
    // The arguments are parsed into out->args and then rebuilt in place.
    out->args.clear();
    RETURN_IF_ERROR(ParseExprList("(", ")", &out->args, depth));
    RETURN_IF_ERROR(MakeCall(t, out));
    return CountLevel(t, depth);
  }

  // DTYPE(literal) or thread_idx(D): no nested expression.
  ABSL_ATTRIBUTE_NOINLINE absl::Status ParseLiteralCall(Expr* out) {
    const Token& t = Next();
    std::string name = S(t.text);
    if (std::optional<DType> dtype = ParseDType(name)) {
      RETURN_IF_ERROR(ExpectPunct("("));
      const Token& lit = Peek();
      bool is_literal = lit.kind == TokKind::kInt || lit.kind == TokKind::kFloat ||
                        AtNegativeLiteral() || IsWord("inf") || IsWord("nan") || IsWord("true") ||
                        IsWord("false");
      if (!is_literal) {
        return Error(lit, absl::StrCat("expected a literal in '", name, "(...)'; write cast<", name,
                                       ">(x) to convert an expression"));
      }
      ASSIGN_OR_RETURN(*out, ParseLiteral());
      out->dtype = *dtype;
      return ExpectPunct(")");
    }
    RETURN_IF_ERROR(ExpectPunct("("));
    const Token& dim_tok = Peek();
    ASSIGN_OR_RETURN(int64_t dim, ExpectInt());
    if (dim < 0 || dim > 2) return Error(dim_tok, "thread_idx dimension must be 0, 1 or 2");
    *out = ThreadIdx(static_cast<int>(dim), kInherit);
    return ExpectPunct(")");
  }

  // *out holds the arguments of the call named by `t` in args; checks their
  // number and makes *out that call.
  ABSL_ATTRIBUTE_NOINLINE absl::Status MakeCall(const Token& t, Expr* out) {
    std::vector<Expr> args = std::move(out->args);
    if (t.text == "min" || t.text == "max") {
      RETURN_IF_ERROR(CheckArity(t, 2, args.size()));
      *out = Binary(t.text == "min" ? BinOp::kMin : BinOp::kMax, std::move(args[0]),
                    std::move(args[1]), kInherit);
    } else if (t.text == "select") {
      RETURN_IF_ERROR(CheckArity(t, 3, args.size()));
      *out = Select(std::move(args[0]), std::move(args[1]), std::move(args[2]), kInherit);
    } else {
      const Intrinsic fn = *text::IntrinsicFromName(t.text);
      if (fn == Intrinsic::kReinterpret) {
        return Error(t, "reinterpret needs its dtype: write reinterpret<DTYPE>(x)");
      }
      RETURN_IF_ERROR(CheckArity(t, text::IntrinsicArity(fn), args.size()));
      *out = Call(fn, std::move(args), kInherit);
    }
    return absl::OkStatus();
  }

  // BUFFER[MIN +: EXTENT, ...] with an optional `@L:C`.
  absl::StatusOr<Region> ParseRegion() {
    Region r;
    r.loc = kInherit;
    r.buffer = S(Peek().text);
    RETURN_IF_ERROR(ExpectBuffer().status());
    RETURN_IF_ERROR(ExpectPunct("["));
    if (!IsPunct("]")) {
      while (true) {
        Range range;
        ASSIGN_OR_RETURN(range.min, ParseExpr());
        RETURN_IF_ERROR(ExpectPunct("+:"));
        ASSIGN_OR_RETURN(range.extent, ParseExpr());
        r.ranges.push_back(std::move(range));
        if (IsPunct("]")) break;
        if (!IsPunct(",")) return Expected("',' or ']'");
        Next();
      }
    }
    Next();
    RETURN_IF_ERROR(ParseAnnotation(&r.loc));
    return r;
  }

  // --- declarations ---------------------------------------------------------

  absl::Status ParseAttr(Program* p) {
    Next();
    const Token& key_tok = Peek();
    ASSIGN_OR_RETURN(std::string key, ExpectWordOrString("an attribute name"));
    RETURN_IF_ERROR(ExpectPunct("="));
    if (Peek().kind != TokKind::kString) return Expected("a string");
    if (!p->attrs.emplace(key, Next().value).second) {
      return Error(key_tok, absl::StrCat("duplicate attribute '", key, "'"));
    }
    return absl::OkStatus();
  }

  // The optional ` as "NAME"` after a symbol's or parameter's IR name: the
  // name the user knows it by. The same name as the IR's is no alias ("").
  absl::StatusOr<std::string> ParseUserName(const std::string& ir_name) {
    if (!IsWord("as")) return std::string();
    Next();
    const Token& t = Peek();
    if (t.kind != TokKind::kString) return Expected("the user's name as a string (as \"out\")");
    if (!text::IsIdentifier(t.value)) {
      return Error(t, "a user name must be an identifier (letters, digits and '_', not "
                      "starting with a digit)");
    }
    Next();
    return t.value == ir_name ? std::string() : t.value;
  }

  absl::Status ParseSymbol(Program* p) {
    Symbol s;
    s.loc = Next().loc;
    ASSIGN_OR_RETURN(s.name, ExpectName("a symbol name"));
    ASSIGN_OR_RETURN(s.user_name, ParseUserName(s.name));
    RETURN_IF_ERROR(ExpectPunct(":"));
    ASSIGN_OR_RETURN(s.dtype, ExpectDType());
    RETURN_IF_ERROR(ParseStmtLoc(&s.loc));
    frames_.back().vars[s.name] = s.dtype;
    p->symbols.push_back(std::move(s));
    return absl::OkStatus();
  }

  // ` layout(v0, v1)[@L:C] -> [f0, f1]` after a buffer's shape, if present;
  // the variables are int32 and visible only in the forward indices.
  absl::Status ParseIndexLayout(Buffer* b, int* depth) {
    if (!IsWord("layout")) return absl::OkStatus();
    Next();
    IndexLayout l;
    l.loc = kInherit;
    RETURN_IF_ERROR(ExpectPunct("("));
    Frame frame;
    while (true) {
      ASSIGN_OR_RETURN(std::string v, ExpectName("a layout variable"));
      frame.vars[v] = DType::kInt32;
      l.vars.push_back(std::move(v));
      if (IsPunct(")")) break;
      if (!IsPunct(",")) return Expected("',' or ')'");
      Next();
    }
    Next();
    RETURN_IF_ERROR(ParseAnnotation(&l.loc));
    RETURN_IF_ERROR(ExpectPunct("->"));
    frames_.push_back(std::move(frame));
    absl::Status st = ParseExprList("[", "]", &l.forward, depth);
    frames_.pop_back();
    RETURN_IF_ERROR(st);
    b->index_layout = std::move(l);
    return absl::OkStatus();
  }

  absl::Status ParseParam(Program* p) {
    Param param;
    Buffer& b = param.buffer;
    b.loc = Next().loc;
    ASSIGN_OR_RETURN(b.name, ExpectName("a parameter name"));
    ASSIGN_OR_RETURN(param.user_name, ParseUserName(b.name));
    RETURN_IF_ERROR(ExpectPunct(":"));
    if (IsWord("scalar")) {
      Next();
      param.is_scalar = true;
      ASSIGN_OR_RETURN(b.dtype, ExpectDType());
    } else {
      ASSIGN_OR_RETURN(b.scope, ExpectScope());
      ASSIGN_OR_RETURN(b.dtype, ExpectDType());
      int depth = 0;
      RETURN_IF_ERROR(ParseExprList("[", "]", &b.shape, &depth));
      RETURN_IF_ERROR(ParseIndexLayout(&b, &depth));
    }
    if (IsWord("out")) {
      Next();
      param.is_output = true;
    }
    RETURN_IF_ERROR(ParseStmtLoc(&b.loc));
    ResolveLocs(&b, b.loc);
    if (param.is_scalar) {
      frames_.back().vars[b.name] = b.dtype;
    } else {
      frames_.back().buffers[b.name] = BufferInfo{b.dtype, b.scope};
    }
    p->params.push_back(std::move(param));
    return absl::OkStatus();
  }

  // `workspace NAME: DTYPE[shape]` (ir.h: Program::workspaces).
  absl::Status ParseWorkspace(Program* p) {
    Buffer b;
    const Token& tok = Next();
    b.loc = tok.loc;
    if (p->workspaces.size() >= kMaxWorkspaces) {
      return Error(tok, absl::StrCat("a program has at most ", kMaxWorkspaces, " workspaces"));
    }
    ASSIGN_OR_RETURN(b.name, ExpectName("a workspace name"));
    RETURN_IF_ERROR(ExpectPunct(":"));
    ASSIGN_OR_RETURN(b.dtype, ExpectDType());
    int depth = 0;
    RETURN_IF_ERROR(ParseExprList("[", "]", &b.shape, &depth));
    RETURN_IF_ERROR(ParseStmtLoc(&b.loc));
    ResolveLocs(&b, b.loc);
    frames_.back().buffers[b.name] = BufferInfo{b.dtype, b.scope};
    p->workspaces.push_back(std::move(b));
    return absl::OkStatus();
  }

  absl::Status ParseKernel(Kernel* k) {
    k->loc = Next().loc;
    const Token& grid_tok = Peek();
    RETURN_IF_ERROR(ExpectWord("grid"));
    int depth = 0;
    RETURN_IF_ERROR(ParseExprList("(", ")", &k->grid, &depth));
    if (k->grid.empty() || k->grid.size() > 3) {
      return Error(grid_tok, absl::StrCat("grid takes 1 to 3 extents, got ", k->grid.size()));
    }
    const Token& threads_tok = Peek();
    RETURN_IF_ERROR(ExpectWord("threads"));
    RETURN_IF_ERROR(ExpectPunct("("));
    while (true) {
      ASSIGN_OR_RETURN(int64_t n, ExpectInt());
      k->threads.push_back(n);
      if (IsPunct(")")) break;
      if (!IsPunct(",")) return Expected("',' or ')'");
      Next();
    }
    Next();
    if (k->threads.size() > 3) {
      return Error(threads_tok,
                   absl::StrCat("threads takes 1 to 3 extents, got ", k->threads.size()));
    }
    Frame frame;
    if (IsWord("as")) {
      const Token& as_tok = Next();
      RETURN_IF_ERROR(ExpectPunct("("));
      while (true) {
        ASSIGN_OR_RETURN(std::string v, ExpectName("a block variable"));
        frame.vars[v] = DType::kInt32;
        k->block_vars.push_back(std::move(v));
        if (IsPunct(")")) break;
        if (!IsPunct(",")) return Expected("',' or ')'");
        Next();
      }
      Next();
      if (k->block_vars.size() != k->grid.size()) {
        return Error(as_tok, absl::StrCat("kernel has ", k->grid.size(), " grid extents but ",
                                          k->block_vars.size(), " block variables"));
      }
    }
    RETURN_IF_ERROR(ParseStmtLoc(&k->loc));
    for (Expr& e : k->grid) ResolveLocs(&e, k->loc);
    frames_.push_back(std::move(frame));
    RETURN_IF_ERROR(ParseBlock(&k->body, "kernel"));
    frames_.pop_back();
    return absl::OkStatus();
  }

  // --- statements -----------------------------------------------------------

  absl::Status ParseBlock(std::vector<Stmt>* body, std::string_view what) {
    const Token& open = Peek();
    RETURN_IF_ERROR(ExpectPunct("{"));
    DepthScope scope(&depth_);
    if (depth_ > kMaxDepth) return DepthError(open);
    frames_.emplace_back();
    while (!IsPunct("}") && Peek().kind == TokKind::kIdent) {
      if (++statements_ > kMaxStatements) return TooManyStatements();
      // Parsed in place: a Stmt is large, and this frame is on the recursion
      // path of nested blocks. Nothing else appends to `body` meanwhile.
      RETURN_IF_ERROR(ParseStmt(&body->emplace_back()));
    }
    if (!IsPunct("}") && Peek().kind != TokKind::kEof) return Expected("a statement or '}'");
    RETURN_IF_ERROR(ExpectClose(open, what));
    frames_.pop_back();
    return absl::OkStatus();
  }

  ABSL_ATTRIBUTE_NOINLINE absl::Status TooManyStatements() const {
    return Error(Peek(), absl::StrCat("too many statements (more than ", kMaxStatements, ")"));
  }

  // `name=value` flags in any order, each at most once.
  absl::Status ParseFlags(std::string_view owner, const std::vector<std::string_view>& allowed,
                          const std::function<absl::Status(std::string_view)>& parse_value) {
    absl::flat_hash_set<std::string> seen;
    while (Peek().kind == TokKind::kIdent && IsPunct("=", 1)) {
      const Token& name = Next();
      if (std::find(allowed.begin(), allowed.end(), name.text) == allowed.end()) {
        std::string list;
        for (std::string_view a : allowed) absl::StrAppend(&list, list.empty() ? "" : ", ", S(a));
        return Error(name, absl::StrCat("unknown flag '", S(name.text), "' for ", S(owner),
                                        list.empty() ? "" : " (expected one of: ", list,
                                        list.empty() ? "" : ")"));
      }
      if (!seen.insert(S(name.text)).second) {
        return Error(name, absl::StrCat("duplicate flag '", S(name.text), "'"));
      }
      Next(); // '='
      RETURN_IF_ERROR(parse_value(name.text));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<int32_t>> ExpectIntList() {
    std::vector<int32_t> out;
    RETURN_IF_ERROR(ExpectPunct("["));
    if (IsPunct("]")) {
      Next();
      return out;
    }
    while (true) {
      ASSIGN_OR_RETURN(int32_t v, ExpectInt32());
      out.push_back(v);
      if (IsPunct("]")) break;
      if (!IsPunct(",")) return Expected("',' or ']'");
      Next();
    }
    Next();
    return out;
  }

  // Nested blocks recurse through here, ParseFor/ParseIf and ParseBlock, so
  // the other statements are parsed out of line (ParseSimpleStmt) and their
  // locals do not widen the frames of a deep nest.
  absl::Status ParseStmt(Stmt* s) {
    s->loc = Peek().loc;
    if (!IsPunct("[", 1)) {
      if (IsWord("for")) return ParseFor(s);
      if (IsWord("if")) return ParseIf(s);
      if (IsWord("ws") && IsPunct("(", 1)) return ParseWarpSpecialize(s);
    }
    return ParseSimpleStmt(s);
  }

  ABSL_ATTRIBUTE_NOINLINE absl::Status ParseSimpleStmt(Stmt* s) {
    const Token& first = Peek();
    std::string kw = S(first.text);
    if (IsPunct("[", 1)) {
      RETURN_IF_ERROR(ParseStore(s));
    } else if (kw == "alloc") {
      RETURN_IF_ERROR(ParseAlloc(s));
    } else if (kw == "copy") {
      Next();
      s->kind = StmtKind::kCopy;
      RETURN_IF_ERROR(ParseRegionsSeparated(s, 2, "->"));
    } else if (kw == "gemm") {
      Next();
      s->kind = StmtKind::kGemm;
      RETURN_IF_ERROR(ParseRegionsSeparated(s, 3, ","));
      RETURN_IF_ERROR(ParseFlags(
          "gemm", {"transpose_a", "transpose_b", "clear_accum", "k_pack", "policy", "wg_wait"},
          [&](std::string_view f) -> absl::Status {
            if (f == "k_pack") {
              ASSIGN_OR_RETURN(s->k_pack, ExpectInt32());
            } else if (f == "wg_wait") {
              ASSIGN_OR_RETURN(s->wg_wait, ExpectInt32());
            } else if (f == "policy") {
              const Token& t = Peek();
              ASSIGN_OR_RETURN(std::string v, ExpectWordOrString("a gemm policy"));
              std::optional<GemmPolicy> p = text::GemmPolicyFromName(v);
              if (!p) return Error(t, absl::StrCat("unknown gemm policy '", v, "'"));
              s->policy = *p;
            } else {
              bool* field = f == "transpose_a"   ? &s->transpose_a
                            : f == "transpose_b" ? &s->transpose_b
                                                 : &s->clear_accum;
              ASSIGN_OR_RETURN(*field, ExpectBool());
            }
            return absl::OkStatus();
          }));
    } else if (kw == "fill") {
      Next();
      s->kind = StmtKind::kFill;
      ASSIGN_OR_RETURN(Region r, ParseRegion());
      s->regions.push_back(std::move(r));
      RETURN_IF_ERROR(ExpectPunct(","));
      s->has_value = true;
      ASSIGN_OR_RETURN(s->value, ParseExpr());
    } else if (std::optional<ReduceKind> rk = text::ReduceKindFromName(kw)) {
      Next();
      s->kind = StmtKind::kReduce;
      s->reduce_kind = *rk;
      RETURN_IF_ERROR(ParseRegionsSeparated(s, 2, "->"));
      RETURN_IF_ERROR(ParseFlags(kw, {"dim", "clear"}, [&](std::string_view f) -> absl::Status {
        if (f == "dim") {
          ASSIGN_OR_RETURN(s->dim, ExpectInt32());
        } else {
          ASSIGN_OR_RETURN(s->clear, ExpectBool());
        }
        return absl::OkStatus();
      }));
    } else if (std::optional<AtomicOp> op = text::AtomicOpFromName(kw)) {
      Next();
      s->kind = StmtKind::kAtomic;
      s->atomic_op = *op;
      ASSIGN_OR_RETURN(Region dst, ParseRegion());
      s->regions.push_back(std::move(dst));
      if (IsPunct(",")) {
        Next();
        s->has_value = true;
        ASSIGN_OR_RETURN(s->value, ParseExpr());
      } else if (IsPunct("<") && IsPunct("-", 1) && Adjacent(0)) {
        Next();
        Next();
        ASSIGN_OR_RETURN(Region src, ParseRegion());
        s->regions.push_back(std::move(src));
      } else {
        return Expected("',' or '<-'");
      }
    } else if (kw == "annotate_layout") {
      Next();
      s->kind = StmtKind::kAnnotateLayout;
      s->name = S(Peek().text);
      RETURN_IF_ERROR(ExpectBuffer().status());
      ASSIGN_OR_RETURN(s->layout, ExpectWordOrString("a layout name"));
    } else if (kw == "call") {
      RETURN_IF_ERROR(ParseCallStmt(s));
    } else if (kw == "tma_copy") {
      Next();
      s->kind = StmtKind::kTmaCopy;
      RETURN_IF_ERROR(ParseRegionsSeparated(s, 2, "->"));
      RETURN_IF_ERROR(ExpectPunct(","));
      ASSIGN_OR_RETURN(Region bar, ParseRegion());
      s->regions.push_back(std::move(bar));
    } else if (kw == "assert") {
      Next();
      s->kind = StmtKind::kAssert;
      ASSIGN_OR_RETURN(s->cond, ParseExpr());
      RETURN_IF_ERROR(ExpectPunct(","));
      if (Peek().kind != TokKind::kString) return Expected("the assert's message as a string");
      s->message = Next().value;
    } else if (kw == "barrier_arrive") {
      Next();
      s->kind = StmtKind::kBarrierArrive;
      ASSIGN_OR_RETURN(Region bar, ParseRegion());
      s->regions.push_back(std::move(bar));
    } else if (kw == "wait_wgmma") {
      Next();
      s->kind = StmtKind::kWaitWgmma;
      s->has_value = true;
      ASSIGN_OR_RETURN(s->value, ParseExpr());
    } else if (kw == "barrier_wait" || kw == "barrier_expect_tx") {
      Next();
      s->kind = kw == "barrier_wait" ? StmtKind::kBarrierWait : StmtKind::kBarrierExpectTx;
      ASSIGN_OR_RETURN(Region bar, ParseRegion());
      s->regions.push_back(std::move(bar));
      RETURN_IF_ERROR(ExpectPunct(","));
      s->has_value = true;
      ASSIGN_OR_RETURN(s->value, ParseExpr());
    } else if (kw == "use_swizzle") {
      Next();
      s->kind = StmtKind::kUseSwizzle;
      RETURN_IF_ERROR(ParseFlags(
          "use_swizzle", {"panel", "order", "enable"}, [&](std::string_view f) -> absl::Status {
            if (f == "panel") {
              ASSIGN_OR_RETURN(s->panel_size, ExpectInt32());
            } else if (f == "order") {
              ASSIGN_OR_RETURN(s->swizzle_order, ExpectWordOrString("'row' or 'col'"));
            } else {
              ASSIGN_OR_RETURN(s->enable, ExpectBool());
            }
            return absl::OkStatus();
          }));
    } else {
      return Error(first, absl::StrCat("unknown statement '", kw, "'"));
    }
    RETURN_IF_ERROR(ParseStmtLoc(&s->loc));
    ResolveStmtLocs(s);
    return absl::OkStatus();
  }

  absl::Status ParseRegionsSeparated(Stmt* s, int n, std::string_view sep) {
    for (int i = 0; i < n; ++i) {
      if (i > 0) RETURN_IF_ERROR(ExpectPunct(sep));
      ASSIGN_OR_RETURN(Region r, ParseRegion());
      s->regions.push_back(std::move(r));
    }
    return absl::OkStatus();
  }

  absl::Status ParseStore(Stmt* s) {
    s->kind = StmtKind::kStore;
    s->name = S(Peek().text);
    RETURN_IF_ERROR(ExpectBuffer().status());
    int depth = 0;
    RETURN_IF_ERROR(ParseExprList("[", "]", &s->indices, &depth));
    RETURN_IF_ERROR(ExpectPunct("="));
    s->has_value = true;
    ASSIGN_OR_RETURN(s->value, ParseExpr());
    return absl::OkStatus();
  }

  // call NAME(ARG, ...): a thread-level intrinsic from the closed table in
  // intrinsics.h; each argument must be of the kind the table gives.
  absl::Status ParseCallStmt(Stmt* s) {
    Next();
    s->kind = StmtKind::kCall;
    const Token& name_tok = Peek();
    if (name_tok.kind != TokKind::kIdent) return Expected("an intrinsic name");
    const IntrinsicInfo* info = FindIntrinsic(name_tok.text);
    if (info == nullptr) {
      return Error(name_tok, absl::StrCat("unknown intrinsic '", S(name_tok.text), "'"));
    }
    s->name = S(Next().text);
    RETURN_IF_ERROR(ExpectPunct("("));
    std::vector<const Token*> starts; // first token of each argument
    if (!IsPunct(")")) {
      while (true) {
        starts.push_back(&Peek());
        Expr arg;
        if (IsPunct("&")) {
          ASSIGN_OR_RETURN(arg, ParseAddress());
        } else {
          ASSIGN_OR_RETURN(arg, ParseExpr());
        }
        s->indices.push_back(std::move(arg));
        if (IsPunct(")")) break;
        if (!IsPunct(",")) return Expected("',' or ')'");
        Next();
      }
    }
    Next(); // ')'
    RETURN_IF_ERROR(CheckArity(name_tok, info->args.size(), s->indices.size()));
    for (size_t i = 0; i < s->indices.size(); ++i) {
      RETURN_IF_ERROR(CheckCallArg(*info, i, s->indices[i], *starts[i]));
    }
    return absl::OkStatus();
  }

  absl::Status CheckCallArg(const IntrinsicInfo& info, size_t i, const Expr& arg,
                            const Token& at) const {
    std::string which = absl::StrCat("argument ", i + 1, " of '", S(info.name), "'");
    switch (info.args[i]) {
    case IntrinsicArg::kAddress:
      if (arg.kind == ExprKind::kAddress) return absl::OkStatus();
      return Error(at, absl::StrCat(which, " must be an address (&BUF[i])"));
    case IntrinsicArg::kValue:
      if (arg.kind != ExprKind::kAddress) return absl::OkStatus();
      return Error(at, absl::StrCat(which, " must be a value, not an address"));
    case IntrinsicArg::kConstInt:
      if (arg.kind == ExprKind::kInt && IsInteger(arg.dtype)) return absl::OkStatus();
      return Error(at, absl::StrCat(which, " must be an integer literal"));
    }
    return absl::OkStatus();
  }

  // &BUFFER[INDEX] with an optional `@L:C`. The index list is kept as
  // written; that it is one flat integer index is the verifier's check.
  absl::StatusOr<Expr> ParseAddress() {
    Next(); // '&'
    const Token& t = Peek();
    Expr e;
    e.kind = ExprKind::kAddress;
    e.loc = kInherit;
    e.name = S(t.text);
    ASSIGN_OR_RETURN(BufferInfo info, ExpectBuffer());
    e.dtype = info.dtype;
    int depth = 0;
    RETURN_IF_ERROR(ParseExprList("[", "]", &e.args, &depth));
    RETURN_IF_ERROR(CountLevel(t, &depth));
    RETURN_IF_ERROR(ParseAnnotation(&e.loc));
    return e;
  }

  absl::Status ParseAlloc(Stmt* s) {
    Next();
    s->kind = StmtKind::kAlloc;
    Buffer& b = s->buffer;
    b.loc = kInherit;
    ASSIGN_OR_RETURN(b.name, ExpectName("a buffer name"));
    RETURN_IF_ERROR(ParseAnnotation(&b.loc));
    RETURN_IF_ERROR(ExpectPunct(":"));
    ASSIGN_OR_RETURN(b.scope, ExpectScope());
    ASSIGN_OR_RETURN(b.dtype, ExpectDType());
    int depth = 0;
    RETURN_IF_ERROR(ParseExprList("[", "]", &b.shape, &depth));
    RETURN_IF_ERROR(ParseIndexLayout(&b, &depth));
    if (IsPunct("=")) {
      Next();
      b.has_init = true;
      ASSIGN_OR_RETURN(b.init, ParseExpr());
    }
    if (b.scope == Scope::kBarrier) {
      // The arrival count of each barrier (the verifier checks them).
      RETURN_IF_ERROR(ExpectWord("arrive"));
      RETURN_IF_ERROR(ParseExprList("(", ")", &s->indices, &depth));
    }
    frames_.back().buffers[b.name] = BufferInfo{b.dtype, b.scope};
    return absl::OkStatus();
  }

  ABSL_ATTRIBUTE_NOINLINE absl::Status ParseFor(Stmt* s) {
    Next();
    s->kind = StmtKind::kFor;
    Frame frame;
    while (true) {
      ASSIGN_OR_RETURN(std::string v, ExpectName("a loop variable"));
      frame.vars[v] = DType::kInt32;
      s->loop_vars.push_back(std::move(v));
      if (!IsPunct(",")) break;
      Next();
    }
    RETURN_IF_ERROR(ExpectWord("in"));
    const Token& kind_tok = Peek();
    if (kind_tok.kind != TokKind::kIdent) return Expected("a loop kind");
    std::optional<ForKind> kind = text::ForKindFromName(kind_tok.text);
    if (!kind) return Error(kind_tok, absl::StrCat("unknown loop kind '", S(kind_tok.text), "'"));
    Next();
    s->for_kind = *kind;
    if (*kind != ForKind::kParallel && s->loop_vars.size() != 1) {
      return Error(kind_tok, absl::StrCat("a ", S(kind_tok.text),
                                          " loop has one variable; only parallel loops have more"));
    }
    int depth = 0;
    RETURN_IF_ERROR(ParseExprList("(", ")", &s->extents, &depth));
    if (s->extents.size() != s->loop_vars.size()) {
      return Error(kind_tok, absl::StrCat("loop has ", s->loop_vars.size(), " variables but ",
                                          s->extents.size(), " extents"));
    }
    std::vector<std::string_view> flags;
    if (*kind == ForKind::kPipelined) flags = {"stages", "order", "stage"};
    RETURN_IF_ERROR(ParseFlags(absl::StrCat("'", S(kind_tok.text), "' loops"), flags,
                               [&](std::string_view f) -> absl::Status {
                                 if (f == "stages") {
                                   ASSIGN_OR_RETURN(s->num_stages, ExpectInt32());
                                 } else if (f == "order") {
                                   ASSIGN_OR_RETURN(s->order, ExpectIntList());
                                 } else {
                                   ASSIGN_OR_RETURN(s->stage, ExpectIntList());
                                 }
                                 return absl::OkStatus();
                               }));
    RETURN_IF_ERROR(ParseStmtLoc(&s->loc));
    ResolveStmtLocs(s);
    frames_.push_back(std::move(frame));
    RETURN_IF_ERROR(ParseBlock(&s->body, "loop body"));
    frames_.pop_back();
    return absl::OkStatus();
  }

  // ws(G, ...) { ... }: a region run by the listed warpgroups only.
  ABSL_ATTRIBUTE_NOINLINE absl::Status ParseWarpSpecialize(Stmt* s) {
    Next();
    s->kind = StmtKind::kWarpSpecialize;
    int depth = 0;
    RETURN_IF_ERROR(ParseExprList("(", ")", &s->indices, &depth));
    RETURN_IF_ERROR(ParseStmtLoc(&s->loc));
    ResolveStmtLocs(s);
    return ParseBlock(&s->body, "ws body");
  }

  ABSL_ATTRIBUTE_NOINLINE absl::Status ParseIf(Stmt* s) {
    Next();
    s->kind = StmtKind::kIf;
    ASSIGN_OR_RETURN(s->cond, ParseExpr());
    RETURN_IF_ERROR(ParseStmtLoc(&s->loc));
    ResolveStmtLocs(s);
    RETURN_IF_ERROR(ParseBlock(&s->body, "if body"));
    if (IsWord("else")) {
      Next();
      RETURN_IF_ERROR(ParseBlock(&s->else_body, "else body"));
    }
    return absl::OkStatus();
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::string file_;
  std::vector<Frame> frames_;
  int depth_ = 0;      // current recursion depth (blocks, unary operators)
  int statements_ = 0; // statements parsed so far, nested ones included
};

} // namespace

absl::StatusOr<Program> ParseProgramText(std::string_view text, std::string_view file_name) {
  return Parser(text, file_name).Run();
}

bool LooksLikeIrText(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
    } else if (c == '#' || text.substr(i, 2) == "//") {
      while (i < text.size() && text[i] != '\n') ++i;
    } else {
      break;
    }
  }
  constexpr std::string_view kProgram = "program";
  if (text.substr(i, kProgram.size()) != kProgram) return false;
  i += kProgram.size();
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  return i < text.size() && text[i] == '@';
}

} // namespace kiln::ir
