// Tokenizer for the Python 3.11 syntax that TileLang sources use: one pass
// over the source that yields tokens with 1-based line:col, including
// NEWLINE/INDENT/DEDENT as Python's tokenizer does (implicit line joining
// inside brackets, backslash continuation, comments and blank lines dropped,
// tabs to multiples of 8 with the same tab/space consistency check as Python).
//
// Errors come in two strengths:
//  - local problems (a bad character, an unterminated one-line string, a bad
//    number, a stray closing bracket, an inconsistent dedent) become kError
//    tokens in the stream, so that the parser can drop the statement that
//    holds them and resynchronize at the next top-level line;
//  - problems after which no later line can be trusted (an unterminated
//    triple-quoted string, a bracket never closed, brackets nested deeper than
//    kMaxBracketDepth) fail Tokenize with "file:line:col: message".
//
// Tokens point into the source text (no copies): the source must outlive the
// TokenStream. String literals are returned raw; DecodeStringLiteral turns a
// token's text into its value. Thread-safety: no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"

namespace kiln::frontend {

enum class TokKind : uint8_t {
  kEnd,     // always the last token
  kNewline, // end of a logical line
  kIndent,
  kDedent,
  kName,    // identifier that is not a keyword
  kKeyword, // hard keyword (if, def, None, True, ...); soft keywords are kName
  kInt,     // ival holds the value (always fits int64)
  kFloat,   // fval holds the value
  kString,  // raw literal text, prefix and quotes included
  kOp,      // operator or delimiter, text is its spelling
  kError,   // ival indexes TokenStream::errors; text = offending bytes
};

struct Token {
  TokKind kind = TokKind::kEnd;
  // First token of a logical line (set after the line's INDENT/DEDENTs), so a
  // continuation line or a line inside brackets never has it.
  bool line_start = false;
  ir::Loc loc; // 1-based; columns count bytes (a tab is one column)
  std::string_view text;
  // kInt: the value. Sizing hints for the parser (upper bounds, not facts):
  // kIndent: logical lines directly in the block; '(' '[' '{': top-level
  // commas + 1 in the high 32 bits, top-level '=' in the low 32 bits.
  int64_t ival = 0;
  double fval = 0.0;
};

struct TokenStream {
  std::vector<Token> tokens;       // ends with exactly one kEnd
  std::vector<std::string> errors; // messages of kError tokens
  int64_t top_level_lines = 0;     // logical lines at indentation 0 (a hint)
};

inline constexpr int kMaxBracketDepth = 200;
// Tokens of one source file. The parse of a token takes some 300 bytes of
// syntax tree, so this bounds a program's tree near 80 MiB (a 16 MiB source of
// 1.6 million statements took 2.8 GB); TileLang's largest example file has
// about 20,000 tokens.
inline constexpr size_t kMaxSourceTokens = size_t{1} << 18;

absl::StatusOr<TokenStream> Tokenize(std::string_view source, std::string_view file_name);

// Whether `word` is a Python 3.11 hard keyword.
bool IsPythonKeyword(std::string_view word);

// Prefix facts of a string literal's raw text (as in a kString token).
struct StringLiteralInfo {
  bool is_raw = false;
  bool is_bytes = false;
  bool is_fstring = false;
  size_t prefix_len = 0; // letters before the first quote
  size_t quote_len = 0;  // 1 or 3
};
StringLiteralInfo ClassifyStringLiteral(std::string_view text);

// Appends the value of the literal `text` to *out: escapes decoded (\n, \xhh,
// \ooo, \uXXXX and \UXXXXXXXX as UTF-8; unknown escapes kept verbatim as
// Python does), raw strings verbatim. f-strings are not decoded here: the
// caller keeps their raw text. On a malformed escape returns false and sets
// *error and *error_offset (byte offset within `text`).
bool DecodeStringLiteral(std::string_view text, std::string* out, std::string* error,
                         size_t* error_offset);

} // namespace kiln::frontend
