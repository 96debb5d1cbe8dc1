// The machine-read binding lines of a tile program file (docs/examples.md),
// for `kiln compile --test-bind`:
//   # kiln: bind NAME=VALUE ...        (a realistic GPU problem and tiling)
//   # kiln: test-bind NAME=VALUE ...   (small and ragged; CPU emulation size)
// The clients speak only the wire contract, so this reads the line itself
// (kiln-opt's compiler/tools/bind_lines.h does the same for the tools) and
// leaves the values as text for client::ParseBinding. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::cli {

// NAME and VALUE as written, in the line's order.
using BindLineEntries = std::vector<std::pair<std::string, std::string>>;

// The entries of the first `# kiln: <kind>` line of `source` (kind "bind"
// or "test-bind"). InvalidArgument naming `file`: no such line ("FILE has no
// '# kiln: test-bind' line"), or an entry that is not NAME=VALUE
// ("FILE:LINE: bad '# kiln: test-bind' entry 'M' (want NAME=VALUE)").
absl::StatusOr<BindLineEntries> ReadBindLine(std::string_view source, std::string_view file,
                                             std::string_view kind);

} // namespace kiln::cli
