#include "compiler/frontend/lexer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/ir/diagnostic.h"

namespace kiln::frontend {
namespace {

using ir::Loc;

enum : uint8_t { kIdentStartBit = 1, kIdentCharBit = 2 };

// Bytes >= 0x80 are accepted as identifier bytes: Python allows Unicode
// identifiers, and rejecting them byte by byte would only give worse errors.
constexpr std::array<uint8_t, 256> kCharClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    bool start = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
    bool digit = c >= '0' && c <= '9';
    t[c] =
        static_cast<uint8_t>((start ? kIdentStartBit : 0) | (start || digit ? kIdentCharBit : 0));
  }
  return t;
}();

bool IsIdentStart(unsigned char c) { return kCharClass[c] & kIdentStartBit; }
bool IsIdentChar(unsigned char c) { return kCharClass[c] & kIdentCharBit; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int DigitValue(char c, int base) {
  int v = 99;
  if (c >= '0' && c <= '9')
    v = c - '0';
  else if (c >= 'a' && c <= 'f')
    v = c - 'a' + 10;
  else if (c >= 'A' && c <= 'F')
    v = c - 'A' + 10;
  return v < base ? v : -1;
}

bool IsStringPrefix(std::string_view id) {
  if (id.size() > 2) return false;
  bool r = false, b = false, f = false, u = false;
  for (char c : id) {
    switch (c | 0x20) { // lower case
    case 'r':
      if (r) return false;
      r = true;
      break;
    case 'b':
      if (b) return false;
      b = true;
      break;
    case 'f':
      if (f) return false;
      f = true;
      break;
    case 'u':
      if (u) return false;
      u = true;
      break;
    default:
      return false;
    }
  }
  if (u) return id.size() == 1;
  return !(b && f);
}

class Lexer {
 public:
  Lexer(std::string_view src, std::string_view file) : src_(src), file_(file) {}

  absl::StatusOr<TokenStream> Run();

 private:
  Loc LocAt(size_t pos) const { return Loc{line_, static_cast<int32_t>(pos - line_begin_ + 1)}; }
  Token& Emit(TokKind kind, size_t begin, size_t end, Loc loc) {
    Token& t = out_.tokens.emplace_back();
    t.kind = kind;
    t.loc = loc;
    t.text = src_.substr(begin, end - begin);
    if (pending_line_start_ && kind != TokKind::kIndent && kind != TokKind::kDedent) {
      t.line_start = true;
      pending_line_start_ = false;
    }
    if (kind != TokKind::kNewline && kind != TokKind::kIndent && kind != TokKind::kDedent)
      line_has_tokens_ = true;
    return t;
  }
  void EmitError(size_t begin, size_t end, Loc loc, std::string message) {
    Token& t = Emit(TokKind::kError, begin, end, loc);
    t.ival = static_cast<int64_t>(out_.errors.size());
    out_.errors.push_back(std::move(message));
  }
  // Consumes a line break at pos_ (\n, \r\n or \r) and starts a new line.
  void NewLine() {
    if (src_[pos_] == '\r' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '\n') ++pos_;
    ++pos_;
    ++line_;
    line_begin_ = pos_;
  }
  bool AtLineBreak() const { return src_[pos_] == '\n' || src_[pos_] == '\r'; }
  // Moves pos_ to the next line break (or the end): comments are skipped with
  // memchr rather than byte by byte.
  void SkipToLineBreak() {
    const char* p = src_.data() + pos_;
    size_t n = src_.size() - pos_;
    const void* nl = std::memchr(p, '\n', n);
    size_t len = nl ? static_cast<size_t>(static_cast<const char*>(nl) - p) : n;
    const void* cr = std::memchr(p, '\r', len);
    if (cr) len = static_cast<size_t>(static_cast<const char*>(cr) - p);
    pos_ += len;
  }

  // Measures the indentation of the line at pos_ and emits INDENT/DEDENT.
  // Returns false when the line is blank or a comment only.
  bool Indentation();
  absl::Status LexString(size_t begin, Loc loc);
  void LexNumber();
  absl::Status LexOp();

  std::string_view src_;
  std::string_view file_;
  size_t pos_ = 0;
  int32_t line_ = 1;
  size_t line_begin_ = 0;
  bool pending_line_start_ = false;
  bool line_has_tokens_ = false;
  struct Indent {
    int col;
    int altcol;        // the column with tabs counted as one space
    size_t token;      // index of the INDENT token (unused for the base level)
    int64_t lines = 0; // logical lines directly at this level
  };
  void PopIndent() {
    out_.tokens[indents_.back().token].ival = indents_.back().lines;
    indents_.pop_back();
  }
  void CountNewline() { ++indents_.back().lines; }
  std::vector<Indent> indents_{{0, 0, 0, 0}};
  struct Bracket {
    char c;
    Loc loc;
    size_t token;       // index of the opening token
    int64_t commas = 0; // at this bracket's own level
    int64_t equals = 0;
  };
  std::vector<Bracket> brackets_;
  std::string scratch_;
  TokenStream out_;
};

bool Lexer::Indentation() {
  int col = 0, altcol = 0;
  size_t begin = pos_;
  while (pos_ < src_.size()) {
    char c = src_[pos_];
    if (c == ' ') {
      ++col;
      ++altcol;
    } else if (c == '\t') {
      col = (col / 8 + 1) * 8;
      ++altcol;
    } else if (c == '\f') {
      col = altcol = 0;
    } else {
      break;
    }
    ++pos_;
  }
  if (pos_ >= src_.size() || src_[pos_] == '#' || AtLineBreak()) return false;
  // A backslash-newline right after the indentation joins an empty line prefix
  // to the next line; Python treats this like a blank line too.
  Loc loc = LocAt(pos_);
  const Indent& top = indents_.back();
  if (col == top.col) {
    if (altcol != top.altcol)
      EmitError(begin, pos_, loc, "inconsistent use of tabs and spaces in indentation");
  } else if (col > top.col) {
    if (altcol <= top.altcol) {
      EmitError(begin, pos_, loc, "inconsistent use of tabs and spaces in indentation");
    } else {
      indents_.push_back({col, altcol, out_.tokens.size(), 0});
      Emit(TokKind::kIndent, pos_, pos_, loc);
    }
  } else {
    while (indents_.size() > 1 && col < indents_.back().col) {
      PopIndent();
      Emit(TokKind::kDedent, pos_, pos_, loc);
    }
    if (col != indents_.back().col) {
      EmitError(begin, pos_, loc, "unindent does not match any outer indentation level");
    } else if (altcol != indents_.back().altcol) {
      EmitError(begin, pos_, loc, "inconsistent use of tabs and spaces in indentation");
    }
  }
  return true;
}

absl::Status Lexer::LexString(size_t begin, Loc loc) {
  char q = src_[pos_];
  bool triple = pos_ + 2 < src_.size() && src_[pos_ + 1] == q && src_[pos_ + 2] == q;
  pos_ += triple ? 3 : 1;
  while (true) {
    if (pos_ >= src_.size()) {
      if (triple) return ir::ErrorAt(file_, loc, "unterminated triple-quoted string literal");
      EmitError(begin, pos_, loc, "unterminated string literal");
      return absl::OkStatus();
    }
    char c = src_[pos_];
    if (c == '\\') {
      ++pos_;
      if (pos_ < src_.size()) {
        if (AtLineBreak())
          NewLine();
        else
          ++pos_;
      }
      continue;
    }
    if (c == '\n' || c == '\r') {
      if (!triple) {
        EmitError(begin, pos_, loc, "unterminated string literal");
        return absl::OkStatus();
      }
      NewLine();
      continue;
    }
    if (c == q) {
      if (!triple) {
        ++pos_;
        break;
      }
      if (pos_ + 2 < src_.size() && src_[pos_ + 1] == q && src_[pos_ + 2] == q) {
        pos_ += 3;
        break;
      }
    }
    ++pos_;
  }
  Emit(TokKind::kString, begin, pos_, loc);
  return absl::OkStatus();
}

void Lexer::LexNumber() {
  size_t begin = pos_;
  Loc loc = LocAt(pos_);
  auto fail = [&](const char* message) {
    while (pos_ < src_.size() && (IsIdentChar(src_[pos_]) || src_[pos_] == '.')) ++pos_;
    EmitError(begin, pos_, loc, message);
  };
  // Scans digits of `base` with single underscores between them; returns the
  // number of digits, or -1 on a misplaced underscore.
  auto digits = [&](int base, bool after_prefix) {
    int n = 0;
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == '_') {
        if ((n == 0 && !after_prefix) || pos_ + 1 >= src_.size() ||
            DigitValue(src_[pos_ + 1], base) < 0)
          return -1;
        ++pos_;
        continue;
      }
      if (DigitValue(c, base) < 0) break;
      ++n;
      ++pos_;
    }
    return n;
  };
  if (src_[pos_] == '0' && pos_ + 1 < src_.size()) {
    char p = static_cast<char>(src_[pos_ + 1] | 0x20);
    int base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (base != 0) {
      pos_ += 2;
      size_t dstart = pos_;
      int n = digits(base, true);
      if (n <= 0 || (pos_ < src_.size() && IsIdentChar(src_[pos_]))) {
        return fail(base == 16  ? "invalid hexadecimal literal"
                    : base == 8 ? "invalid octal literal"
                                : "invalid binary literal");
      }
      uint64_t v = 0;
      for (size_t i = dstart; i < pos_; ++i) {
        if (src_[i] == '_') continue;
        uint64_t d = static_cast<uint64_t>(DigitValue(src_[i], base));
        if (v > (std::numeric_limits<uint64_t>::max() - d) / base) {
          v = std::numeric_limits<uint64_t>::max();
          break;
        }
        v = v * base + d;
      }
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return fail("integer literal too large for int64");
      Emit(TokKind::kInt, begin, pos_, loc).ival = static_cast<int64_t>(v);
      return;
    }
  }
  bool is_float = false;
  int int_digits = 0;
  if (src_[pos_] != '.') {
    int_digits = digits(10, false);
    if (int_digits < 0) return fail("invalid decimal literal");
  }
  if (pos_ < src_.size() && src_[pos_] == '.') {
    is_float = true;
    ++pos_;
    if (pos_ < src_.size() && IsDigit(src_[pos_])) {
      if (digits(10, false) < 0) return fail("invalid decimal literal");
    } else if (int_digits == 0) {
      return fail("invalid decimal literal");
    }
  }
  if (pos_ < src_.size() && (src_[pos_] | 0x20) == 'e') {
    size_t save = pos_;
    ++pos_;
    if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) ++pos_;
    if (pos_ < src_.size() && IsDigit(src_[pos_])) {
      if (digits(10, false) < 0) return fail("invalid decimal literal");
      is_float = true;
    } else {
      pos_ = save;
      ++pos_;
      return fail("invalid decimal literal");
    }
  }
  if (pos_ < src_.size() && (src_[pos_] | 0x20) == 'j') {
    ++pos_;
    return fail("imaginary literals are not supported");
  }
  if (pos_ < src_.size() && IsIdentStart(src_[pos_])) return fail("invalid decimal literal");
  scratch_.clear();
  for (size_t i = begin; i < pos_; ++i)
    if (src_[i] != '_') scratch_.push_back(src_[i]);
  if (is_float) {
    double d = 0;
    auto [ptr, ec] = std::from_chars(scratch_.data(), scratch_.data() + scratch_.size(), d);
    if (ec == std::errc::result_out_of_range) {
      // Python rounds overflow to inf and underflow to 0.
      bool tiny = false;
      size_t e = scratch_.find_first_of("eE");
      if (e != std::string::npos && e + 1 < scratch_.size() && scratch_[e + 1] == '-') tiny = true;
      d = tiny ? 0.0 : std::numeric_limits<double>::infinity();
    } else if (ec != std::errc() || ptr != scratch_.data() + scratch_.size()) {
      return fail("invalid decimal literal");
    }
    Emit(TokKind::kFloat, begin, pos_, loc).fval = d;
    return;
  }
  if (scratch_.size() > 1 && scratch_[0] == '0' &&
      scratch_.find_first_not_of('0') != std::string::npos)
    return fail("leading zeros in decimal integer literals are not permitted");
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(scratch_.data(), scratch_.data() + scratch_.size(), v);
  if (ec != std::errc() || ptr != scratch_.data() + scratch_.size())
    return fail("integer literal too large for int64");
  Emit(TokKind::kInt, begin, pos_, loc).ival = v;
}

absl::Status Lexer::LexOp() {
  size_t rest = src_.size() - pos_;
  Loc loc = LocAt(pos_);
  char c = src_[pos_];
  char c1 = rest >= 2 ? src_[pos_ + 1] : '\0';
  char c2 = rest >= 3 ? src_[pos_ + 2] : '\0';
  size_t len = 0; // 0: not an operator
  switch (c) {
  case '*':
  case '/':
  case '<':
  case '>': // ** // << >> and their augmented forms, <= >=
    if (c1 == c)
      len = c2 == '=' ? 3 : 2;
    else
      len = c1 == '=' ? 2 : 1;
    break;
  case '.':
    len = (c1 == '.' && c2 == '.') ? 3 : 1;
    break;
  case '-':
    len = (c1 == '>' || c1 == '=') ? 2 : 1;
    break;
  case '!':
    len = c1 == '=' ? 2 : 0;
    break;
  case ':':
  case '=':
  case '+':
  case '%':
  case '&':
  case '|':
  case '^':
  case '@':
    len = c1 == '=' ? 2 : 1;
    break;
  case '~':
  case '(':
  case ')':
  case '[':
  case ']':
  case '{':
  case '}':
  case ',':
  case ';':
    len = 1;
    break;
  default:
    break;
  }
  if (len > 1) {
    Emit(TokKind::kOp, pos_, pos_ + len, loc);
    pos_ += len;
    return absl::OkStatus();
  }
  if (len == 0) {
    unsigned char u = static_cast<unsigned char>(c);
    std::string shown = (u >= 0x20 && u < 0x7f) ? absl::StrCat("'", std::string(1, c), "'")
                                                : absl::StrCat("byte 0x", absl::Hex(u));
    EmitError(pos_, pos_ + 1, loc, absl::StrCat("invalid character ", shown));
    ++pos_;
    return absl::OkStatus();
  }
  if (c == '(' || c == '[' || c == '{') {
    if (static_cast<int>(brackets_.size()) >= kMaxBracketDepth)
      return ir::ErrorAt(file_, loc, "nesting too deep");
    brackets_.push_back({c, loc, out_.tokens.size()});
  } else if (c == ')' || c == ']' || c == '}') {
    char open = c == ')' ? '(' : c == ']' ? '[' : '{';
    if (brackets_.empty()) {
      EmitError(pos_, pos_ + 1, loc, absl::StrCat("unmatched '", std::string(1, c), "'"));
      ++pos_;
      return absl::OkStatus();
    }
    if (brackets_.back().c != open) {
      const Bracket& b = brackets_.back();
      EmitError(pos_, pos_ + 1, loc,
                absl::StrCat("closing parenthesis '", std::string(1, c),
                             "' does not match opening parenthesis '", std::string(1, b.c),
                             "' on line ", b.loc.line));
      brackets_.pop_back();
      ++pos_;
      return absl::OkStatus();
    }
    const Bracket& b = brackets_.back();
    out_.tokens[b.token].ival = (b.commas + 1) << 32 | b.equals;
    brackets_.pop_back();
  } else if (!brackets_.empty() && len == 1) {
    if (c == ',') ++brackets_.back().commas;
    if (c == '=') ++brackets_.back().equals;
  }
  Emit(TokKind::kOp, pos_, pos_ + 1, loc);
  ++pos_;
  return absl::OkStatus();
}

absl::StatusOr<TokenStream> Lexer::Run() {
  // Locations are int32 line:col pairs (ir::Loc); a longer text would wrap
  // them. The daemon's message limit keeps requests far below this.
  if (src_.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return ir::ErrorAt(file_, Loc{}, "source text is larger than 2147483647 bytes");
  }
  out_.tokens.reserve(std::min(src_.size() / 4, kMaxSourceTokens) + 8);
  if (src_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = line_begin_ = 3; // UTF-8 BOM, as Python
  bool at_bol = true; // at the start of a physical line that starts a logical line
  while (true) {
    if (out_.tokens.size() > kMaxSourceTokens) {
      return ir::ErrorAt(
          file_, out_.tokens.back().loc,
          absl::StrCat("program text too long (more than ", kMaxSourceTokens, " tokens)"));
    }
    if (at_bol) {
      at_bol = false;
      if (!Indentation()) {
        // Blank or comment-only line: skip it entirely.
        SkipToLineBreak();
        if (pos_ >= src_.size()) break;
        NewLine();
        at_bol = true;
        continue;
      }
      pending_line_start_ = true;
      line_has_tokens_ = false;
    }
    if (pos_ >= src_.size()) break;
    char c = src_[pos_];
    if (c == ' ' || c == '\t' || c == '\f') {
      ++pos_;
      while (pos_ < src_.size() && src_[pos_] == ' ') ++pos_;
    } else if (c == '#') {
      SkipToLineBreak();
    } else if (c == '\n' || c == '\r') {
      Loc loc = LocAt(pos_);
      size_t p = pos_;
      NewLine();
      if (brackets_.empty()) {
        if (line_has_tokens_) {
          Emit(TokKind::kNewline, p, p, loc);
          CountNewline();
        }
        line_has_tokens_ = false;
        at_bol = true;
      }
    } else if (c == '\\') {
      Loc loc = LocAt(pos_);
      ++pos_;
      if (pos_ < src_.size() && AtLineBreak()) {
        NewLine();
      } else if (pos_ >= src_.size()) {
        EmitError(pos_ - 1, pos_, loc, "unexpected end of file after line continuation");
      } else {
        EmitError(pos_ - 1, pos_, loc, "unexpected character after line continuation character");
      }
    } else if (IsIdentStart(c)) {
      size_t begin = pos_;
      Loc loc = LocAt(pos_);
      while (pos_ < src_.size() && IsIdentChar(src_[pos_])) ++pos_;
      std::string_view id = src_.substr(begin, pos_ - begin);
      if (pos_ < src_.size() && (src_[pos_] == '"' || src_[pos_] == '\'') && IsStringPrefix(id)) {
        absl::Status st = LexString(begin, loc);
        if (!st.ok()) return st;
      } else {
        Emit(IsPythonKeyword(id) ? TokKind::kKeyword : TokKind::kName, begin, pos_, loc);
      }
    } else if (c == '"' || c == '\'') {
      absl::Status st = LexString(pos_, LocAt(pos_));
      if (!st.ok()) return st;
    } else if (IsDigit(c) || (c == '.' && pos_ + 1 < src_.size() && IsDigit(src_[pos_ + 1]))) {
      LexNumber();
    } else {
      absl::Status st = LexOp();
      if (!st.ok()) return st;
    }
  }
  if (!brackets_.empty()) {
    const Bracket& b = brackets_.back();
    return ir::ErrorAt(file_, b.loc, absl::StrCat("'", std::string(1, b.c), "' was never closed"));
  }
  Loc end_loc = LocAt(pos_);
  if (line_has_tokens_) {
    Emit(TokKind::kNewline, pos_, pos_, end_loc);
    CountNewline();
  }
  while (indents_.size() > 1) {
    PopIndent();
    Emit(TokKind::kDedent, pos_, pos_, end_loc);
  }
  pending_line_start_ = false;
  Emit(TokKind::kEnd, pos_, pos_, end_loc);
  out_.top_level_lines = indents_.back().lines;
  return std::move(out_);
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

} // namespace

bool IsPythonKeyword(std::string_view w) {
  // Bucketed by first letter: this runs for every identifier.
  static constexpr std::string_view kByLetter[][7] = {
      /*A*/ {"and", "as", "assert", "async", "await"},
      /*B*/ {"break"},
      /*C*/ {"class", "continue"},
      /*D*/ {"def", "del"},
      /*E*/ {"elif", "else", "except"},
      /*F*/ {"finally", "for", "from", "False"},
      /*G*/ {"global"},
      /*H*/ {},
      /*I*/ {"if", "import", "in", "is"},
      /*J*/ {},
      /*K*/ {},
      /*L*/ {"lambda"},
      /*M*/ {},
      /*N*/ {"nonlocal", "not", "None"},
      /*O*/ {"or"},
      /*P*/ {"pass"},
      /*Q*/ {},
      /*R*/ {"raise", "return"},
      /*S*/ {},
      /*T*/ {"try", "True"},
      /*U*/ {},
      /*V*/ {},
      /*W*/ {"while", "with"},
      /*X*/ {},
      /*Y*/ {"yield"},
  };
  if (w.size() < 2 || w.size() > 8) return false;
  char c = static_cast<char>(w[0] | 0x20);
  if (c < 'a' || c > 'y') return false;
  for (std::string_view k : kByLetter[c - 'a']) {
    if (k.empty()) break;
    if (k == w) return true;
  }
  return false;
}

StringLiteralInfo ClassifyStringLiteral(std::string_view text) {
  StringLiteralInfo info;
  size_t i = 0;
  while (i < text.size() && text[i] != '"' && text[i] != '\'') {
    char c = static_cast<char>(text[i] | 0x20);
    if (c == 'r') info.is_raw = true;
    if (c == 'b') info.is_bytes = true;
    if (c == 'f') info.is_fstring = true;
    ++i;
  }
  info.prefix_len = i;
  // An empty one-quote literal ("") is too short to be mistaken for a triple.
  bool triple = i + 6 <= text.size() && text[i + 1] == text[i] && text[i + 2] == text[i];
  info.quote_len = triple ? 3 : 1;
  return info;
}

bool DecodeStringLiteral(std::string_view text, std::string* out, std::string* error,
                         size_t* error_offset) {
  StringLiteralInfo info = ClassifyStringLiteral(text);
  size_t begin = info.prefix_len + info.quote_len;
  if (text.size() < begin + info.quote_len) {
    *error = "malformed string literal";
    *error_offset = 0;
    return false;
  }
  size_t end = text.size() - info.quote_len;
  if (info.is_raw) {
    out->append(text.data() + begin, end - begin);
    return true;
  }
  out->reserve(out->size() + (end - begin));
  size_t i = begin;
  while (i < end) {
    size_t run = i;
    while (run < end && text[run] != '\\') ++run;
    out->append(text.data() + i, run - i);
    i = run;
    if (i >= end) break;
    size_t esc = i;
    ++i; // the backslash
    if (i >= end) {
      out->push_back('\\');
      break;
    }
    char c = text[i++];
    auto fail = [&](std::string message) {
      *error = std::move(message);
      *error_offset = esc;
      return false;
    };
    switch (c) {
    case '\n':
      break;
    case '\r':
      if (i < end && text[i] == '\n') ++i;
      break;
    case '\\':
      out->push_back('\\');
      break;
    case '\'':
      out->push_back('\'');
      break;
    case '"':
      out->push_back('"');
      break;
    case 'a':
      out->push_back('\a');
      break;
    case 'b':
      out->push_back('\b');
      break;
    case 'f':
      out->push_back('\f');
      break;
    case 'n':
      out->push_back('\n');
      break;
    case 'r':
      out->push_back('\r');
      break;
    case 't':
      out->push_back('\t');
      break;
    case 'v':
      out->push_back('\v');
      break;
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7': {
      uint32_t v = static_cast<uint32_t>(c - '0');
      for (int k = 0; k < 2 && i < end && text[i] >= '0' && text[i] <= '7'; ++k)
        v = v * 8 + static_cast<uint32_t>(text[i++] - '0');
      if (info.is_bytes)
        out->push_back(static_cast<char>(v & 0xFF));
      else
        AppendUtf8(v, out);
      break;
    }
    case 'x': {
      if (i + 2 > end || DigitValue(text[i], 16) < 0 || DigitValue(text[i + 1], 16) < 0)
        return fail("truncated \\xXX escape");
      uint32_t v =
          static_cast<uint32_t>(DigitValue(text[i], 16) * 16 + DigitValue(text[i + 1], 16));
      i += 2;
      if (info.is_bytes)
        out->push_back(static_cast<char>(v));
      else
        AppendUtf8(v, out);
      break;
    }
    case 'u':
    case 'U': {
      if (info.is_bytes) {
        out->push_back('\\');
        out->push_back(c);
        break;
      }
      size_t n = c == 'u' ? 4 : 8;
      uint32_t v = 0;
      for (size_t k = 0; k < n; ++k) {
        if (i >= end || DigitValue(text[i], 16) < 0)
          return fail(c == 'u' ? "truncated \\uXXXX escape" : "truncated \\UXXXXXXXX escape");
        v = v * 16 + static_cast<uint32_t>(DigitValue(text[i++], 16));
      }
      if (v > 0x10FFFF) return fail("illegal Unicode character in \\U escape");
      AppendUtf8(v, out);
      break;
    }
    case 'N':
      if (!info.is_bytes) return fail("\\N{...} escapes are not supported");
      [[fallthrough]];
    default:
      out->push_back('\\');
      out->push_back(c);
      break;
    }
  }
  return true;
}

absl::StatusOr<TokenStream> Tokenize(std::string_view source, std::string_view file_name) {
  Lexer lexer(source, file_name);
  return lexer.Run();
}

} // namespace kiln::frontend
