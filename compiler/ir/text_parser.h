// Parser of the textual tile IR (see printer.h). Errors are located
// diagnostics ("file:line:col: message") pointing into the IR text.
// Thread-safe (pure function).
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"

namespace kiln::ir {

absl::StatusOr<Program> ParseProgramText(std::string_view text, std::string_view file_name);

// True if `text` looks like textual IR (its first token is `program`) rather
// than TileLang source.
bool LooksLikeIrText(std::string_view text);

} // namespace kiln::ir
