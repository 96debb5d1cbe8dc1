// Parser for the Python 3.11 syntax of TileLang source files: tokens from
// lexer.h in, the syntax tree of ast.h out.
//
// Error tolerance: a top-level statement that does not parse is kept as a
// BrokenStmt ("file:line:col: message", plus the names it would probably have
// defined) and parsing resumes at the next logical line that starts in column
// 1 (lines starting with else/elif/except/finally are skipped too, since they
// continue the broken statement). Example files carry drivers (argparse,
// torch, syntax we do not model) that the kernel never reaches, so one bad
// line must not cost the whole file.
//
// ParseModule fails only when the lexer cannot find line boundaries any more:
// an unterminated triple-quoted string, a bracket that is never closed, or
// brackets nested more than kMaxBracketDepth deep. Expression and block
// nesting is bounded too (kMaxParseDepth; deeper is a "nesting too deep"
// statement error), and so are the chains of one statement (kMaxChainLinks),
// so recursion stays shallow on any input.
//
// Not supported (a located error that breaks the statement): match, async,
// await, yield, except*, complex literals, \N{...} escapes. f-strings are
// split into literal text and fields whose expressions are parsed in place
// (PyExpr::is_fstring); one whose fields do not parse (or nest fields in a
// format spec) keeps its error for the evaluator, which reports it only if
// it evaluates the string. Bytes literals are decoded into PyExpr::str like
// strings. Thread-safety: no shared state.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "compiler/frontend/ast.h"

namespace kiln::frontend {

inline constexpr int kMaxParseDepth = 200;
// Links of left-deep chains (`a + b + ...`, `x[0][0]...`, `f()()...`,
// `a.b.c...`) in one statement; more is an "expression chain too long"
// statement error. Each link wraps the tree built so far, so a statement's
// expression trees are at most this much deeper than their bracket and
// operator nesting (kMaxParseDepth), and every walk over them (destruction
// included) recurses a bounded depth.
inline constexpr int kMaxChainLinks = 2000;

absl::StatusOr<Module> ParseModule(std::string_view source, std::string_view file_name);

// Parses a single expression (a bare tuple `a, b` allowed), e.g. for tests or
// for values given on a command line. Any error fails the call.
absl::StatusOr<PyExpr> ParseExpression(std::string_view source, std::string_view file_name);

} // namespace kiln::frontend
