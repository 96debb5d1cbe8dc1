#include "clients/cpp/json_output.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/descriptor.h"

namespace kiln::cli {
namespace {

namespace gp = google::protobuf;

bool IsBindingValue(const gp::Descriptor* d) {
  return d->full_name() == kiln::v1::BindingValue::descriptor()->full_name();
}

// JSON has no NaN or infinity: null, as a reader can test for it.
OrderedJson Number(double v) { return std::isfinite(v) ? OrderedJson(v) : OrderedJson(nullptr); }

OrderedJson Value(const gp::Message& m, const gp::FieldDescriptor* f);

// One value of field `f` (element `index` when repeated, else -1).
OrderedJson Scalar(const gp::Message& m, const gp::FieldDescriptor* f, int index) {
  const gp::Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
  case gp::FieldDescriptor::CPPTYPE_INT32:
    return rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f);
  case gp::FieldDescriptor::CPPTYPE_INT64:
    return rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f);
  case gp::FieldDescriptor::CPPTYPE_UINT32:
    return rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f);
  case gp::FieldDescriptor::CPPTYPE_UINT64:
    return rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f);
  case gp::FieldDescriptor::CPPTYPE_DOUBLE:
    return Number(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
  case gp::FieldDescriptor::CPPTYPE_FLOAT:
    return Number(rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
  case gp::FieldDescriptor::CPPTYPE_BOOL:
    return rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f);
  case gp::FieldDescriptor::CPPTYPE_ENUM: {
    const int v = rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f);
    const gp::EnumValueDescriptor* e = f->enum_type()->FindValueByNumber(v);
    return e != nullptr ? OrderedJson(e->name()) : OrderedJson(v);
  }
  case gp::FieldDescriptor::CPPTYPE_STRING: {
    std::string s = rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
    if (f->type() == gp::FieldDescriptor::TYPE_BYTES) return absl::Base64Escape(s);
    return s;
  }
  case gp::FieldDescriptor::CPPTYPE_MESSAGE: {
    const gp::Message& sub = rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f);
    return MessageJson(sub);
  }
  }
  return nullptr;
}

// A map field as an object, entries sorted by key (protobuf keeps no order).
OrderedJson Map(const gp::Message& m, const gp::FieldDescriptor* f) {
  const gp::Reflection* r = m.GetReflection();
  const gp::FieldDescriptor* key = f->message_type()->map_key();
  const gp::FieldDescriptor* value = f->message_type()->map_value();
  std::vector<std::pair<std::string, OrderedJson>> entries;
  for (int i = 0; i < r->FieldSize(m, f); ++i) {
    const gp::Message& entry = r->GetRepeatedMessage(m, f, i);
    OrderedJson k = Scalar(entry, key, -1);
    entries.emplace_back(k.is_string() ? k.get<std::string>() : k.dump(), Scalar(entry, value, -1));
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  OrderedJson out = OrderedJson::object();
  for (auto& [k, v] : entries) out[k] = std::move(v);
  return out;
}

OrderedJson Value(const gp::Message& m, const gp::FieldDescriptor* f) {
  if (f->is_map()) return Map(m, f);
  if (f->is_repeated()) {
    OrderedJson out = OrderedJson::array();
    for (int i = 0; i < m.GetReflection()->FieldSize(m, f); ++i) out.push_back(Scalar(m, f, i));
    return out;
  }
  return Scalar(m, f, -1);
}

// Parses digits at text[*at...]; false when there are none.
bool Digits(absl::string_view text, size_t* at, int* out) {
  size_t i = *at;
  int v = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0 && i - *at < 9) {
    v = v * 10 + (text[i] - '0');
    ++i;
  }
  if (i == *at) return false;
  *at = i;
  *out = v;
  return true;
}

} // namespace

OrderedJson BindingJson(const kiln::v1::BindingValue& value) {
  switch (value.value_case()) {
  case kiln::v1::BindingValue::kIntValue:
    return value.int_value();
  case kiln::v1::BindingValue::kFloatValue:
    return Number(value.float_value());
  case kiln::v1::BindingValue::kBoolValue:
    return value.bool_value();
  case kiln::v1::BindingValue::kStringValue:
    return value.string_value();
  default:
    return nullptr;
  }
}

OrderedJson MessageJson(const gp::Message& message) {
  const gp::Descriptor* d = message.GetDescriptor();
  if (IsBindingValue(d)) {
    // Another pool's BindingValue (a dynamic message) would not cast: read it
    // by reflection like any message, then flatten.
    if (const auto* b = dynamic_cast<const kiln::v1::BindingValue*>(&message)) {
      return BindingJson(*b);
    }
    kiln::v1::BindingValue copy;
    copy.ParseFromString(message.SerializeAsString());
    return BindingJson(copy);
  }
  const gp::Reflection* r = message.GetReflection();
  OrderedJson out = OrderedJson::object();
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* f = d->field(i);
    if (!f->is_repeated() && f->has_presence() && !r->HasField(message, f)) continue;
    out[f->name()] = Value(message, f);
  }
  return out;
}

std::vector<DiagnosticLocation> ParseDiagnostics(absl::string_view text) {
  std::vector<DiagnosticLocation> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    for (size_t colon = line.find(':'); colon != absl::string_view::npos;
         colon = line.find(':', colon + 1)) {
      DiagnosticLocation d;
      size_t at = colon + 1;
      if (!Digits(line, &at, &d.line) || at >= line.size() || line[at] != ':') continue;
      ++at;
      if (!Digits(line, &at, &d.col) || line.substr(at, 2) != ": ") continue;
      const size_t space = line.find_last_of(" \t", colon);
      const size_t start = space == absl::string_view::npos ? 0 : space + 1;
      if (start >= colon || d.line <= 0) continue;
      d.file = absl::StrCat(line.substr(start, colon - start));
      d.message = absl::StrCat(line.substr(at + 2));
      out.push_back(std::move(d));
      break;
    }
  }
  return out;
}

OrderedJson ErrorJson(const absl::Status& status) {
  OrderedJson diagnostics = OrderedJson::array();
  for (const DiagnosticLocation& d : ParseDiagnostics(status.message())) {
    diagnostics.push_back(
        {{"file", d.file}, {"line", d.line}, {"col", d.col}, {"message", d.message}});
  }
  const absl::StatusCode code = status.ok() ? absl::StatusCode::kUnknown : status.code();
  OrderedJson error = {{"code", absl::StatusCodeToString(code)},
                       {"message", absl::StrCat(status.message())},
                       {"diagnostics", std::move(diagnostics)}};
  return {{"error", std::move(error)}};
}

std::string ErrorJsonLine(const absl::Status& status) { return Dump(ErrorJson(status)) + "\n"; }

std::string Dump(const OrderedJson& j, int indent) {
  return j.dump(indent, ' ', false, OrderedJson::error_handler_t::replace);
}

bool WantsJson(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--json") != args.end();
}

} // namespace kiln::cli
