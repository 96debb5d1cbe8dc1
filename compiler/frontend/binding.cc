#include <charconv>
#include <string>

#include "compiler/frontend/frontend.h"

namespace kiln::frontend {

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
  v.kind = BindingValue::Kind::kString;
  v.sval = std::string(text);
  return v;
}

} // namespace kiln::frontend
