#include "compiler/ir/diagnostic.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace kiln::ir {

absl::Status ErrorAt(std::string_view file, Loc loc, std::string_view message) {
  // Debian's Abseil predates absl::string_view == std::string_view.
  std::string f = file.empty() ? std::string("<input>") : std::string(file);
  std::string m(message);
  if (loc.line <= 0) return absl::InvalidArgumentError(absl::StrCat(f, ": ", m));
  return absl::InvalidArgumentError(absl::StrCat(f, ":", loc.line, ":", loc.col, ": ", m));
}

} // namespace kiln::ir
