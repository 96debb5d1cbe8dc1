// The source line a located diagnostic points at, with a caret under its
// column, for people reading errors in a terminal:
//
//   gemm.py:27:13: unknown TileLang name 'T.gemmm'
//      27 |             T.gemmm(A_tile, B_tile, C_acc)
//         |             ^
//
// Messages stay one line on the wire (every client and test reads
// "file:line:col: message"); the tools that hold the source text (kiln-opt,
// kiln-run, the kiln CLI) add the snippet when they print. Pure functions,
// thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace kiln::util {

// `message` with a snippet after each of its lines that starts with
// "<file>:<line>:<col>: " and points into `source` (lines and columns count
// from 1; a column counts bytes, as Kiln's lexer does). Lines of `message`
// that name another file, or a position past the end of `source`, stay as
// they are. The quoted line is made printable (valid UTF-8; control
// characters other than tabs become spaces) and cut to a window of about
// 120 characters around the column when longer; the caret keeps the line's
// tabs so that it lines up in a terminal.
std::string WithSourceSnippets(std::string_view message, std::string_view file,
                               std::string_view source);

} // namespace kiln::util
