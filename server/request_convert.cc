#include "server/request_convert.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/proto_convert.h"
#include "util/status_macros.h"

namespace kiln::server {

absl::StatusOr<frontend::BindingValue> BindingFromProto(const std::string& name,
                                                        const kiln::v1::BindingValue& value) {
  frontend::BindingValue out;
  switch (value.value_case()) {
  case kiln::v1::BindingValue::kIntValue:
    out.kind = frontend::BindingValue::Kind::kInt;
    out.ival = value.int_value();
    return out;
  case kiln::v1::BindingValue::kFloatValue:
    out.kind = frontend::BindingValue::Kind::kFloat;
    out.fval = value.float_value();
    return out;
  case kiln::v1::BindingValue::kBoolValue:
    out.kind = frontend::BindingValue::Kind::kBool;
    out.bval = value.bool_value();
    return out;
  case kiln::v1::BindingValue::kStringValue:
    out.kind = frontend::BindingValue::Kind::kString;
    out.sval = value.string_value();
    return out;
  case kiln::v1::BindingValue::kIntList: {
    out.kind = frontend::BindingValue::Kind::kIntList;
    out.tuple = value.int_list().tuple();
    const auto& values = value.int_list().values();
    // Checked before copying: the bound is also what this copy may cost.
    RETURN_IF_ERROR(frontend::CheckBindingListSize(name, static_cast<size_t>(values.size())));
    out.ivals.assign(values.begin(), values.end());
    return out;
  }
  case kiln::v1::BindingValue::VALUE_NOT_SET:
    break;
  }
  return absl::InvalidArgumentError(absl::StrCat("binding '", name, "' has no value"));
}

namespace {

absl::Status AddSorted(const google::protobuf::Map<std::string, kiln::v1::BindingValue>& map,
                       const char* what,
                       std::vector<std::pair<std::string, frontend::BindingValue>>* out) {
  std::vector<std::string> names;
  for (const auto& [name, value] : map) names.push_back(name);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " with an empty name"));
    absl::StatusOr<frontend::BindingValue> v = BindingFromProto(name, map.at(name));
    if (!v.ok()) return v.status();
    out->emplace_back(name, *std::move(v));
  }
  return absl::OkStatus();
}

// ProgramSource.dynamic_params: a kernel has few parameters.
constexpr int kMaxDynamicParams = 64;

} // namespace

absl::StatusOr<driver::ProgramInput>
ProgramFromProto(const kiln::v1::ProgramSource& source,
                 const google::protobuf::Map<std::string, kiln::v1::BindingValue>& config) {
  driver::ProgramInput in;
  in.file_name = source.file_name().empty() ? "<request>" : source.file_name();
  in.entry = source.entry();
  switch (source.source_case()) {
  case kiln::v1::ProgramSource::kTilelangSource:
    in.kind = driver::ProgramInput::Kind::kTileLang;
    in.text = source.tilelang_source();
    break;
  case kiln::v1::ProgramSource::kIrText:
    in.kind = driver::ProgramInput::Kind::kIrText;
    in.text = source.ir_text();
    break;
  case kiln::v1::ProgramSource::kIr: {
    in.kind = driver::ProgramInput::Kind::kProgram;
    absl::StatusOr<ir::Program> p = ir::FromProto(source.ir());
    if (!p.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("program.ir: ", p.status().message()));
    }
    in.program = *std::move(p);
    break;
  }
  case kiln::v1::ProgramSource::SOURCE_NOT_SET:
    return absl::InvalidArgumentError(
        "program: set one of tilelang_source, ir_text or ir (the request has no program)");
  }
  // Tuning knobs ("kiln:split_k") are pass options, not bindings (AddKnobs).
  const auto without_knobs =
      [](const google::protobuf::Map<std::string, kiln::v1::BindingValue>& m) {
        google::protobuf::Map<std::string, kiln::v1::BindingValue> out;
        for (const auto& [name, value] : m) {
          if (!driver::IsPassKnob(name)) out[name] = value;
        }
        return out;
      };
  if (absl::Status s = AddSorted(without_knobs(source.bindings()), "binding", &in.bindings);
      !s.ok()) {
    return s;
  }
  if (source.dynamic_params_size() > kMaxDynamicParams) {
    return absl::InvalidArgumentError(
        absl::StrCat("program.dynamic_params: ", source.dynamic_params_size(), " names; at most ",
                     kMaxDynamicParams));
  }
  for (const std::string& name : source.dynamic_params()) {
    if (name.empty()) return absl::InvalidArgumentError("program.dynamic_params: an empty name");
    in.dynamic_params.push_back(name);
  }
  // Order does not change the program; sorted, equal requests are equal.
  std::sort(in.dynamic_params.begin(), in.dynamic_params.end());
  in.dynamic_params.erase(std::unique(in.dynamic_params.begin(), in.dynamic_params.end()),
                          in.dynamic_params.end());
  std::vector<std::pair<std::string, frontend::BindingValue>> overrides;
  if (absl::Status s = AddSorted(without_knobs(config), "config entry", &overrides); !s.ok()) {
    return s;
  }
  for (auto& entry : overrides) {
    const std::string& name = entry.first;
    auto it = std::find_if(in.bindings.begin(), in.bindings.end(),
                           [&name](const auto& b) { return b.first == name; });
    if (it != in.bindings.end()) {
      it->second = std::move(entry.second);
    } else {
      in.bindings.push_back(std::move(entry));
    }
  }
  return in;
}

driver::BuildOptions OptionsFromProto(const std::string& target,
                                      const kiln::v1::CompileOptions& options) {
  driver::BuildOptions out;
  out.target = target.empty() ? "cpu" : target;
  out.toolchain = options.toolchain();
  // proto3 cannot tell 0 from unset; the API documents 0 as "the default".
  out.opt_level = options.opt_level() == 0 ? -1 : options.opt_level();
  out.fast_math = options.fast_math();
  out.emit_source = options.emit_source();
  out.emit_ptx = options.emit_ptx();
  out.line_info = options.line_info();
  out.pass_options.assign(options.pass_options().begin(), options.pass_options().end());
  return out;
}

absl::Status AddKnobs(const kiln::v1::ProgramSource& source,
                      const google::protobuf::Map<std::string, kiln::v1::BindingValue>& config,
                      driver::BuildOptions* options) {
  // The program's bindings first, then the config: a config entry wins.
  std::vector<std::pair<std::string, const kiln::v1::BindingValue*>> knobs;
  for (const auto* map : {&source.bindings(), &config}) {
    std::vector<std::string> names;
    for (const auto& [name, value] : *map) {
      if (driver::IsPassKnob(name)) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) knobs.emplace_back(name, &map->at(name));
  }
  for (const auto& [name, value] : knobs) {
    const kiln::v1::BindingValue& v = *value;
    if (v.value_case() != kiln::v1::BindingValue::kIntValue) {
      return absl::InvalidArgumentError(
          absl::StrCat("config entry '", name, "': a tuning knob takes an integer"));
    }
    absl::StatusOr<std::string> option = driver::KnobPassOption(name, v.int_value());
    if (!option.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config entry '", name, "': ", option.status().message()));
    }
    if (!option->empty()) options->pass_options.push_back(*std::move(option));
  }
  return absl::OkStatus();
}

} // namespace kiln::server
