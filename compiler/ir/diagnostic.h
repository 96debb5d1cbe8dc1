// Located diagnostics. Every user-facing compiler error is an
// absl::InvalidArgumentError whose message starts with "file:line:col: ",
// so that editors and tests can find the location. Thread-safe.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "compiler/ir/ir.h"

namespace kiln::ir {

// InvalidArgument("file:line:col: message"). An unknown location (0:0)
// prints as "file: message".
absl::Status ErrorAt(std::string_view file, Loc loc, std::string_view message);

} // namespace kiln::ir
