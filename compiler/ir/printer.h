// The textual form of the tile IR (".kir"). The grammar is documented in
// docs/design/ir-text.md; ParseProgramText (text_parser.h) reads it back so
// that ParseProgramText(PrintProgram(p)) == p up to source locations.
// Thread IR (kCall statements, kAddress operands) prints too, as
// `call NAME(&BUF[i], ...)`, so that lowered programs can be inspected and
// golden-tested.
// Thread-safe (pure functions).
#pragma once

#include <string>

#include "compiler/ir/ir.h"

namespace kiln::ir {

struct PrintOptions {
  // Append ` loc(LINE:COL)` to statements (and declarations) that have a
  // known location. The parser accepts and restores them.
  bool locations = false;
};

std::string PrintProgram(const Program& program, const PrintOptions& options = {});
std::string PrintExpr(const Expr& expr);

} // namespace kiln::ir
