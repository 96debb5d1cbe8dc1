// Tokens and vocabulary of the textual tile IR (docs/design/ir-text.md),
// shared by the printer and the parser so that both spell operators,
// intrinsics and statement kinds the same way.
//
// The lexer never fails outright: a byte it cannot read becomes a kError
// token (carrying the message) that ends the stream, so the parser reports
// lexical and syntax errors in reading order.
// Thread-safe (pure functions over constant tables).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::ir::text {

enum class TokKind : uint8_t {
  kEof,
  kIdent,  // [A-Za-z_][A-Za-z0-9_]* with optional `.name` parts (shared.dyn)
  kInt,    // decimal digits, no sign (a `-` is its own token)
  kFloat,  // digits with `.` and/or an exponent, no sign
  kString, // value holds the decoded bytes
  kPunct,  // operators and delimiters; text is the spelling
  kError,  // value holds the message; always the last token
};

struct Token {
  TokKind kind = TokKind::kEof;
  std::string_view text; // the slice of the input
  std::string value;     // kString: decoded; kError: message
  Loc loc;               // 1-based line and byte column
  size_t begin = 0;      // byte offsets into the input
  size_t end = 0;
};

// Most tokens one text may hold. The parser builds at most one IR node per
// token and the lexer keeps every token (80 bytes each), so this caps what a
// hostile text costs before anything is built: about 20 MiB of tokens and
// 25 MiB of expressions. The largest real programs (flash attention lowered
// to thread IR, ~70 KB) hold about 24,000 tokens.
constexpr size_t kMaxTokens = size_t{1} << 18;

// Lexes all of `input`; the result ends with exactly one kEof or kError.
// Past `max_tokens` tokens the kError token, at the first token too many,
// says the text is too long.
std::vector<Token> Lex(std::string_view input, size_t max_tokens = kMaxTokens);

// True if `s` is a plain identifier (no dots).
bool IsIdentifier(std::string_view s);
// True if `s` lexes as one kIdent token (identifier, possibly dotted).
bool IsDottedIdentifier(std::string_view s);

// `"..."` with the escapes the lexer reads back.
std::string QuoteString(std::string_view s);

// Operator spelling and precedence (1 = `||` ... 10 = `*`); min/max are
// spelled as calls and have precedence 0 here.
std::string_view BinOpSpelling(BinOp op);
int BinOpPrecedence(BinOp op);
// The binary operator spelled by `punct`, if any.
std::optional<BinOp> BinOpFromSpelling(std::string_view punct);
constexpr int kUnaryPrecedence = 11;
constexpr int kAtomPrecedence = 12;

std::string_view IntrinsicName(Intrinsic fn);
std::optional<Intrinsic> IntrinsicFromName(std::string_view name);
int IntrinsicArity(Intrinsic fn);

std::string_view ForKindName(ForKind k);
std::optional<ForKind> ForKindFromName(std::string_view name);
std::string_view ReduceKindName(ReduceKind k); // "reduce_sum", ...
std::optional<ReduceKind> ReduceKindFromName(std::string_view name);
std::string_view AtomicOpName(AtomicOp op); // "atomic_add", ...
std::optional<AtomicOp> AtomicOpFromName(std::string_view name);
std::string_view GemmPolicyName(GemmPolicy p);
std::optional<GemmPolicy> GemmPolicyFromName(std::string_view name);

} // namespace kiln::ir::text
