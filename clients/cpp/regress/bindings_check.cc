#include "clients/cpp/regress/bindings_check.h"

#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace kiln::regress {
namespace {

// The same spelling as the daemon's (server/best_config.cc BindingToJson):
// floats with 17 digits and a ".0" that keeps them floats.
std::string FloatText(double v) {
  if (!std::isfinite(v)) return "null";
  std::string s = absl::StrFormat("%.17g", v);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string ValueJson(const kiln::v1::BindingValue& v) {
  switch (v.value_case()) {
  case kiln::v1::BindingValue::kIntValue:
    return absl::StrCat(v.int_value());
  case kiln::v1::BindingValue::kFloatValue:
    return FloatText(v.float_value());
  case kiln::v1::BindingValue::kBoolValue:
    return v.bool_value() ? "true" : "false";
  case kiln::v1::BindingValue::kStringValue:
    return nlohmann::json(v.string_value()).dump();
  default:
    return "null";
  }
}

std::string ValueJson(const nlohmann::json& v) {
  if (v.is_number_float()) return FloatText(v.get<double>());
  return v.dump(); // integers, booleans, strings (re-escaped alike), null
}

} // namespace

Bindings BindingsOf(const std::map<std::string, kiln::v1::BindingValue>& bindings) {
  Bindings out;
  for (const auto& [name, value] : bindings) out[name] = ValueJson(value);
  return out;
}

std::optional<Bindings> RecordedBindings(const std::string& config_json) {
  const nlohmann::json j = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find("bindings");
  if (it == j.end() || !it->is_object()) return std::nullopt;
  Bindings out;
  for (const auto& [name, value] : it->items()) out[name] = ValueJson(value);
  return out;
}

std::string BindingsText(const Bindings& bindings) {
  if (bindings.empty()) return "(none)";
  return absl::StrJoin(bindings, " ", absl::PairFormatter("="));
}

std::string BindingsDiff(const Bindings& baseline, const Bindings& current) {
  std::vector<std::string> parts;
  for (const auto& [name, old_value] : baseline) {
    const auto it = current.find(name);
    if (it == current.end()) {
      parts.push_back(absl::StrCat(name, ": ", old_value, " -> (unset)"));
    } else if (it->second != old_value) {
      parts.push_back(absl::StrCat(name, ": ", old_value, " -> ", it->second));
    }
  }
  for (const auto& [name, new_value] : current) {
    if (!baseline.contains(name)) parts.push_back(absl::StrCat(name, ": (unset) -> ", new_value));
  }
  return absl::StrJoin(parts, ", ");
}

BaselineSelection SelectBaseline(const std::vector<BaselineRun>& runs, const Bindings& current,
                                 const std::string& baseline_label) {
  BaselineSelection out;
  const BaselineRun* newest_other = nullptr;
  for (const BaselineRun& run : runs) {
    if (run.bindings && *run.bindings != current) {
      if (newest_other == nullptr) newest_other = &run;
      ++out.left_out;
      continue;
    }
    if (!run.bindings) ++out.unknown;
    out.samples_us.push_back(run.median_us);
  }
  if (newest_other == nullptr) return out;
  out.difference = BindingsDiff(*newest_other->bindings, current);
  if (out.samples_us.empty()) {
    out.mismatch = absl::StrCat(
        "the bindings differ from baseline ", baseline_label, "'s (", out.difference, "; baseline ",
        BindingsText(*newest_other->bindings), ", this run ", BindingsText(current), ")");
  }
  return out;
}

} // namespace kiln::regress
