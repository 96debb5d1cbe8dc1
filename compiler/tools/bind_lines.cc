#include "compiler/tools/bind_lines.h"

#include <algorithm>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace kiln::tools {

absl::StatusOr<Bindings> BindLine(const std::string& source, const std::string& file,
                                  std::string_view kind) {
  const std::string tag = absl::StrCat("# kiln: ", std::string(kind), " ");
  std::istringstream lines(source);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(tag, 0) != 0) continue;
    Bindings out;
    std::istringstream words(line.substr(tag.size()));
    std::string word;
    while (words >> word) {
      const size_t eq = word.find('=');
      if (eq == 0 || eq == std::string::npos || eq + 1 == word.size()) {
        return absl::InvalidArgumentError(absl::StrCat(file, ": bad '# kiln: ", std::string(kind),
                                                       "' entry '", word, "' (want NAME=VALUE)"));
      }
      out.emplace_back(word.substr(0, eq), frontend::ParseBindingText(word.substr(eq + 1)));
    }
    return out;
  }
  return absl::InvalidArgumentError(absl::StrCat("--", std::string(kind), ": ", file,
                                                 " has no '# kiln: ", std::string(kind), "' line"));
}

Bindings Override(Bindings base, const Bindings& overrides) {
  for (const auto& entry : overrides) {
    auto it = std::find_if(base.begin(), base.end(),
                           [&](const auto& b) { return b.first == entry.first; });
    if (it != base.end()) {
      it->second = entry.second;
    } else {
      base.push_back(entry);
    }
  }
  return base;
}

} // namespace kiln::tools
