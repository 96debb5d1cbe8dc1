// The machine-read binding lines of example programs (docs/examples.md):
//   # kiln: bind NAME=VALUE ...        (a realistic GPU problem and tiling)
//   # kiln: test-bind NAME=VALUE ...   (small and ragged; CPU emulation size)
// and how command-line --bind values override them. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/frontend/frontend.h"

namespace kiln::tools {

using Bindings = std::vector<std::pair<std::string, frontend::BindingValue>>;

// The bindings of the `# kiln: <kind>` line of `source` (kind "bind" or
// "test-bind"); InvalidArgument naming `file` when there is no such line or
// an entry is not NAME=VALUE.
absl::StatusOr<Bindings> BindLine(const std::string& source, const std::string& file,
                                  std::string_view kind);

// `base` with each of `overrides` replacing the value of the same name (or
// appended).
Bindings Override(Bindings base, const Bindings& overrides);

} // namespace kiln::tools
