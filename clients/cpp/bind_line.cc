#include "clients/cpp/bind_line.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kiln::cli {

absl::StatusOr<BindLineEntries> ReadBindLine(std::string_view source, std::string_view file_name,
                                             std::string_view kind) {
  // Abseil's string_view is its own type in this Abseil (Debian's 20220623).
  const std::string file(file_name);
  const std::string tag = absl::StrCat("# kiln: ", std::string(kind));
  int line_number = 0;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(source.data(), source.size()), '\n')) {
    ++line_number;
    line = absl::StripSuffix(line, "\r");
    if (!absl::ConsumePrefix(&line, tag)) continue;
    // "# kiln: test-bind" must not match "# kiln: test-binding".
    if (!line.empty() && line.front() != ' ' && line.front() != '\t') continue;
    BindLineEntries out;
    for (absl::string_view word : absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      const size_t eq = word.find('=');
      if (eq == 0 || eq == absl::string_view::npos || eq + 1 == word.size()) {
        return absl::InvalidArgumentError(absl::StrCat(file, ":", line_number, ": bad '", tag,
                                                       "' entry '", word, "' (want NAME=VALUE)"));
      }
      out.emplace_back(absl::StrCat(word.substr(0, eq)), absl::StrCat(word.substr(eq + 1)));
    }
    return out;
  }
  return absl::InvalidArgumentError(absl::StrCat(file, " has no '", tag, "' line"));
}

} // namespace kiln::cli
