#include <charconv>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/frontend/frontend.h"

namespace kiln::frontend {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  s = Trim(s);
  int64_t i = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return i;
}

// "[a, b, ...]" or "(a, b, ...)" of integers, as Python writes them: a
// one-item tuple needs its trailing comma ("(3,)"), a list may have one.
// Anything else (other items, nesting, "(3)") is not a list: nullopt.
std::optional<BindingValue> ParseIntList(std::string_view text) {
  text = Trim(text);
  if (text.size() < 2) return std::nullopt;
  const bool tuple = text.front() == '(';
  if (!((text.front() == '[' && text.back() == ']') || (tuple && text.back() == ')'))) {
    return std::nullopt;
  }
  std::string_view body = Trim(text.substr(1, text.size() - 2));
  BindingValue v;
  v.kind = BindingValue::Kind::kIntList;
  v.tuple = tuple;
  if (body.empty()) return v;
  bool trailing_comma = false;
  while (!body.empty()) {
    size_t comma = body.find(',');
    std::optional<int64_t> item = ParseInt(body.substr(0, comma));
    if (!item) return std::nullopt;
    v.ivals.push_back(*item);
    if (comma == std::string_view::npos) break;
    body = Trim(body.substr(comma + 1));
    trailing_comma = body.empty();
  }
  if (tuple && v.ivals.size() == 1 && !trailing_comma) return std::nullopt; // "(3)" is 3
  return v;
}

} // namespace

BindingValue ParseBindingText(std::string_view text) {
  BindingValue v;
  if (text == "True" || text == "true") {
    v.kind = BindingValue::Kind::kBool;
    v.bval = true;
    return v;
  }
  if (text == "False" || text == "false") {
    v.kind = BindingValue::Kind::kBool;
    v.bval = false;
    return v;
  }
  int64_t i = 0;
  auto [iend, iec] = std::from_chars(text.data(), text.data() + text.size(), i);
  if (iec == std::errc() && iend == text.data() + text.size() && !text.empty()) {
    v.kind = BindingValue::Kind::kInt;
    v.ival = i;
    return v;
  }
  double d = 0;
  auto [fend, fec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (fec == std::errc() && fend == text.data() + text.size() && !text.empty()) {
    v.kind = BindingValue::Kind::kFloat;
    v.fval = d;
    return v;
  }
  if (std::optional<BindingValue> list = ParseIntList(text)) return *list;
  v.kind = BindingValue::Kind::kString;
  v.sval = std::string(text);
  return v;
}

absl::Status CheckBindingListSize(std::string_view name, size_t items) {
  if (items <= kMaxBindingListItems) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("binding '", std::string(name), "': a list of ",
                                                 items, " items; at most ", kMaxBindingListItems));
}

absl::Status CheckBinding(std::string_view name, const BindingValue& value) {
  if (value.kind != BindingValue::Kind::kIntList) return absl::OkStatus();
  return CheckBindingListSize(name, value.ivals.size());
}

std::string BindingValueText(const BindingValue& value) {
  switch (value.kind) {
  case BindingValue::Kind::kInt:
    return absl::StrCat(value.ival);
  case BindingValue::Kind::kFloat:
    return absl::StrCat(value.fval);
  case BindingValue::Kind::kBool:
    return value.bval ? "True" : "False";
  case BindingValue::Kind::kString:
    return value.sval;
  case BindingValue::Kind::kIntList: {
    std::string items = absl::StrJoin(value.ivals, ", ");
    if (!value.tuple) return absl::StrCat("[", items, "]");
    return absl::StrCat("(", items, value.ivals.size() == 1 ? ",)" : ")");
  }
  }
  return "";
}

} // namespace kiln::frontend
