#include "compiler/frontend/args.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/ir/diagnostic.h"

namespace kiln::frontend {

absl::StatusOr<std::vector<std::optional<Value>>>
MatchArgs(std::string_view file, ir::Loc loc, std::string_view fn, const std::vector<Arg>& args,
          const std::vector<std::string_view>& names, size_t required, size_t positional) {
  std::vector<std::optional<Value>> out(names.size());
  const std::string fname(fn);
  size_t max_positional = std::min(positional, names.size());
  size_t pos = 0;
  for (const Arg& a : args) {
    if (!a.name.empty()) continue;
    if (pos >= max_positional) {
      return ir::ErrorAt(file, a.loc,
                         absl::StrCat(fname, "() takes ", max_positional, " positional argument",
                                      max_positional == 1 ? "" : "s", " but more were given"));
    }
    out[pos++] = a.value;
  }
  for (const Arg& a : args) {
    if (a.name.empty()) continue;
    size_t idx = 0;
    bool found = false;
    for (std::string_view n : names) {
      if (n == a.name) {
        found = true;
        break;
      }
      ++idx;
    }
    if (!found) {
      return ir::ErrorAt(
          file, a.name_loc,
          absl::StrCat(fname, "() got an unexpected keyword argument '", a.name, "'"));
    }
    if (out[idx].has_value()) {
      return ir::ErrorAt(file, a.name_loc,
                         absl::StrCat(fname, "() got multiple values for argument '", a.name, "'"));
    }
    out[idx] = a.value;
  }
  size_t idx = 0;
  for (std::string_view n : names) {
    if (idx < required && !out[idx].has_value()) {
      return ir::ErrorAt(
          file, loc, absl::StrCat(fname, "() missing required argument '", std::string(n), "'"));
    }
    ++idx;
  }
  return out;
}

ir::Loc ArgLoc(const std::vector<Arg>& args, const std::vector<std::string_view>& names,
               size_t index, ir::Loc call_loc) {
  size_t pos = 0;
  for (const Arg& a : args) {
    if (a.name.empty()) {
      if (pos == index) return a.loc;
      ++pos;
    }
  }
  std::string_view want = index < names.size() ? *(names.begin() + index) : "";
  for (const Arg& a : args) {
    if (!a.name.empty() && a.name == want) return a.loc;
  }
  return call_loc;
}

bool IsGiven(const std::optional<Value>& v) {
  if (!v.has_value() || v->is_none()) return false;
  return !((v->kind == ValueKind::kDict || v->is_sequence()) && v->elts().empty());
}

} // namespace kiln::frontend
