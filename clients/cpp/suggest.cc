#include "clients/cpp/suggest.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kiln::cli {
namespace {

// `text` without its leading dashes and without a flag's "=VALUE".
std::string_view Core(std::string_view text) {
  if (text.rfind('-', 0) == 0) {
    if (const size_t eq = text.find('='); eq != std::string_view::npos) text = text.substr(0, eq);
  }
  while (!text.empty() && text.front() == '-') text.remove_prefix(1);
  return text;
}

int Allowed(size_t length) { return length <= 4 ? 1 : length <= 8 ? 2 : 3; }

} // namespace

int EditDistance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  // Three rows: the one before last (for swaps), the last, the current.
  std::vector<int> before(m + 1), last(m + 1), row(m + 1);
  for (size_t j = 0; j <= m; ++j) last[j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({last[j] + 1, row[j - 1] + 1, last[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        row[j] = std::min(row[j], before[j - 2] + 1);
      }
    }
    before.swap(last);
    last.swap(row);
  }
  return last[m];
}

std::optional<std::string> Suggest(std::string_view typed, const std::vector<std::string>& known) {
  const std::string_view core = Core(typed);
  if (core.empty()) return std::nullopt;
  const bool flag = !typed.empty() && typed.front() == '-';
  const std::string* best = nullptr;
  int best_distance = std::numeric_limits<int>::max();
  const std::string* prefix_of = nullptr;
  int prefixes = 0;
  for (const std::string& k : known) {
    // A flag is compared with flags, a name with names.
    if ((!k.empty() && k.front() == '-') != flag) continue;
    const std::string_view kcore = Core(k);
    if (kcore == core) continue; // the same name: not a typo of it
    const int d = EditDistance(core, kcore);
    if (d < best_distance) {
      best_distance = d;
      best = &k;
    }
    if (core.size() >= 3 && kcore.rfind(core, 0) == 0) {
      ++prefixes;
      prefix_of = &k;
    }
  }
  // A name replaced as a whole is no typo of it (`a` is not a typo of `b`).
  if (best != nullptr && best_distance <= Allowed(core.size()) &&
      best_distance < static_cast<int>(std::max(core.size(), Core(*best).size()))) {
    return *best;
  }
  if (prefixes == 1) return *prefix_of;
  return std::nullopt;
}

std::string DidYouMean(std::string_view typed, const std::vector<std::string>& known) {
  std::optional<std::string> s = Suggest(typed, known);
  return s ? absl::StrCat("; did you mean '", *s, "'?") : "";
}

std::string UnknownFlag(std::string_view typed, const std::vector<std::string>& known) {
  return absl::StrCat("unknown flag '", std::string(typed), "'", DidYouMean(typed, known));
}

} // namespace kiln::cli
