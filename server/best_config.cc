#include "server/best_config.h"

#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "server/request_convert.h"
#include "util/sha256.h"

namespace kiln::server {
namespace {

std::string Escape(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppend(&out, absl::StrFormat("\\u%04x", static_cast<unsigned char>(c)));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// A reader of one flat JSON object.
class FlatJson {
 public:
  explicit FlatJson(absl::string_view text) : text_(text) {}

  absl::StatusOr<ConfigMap> Parse() {
    ConfigMap out;
    Skip();
    if (!Eat('{')) return Error("expected '{'");
    Skip();
    if (Eat('}')) return Finish(std::move(out));
    for (;;) {
      Skip();
      absl::StatusOr<std::string> name = String();
      if (!name.ok()) return name.status();
      Skip();
      if (!Eat(':')) return Error("expected ':'");
      Skip();
      absl::StatusOr<kiln::v1::BindingValue> v = Value();
      if (!v.ok()) return v.status();
      out[*name] = *std::move(v);
      Skip();
      if (Eat('}')) return Finish(std::move(out));
      if (!Eat(',')) return Error("expected ',' or '}'");
    }
  }

 private:
  absl::StatusOr<ConfigMap> Finish(ConfigMap out) {
    Skip();
    if (pos_ != text_.size()) return Error("text after the object");
    return out;
  }
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("config JSON at offset ", pos_, ": ", what));
  }
  void Skip() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  absl::StatusOr<std::string> String() {
    if (!Eat('"')) return Error("expected a string");
    std::string out;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) break;
      const char e = text_[pos_++];
      switch (e) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        int code = 0;
        if (pos_ + 4 > text_.size() || !absl::SimpleHexAtoi(text_.substr(pos_, 4), &code) ||
            code > 0x7f) {
          return Error("only ASCII \\u escapes are supported");
        }
        out.push_back(static_cast<char>(code));
        pos_ += 4;
        break;
      }
      default:
        out.push_back(e);
      }
    }
    return Error("unterminated string");
  }
  absl::StatusOr<kiln::v1::BindingValue> Value() {
    kiln::v1::BindingValue v;
    if (pos_ < text_.size() && text_[pos_] == '"') {
      absl::StatusOr<std::string> s = String();
      if (!s.ok()) return s.status();
      v.set_string_value(*std::move(s));
      return v;
    }
    for (const auto& [word, value] : {std::pair<absl::string_view, bool>{"true", true},
                                      std::pair<absl::string_view, bool>{"false", false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        v.set_bool_value(value);
        return v;
      }
    }
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '-' ||
            text_[pos_] == '+' || text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
    }
    const absl::string_view number = text_.substr(start, pos_ - start);
    int64_t i = 0;
    double d = 0;
    if (absl::SimpleAtoi(number, &i)) {
      v.set_int_value(i);
    } else if (!number.empty() && absl::SimpleAtod(number, &d)) {
      v.set_float_value(d);
    } else {
      pos_ = start;
      return Error("expected a number, string, true or false");
    }
    return v;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

} // namespace

std::string BindingToJson(const kiln::v1::BindingValue& v) {
  switch (v.value_case()) {
  case kiln::v1::BindingValue::kIntValue:
    return absl::StrCat(v.int_value());
  case kiln::v1::BindingValue::kFloatValue: {
    if (!std::isfinite(v.float_value())) return "null";
    std::string s = absl::StrFormat("%.17g", v.float_value());
    // Keep a float a float when read back.
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return s;
  }
  case kiln::v1::BindingValue::kBoolValue:
    return v.bool_value() ? "true" : "false";
  case kiln::v1::BindingValue::kStringValue:
    return absl::StrCat("\"", Escape(v.string_value()), "\"");
  default:
    return "null";
  }
}

std::string ConfigToJson(const ConfigMap& config) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : config) {
    parts.push_back(absl::StrCat("\"", Escape(k), "\": ", BindingToJson(v)));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

absl::StatusOr<ConfigMap> ConfigFromJson(const std::string& json) { return FlatJson(json).Parse(); }

cache::BestConfigKey BestKeyFor(const kiln::v1::ProgramSource& program, const std::string& target,
                                const std::string& device_model,
                                const kiln::v1::CompileOptions& options) {
  util::Sha256 h;
  h.UpdateField("kiln-best-config-v1");
  switch (program.source_case()) {
  case kiln::v1::ProgramSource::kTilelangSource:
    h.UpdateField("tilelang");
    h.UpdateField(program.tilelang_source());
    break;
  case kiln::v1::ProgramSource::kIrText:
    h.UpdateField("ir_text");
    h.UpdateField(program.ir_text());
    break;
  case kiln::v1::ProgramSource::kIr: {
    h.UpdateField("ir");
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream stream(&bytes);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      program.ir().SerializeToCodedStream(&coded);
    }
    h.UpdateField(bytes);
    break;
  }
  default:
    break;
  }
  h.UpdateField(program.entry());
  cache::BestConfigKey key;
  key.program_key = h.FinishHex();
  std::map<std::string, const kiln::v1::BindingValue*> sorted;
  for (const auto& [k, v] : program.bindings()) sorted[k] = &v;
  std::vector<std::string> parts;
  for (const auto& [k, v] : sorted) {
    std::string value = BindingToJson(*v);
    if (v->value_case() == kiln::v1::BindingValue::kStringValue) value = v->string_value();
    parts.push_back(absl::StrCat(k, "=", value));
  }
  key.shape = absl::StrJoin(parts, ";");
  key.target = target.empty() ? "cpu" : target;
  key.target += driver::KernelVariant(OptionsFromProto(key.target, options));
  key.device_model = device_model;
  return key;
}

} // namespace kiln::server
