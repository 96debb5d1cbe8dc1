#include "compiler/ir/text_lexer.h"

#include <array>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace kiln::ir::text {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

// Longest first, so that `//` wins over `/` and `<=` over `<`.
constexpr std::array<std::string_view, 34> kPuncts = {
    "->", "+:", "//", "==", "!=", "<=", ">=", "<<", ">>", "&&", "||", "{", "}", "(", ")", "[", "]",
    ",",  ":",  "=",  "+",  "-",  "*",  "/",  "%",  "<",  ">",  "&",  "|", "^", "!", "~", "@", ";"};

// Looks an enum up in a table indexed by its value; unknown values (from a
// corrupt program) print as "?" rather than reading out of bounds.
template <typename E, size_t N>
std::string_view NameOf(const std::array<std::string_view, N>& names, E value) {
  size_t i = static_cast<size_t>(value);
  return i < N ? names[i] : std::string_view("?");
}

template <typename E, size_t N>
std::optional<E> FromName(const std::array<std::string_view, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

constexpr std::array<std::string_view, 21> kBinOps = {
    "+",  "-", "*",  "/",  "//", "%", "min", "max", "==", "!=", "<",
    "<=", ">", ">=", "&&", "||", "&", "|",   "^",   "<<", ">>"};
constexpr std::array<int, 21> kBinPrec = {9, 9, 10, 10, 10, 10, 0, 0, 6, 6, 7,
                                          7, 7, 7,  2,  1,  5,  3, 4, 8, 8};
constexpr std::array<std::string_view, 17> kIntrinsics = {
    "exp",   "exp2", "log", "log2", "sqrt",  "rsqrt", "abs",     "pow",        "tanh",
    "floor", "ceil", "sin", "cos",  "round", "trunc", "sigmoid", "reinterpret"};
constexpr std::array<std::string_view, 5> kForKinds = {"serial", "unroll", "vectorized", "parallel",
                                                       "pipelined"};
constexpr std::array<std::string_view, 5> kReduceKinds = {"reduce_sum", "reduce_max", "reduce_min",
                                                          "reduce_abssum", "reduce_absmax"};
constexpr std::array<std::string_view, 3> kAtomicOps = {"atomic_add", "atomic_max", "atomic_min"};
constexpr std::array<std::string_view, 3> kPolicies = {"square", "full_row", "full_col"};

class Lexer {
 public:
  Lexer(std::string_view in, size_t max_tokens) : in_(in), max_tokens_(max_tokens) {}

  std::vector<Token> Run() {
    std::vector<Token> out;
    while (true) {
      SkipSpaceAndComments();
      Token t;
      t.begin = pos_;
      t.loc = Loc{line_, col_};
      if (pos_ >= in_.size()) {
        t.kind = TokKind::kEof;
        t.end = pos_;
        out.push_back(std::move(t));
        return out;
      }
      if (out.size() >= max_tokens_) {
        t.kind = TokKind::kError;
        t.end = pos_;
        t.value = absl::StrCat("program text too long (more than ", max_tokens_, " tokens)");
        out.push_back(std::move(t));
        return out;
      }
      if (!LexOne(&t)) {
        t.kind = TokKind::kError;
        out.push_back(std::move(t));
        return out;
      }
      t.end = pos_;
      t.text = in_.substr(t.begin, t.end - t.begin);
      line_has_token_ = true;
      out.push_back(std::move(t));
    }
  }

 private:
  void Advance() {
    if (in_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  char At(size_t i) const { return i < in_.size() ? in_[i] : '\0'; }

  // `//` is also floor division, so it starts a comment only as the first
  // non-blank text of a line (golden files' RUN/CHECK lines); `#` starts a
  // comment anywhere, for trailing remarks.
  void SkipSpaceAndComments() {
    while (pos_ < in_.size()) {
      char c = in_[pos_];
      if (c == '\n') {
        line_has_token_ = false;
        Advance();
      } else if (c == ' ' || c == '\t' || c == '\r') {
        Advance();
      } else if (c == '#' || (c == '/' && At(pos_ + 1) == '/' && !line_has_token_)) {
        while (pos_ < in_.size() && in_[pos_] != '\n') Advance();
      } else {
        return;
      }
    }
  }

  bool LexOne(Token* t) {
    char c = in_[pos_];
    if (IsIdentStart(c)) {
      while (true) {
        while (pos_ < in_.size() && IsIdentChar(in_[pos_])) Advance();
        if (At(pos_) == '.' && IsIdentStart(At(pos_ + 1))) {
          Advance();
          continue;
        }
        break;
      }
      t->kind = TokKind::kIdent;
      return true;
    }
    if (IsDigit(c)) return LexNumber(t);
    if (c == '"') return LexString(t);
    for (std::string_view p : kPuncts) {
      if (in_.substr(pos_, p.size()) == p) {
        for (size_t i = 0; i < p.size(); ++i) Advance();
        t->kind = TokKind::kPunct;
        return true;
      }
    }
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x21 && u < 0x7f) {
      t->value = absl::StrCat("unexpected character '", std::string(1, c), "'");
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "0x%02X", u);
      t->value = absl::StrCat("unexpected byte ", buf);
    }
    return false;
  }

  bool LexNumber(Token* t) {
    bool is_float = false;
    while (IsDigit(At(pos_))) Advance();
    if (At(pos_) == '.' && IsDigit(At(pos_ + 1))) {
      is_float = true;
      Advance();
      while (IsDigit(At(pos_))) Advance();
    }
    if (At(pos_) == 'e' || At(pos_) == 'E') {
      size_t k = pos_ + 1;
      if (At(k) == '+' || At(k) == '-') ++k;
      if (IsDigit(At(k))) {
        is_float = true;
        while (pos_ < k) Advance();
        while (IsDigit(At(pos_))) Advance();
      }
    }
    if (IsIdentChar(At(pos_)) || At(pos_) == '.') {
      t->value = "malformed number";
      return false;
    }
    t->kind = is_float ? TokKind::kFloat : TokKind::kInt;
    return true;
  }

  bool LexString(Token* t) {
    Advance(); // opening quote
    std::string value;
    while (true) {
      if (pos_ >= in_.size() || in_[pos_] == '\n') {
        t->value = "unterminated string";
        return false;
      }
      char c = in_[pos_];
      if (c == '"') {
        Advance();
        break;
      }
      if (c != '\\') {
        value.push_back(c);
        Advance();
        continue;
      }
      Loc esc_loc{line_, col_};
      Advance();
      char e = At(pos_);
      if (e == '"' || e == '\\') {
        value.push_back(e);
      } else if (e == 'n') {
        value.push_back('\n');
      } else if (e == 't') {
        value.push_back('\t');
      } else if (e == 'x' && IsHex(At(pos_ + 1)) && IsHex(At(pos_ + 2))) {
        value.push_back(static_cast<char>(HexVal(At(pos_ + 1)) * 16 + HexVal(At(pos_ + 2))));
        Advance();
        Advance();
      } else {
        t->loc = esc_loc;
        t->value = "invalid escape in string";
        return false;
      }
      Advance();
    }
    t->kind = TokKind::kString;
    t->value = std::move(value);
    return true;
  }

  static bool IsHex(char c) {
    return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }
  static int HexVal(char c) {
    if (IsDigit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return c - 'A' + 10;
  }

  std::string_view in_;
  size_t pos_ = 0;
  int32_t line_ = 1;
  int32_t col_ = 1;
  bool line_has_token_ = false;
  size_t max_tokens_;
};

} // namespace

std::vector<Token> Lex(std::string_view input, size_t max_tokens) {
  return Lexer(input, max_tokens).Run();
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !IsIdentStart(s[0])) return false;
  for (char c : s) {
    if (!IsIdentChar(c)) return false;
  }
  return true;
}

bool IsDottedIdentifier(std::string_view s) {
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view part = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (!IsIdentifier(part)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string QuoteString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string_view BinOpSpelling(BinOp op) { return NameOf(kBinOps, op); }

int BinOpPrecedence(BinOp op) {
  size_t i = static_cast<size_t>(op);
  return i < kBinPrec.size() ? kBinPrec[i] : 0;
}

std::optional<BinOp> BinOpFromSpelling(std::string_view punct) {
  std::optional<BinOp> op = FromName<BinOp>(kBinOps, punct);
  if (op && (*op == BinOp::kMin || *op == BinOp::kMax)) return std::nullopt;
  return op;
}

std::string_view IntrinsicName(Intrinsic fn) { return NameOf(kIntrinsics, fn); }
std::optional<Intrinsic> IntrinsicFromName(std::string_view name) {
  return FromName<Intrinsic>(kIntrinsics, name);
}
int IntrinsicArity(Intrinsic fn) { return fn == Intrinsic::kPow ? 2 : 1; }

std::string_view ForKindName(ForKind k) { return NameOf(kForKinds, k); }
std::optional<ForKind> ForKindFromName(std::string_view name) {
  return FromName<ForKind>(kForKinds, name);
}
std::string_view ReduceKindName(ReduceKind k) { return NameOf(kReduceKinds, k); }
std::optional<ReduceKind> ReduceKindFromName(std::string_view name) {
  return FromName<ReduceKind>(kReduceKinds, name);
}
std::string_view AtomicOpName(AtomicOp op) { return NameOf(kAtomicOps, op); }
std::optional<AtomicOp> AtomicOpFromName(std::string_view name) {
  return FromName<AtomicOp>(kAtomicOps, name);
}
std::string_view GemmPolicyName(GemmPolicy p) { return NameOf(kPolicies, p); }
std::optional<GemmPolicy> GemmPolicyFromName(std::string_view name) {
  return FromName<GemmPolicy>(kPolicies, name);
}

} // namespace kiln::ir::text
