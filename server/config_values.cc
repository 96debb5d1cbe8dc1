#include "server/config_values.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "util/host_port.h"

namespace kiln::server {
namespace {

std::string S(std::string_view text) { return std::string(text); }

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

std::string Quoted(std::string_view text) { return absl::StrCat("'", S(text), "'"); }

} // namespace

absl::StatusOr<int64_t> ParseConfigInteger(std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  if (text.empty() || !absl::SimpleAtoi(S(text), &value)) {
    return Invalid(absl::StrCat(Quoted(text), " is not an integer"));
  }
  if (value < min || value > max) {
    return Invalid(absl::StrCat(value, " is out of range (", min, "..", max, ")"));
  }
  return value;
}

absl::StatusOr<bool> ParseConfigBool(std::string_view text) {
  const std::string lower = absl::AsciiStrToLower(S(text));
  if (lower == "true" || lower == "yes" || lower == "on" || lower == "1") return true;
  if (lower == "false" || lower == "no" || lower == "off" || lower == "0") return false;
  return Invalid(absl::StrCat(Quoted(text), " is not a boolean (true or false)"));
}

// "" or "unix:PATH" (gRPC only) or HOST:PORT.
absl::Status ValidateListenAddress(std::string_view text, bool allow_unix) {
  if (allow_unix && absl::StartsWith(S(text), "unix:")) {
    if (text.size() == 5) return Invalid("cannot listen on 'unix:': the socket path is missing");
    return absl::OkStatus();
  }
  absl::StatusOr<util::HostPort> parsed = util::ParseHostPort(text);
  if (!parsed.ok()) {
    return Invalid(absl::StrCat("cannot listen: ", parsed.status().message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceSelection> ParseDevices(std::string_view text) {
  DeviceSelection selection;
  const std::string lower = absl::AsciiStrToLower(S(text));
  if (lower == "auto") return selection;
  if (lower == "none") {
    selection.mode = DeviceSelection::Mode::kNone;
    return selection;
  }
  selection.mode = DeviceSelection::Mode::kList;
  for (absl::string_view part : absl::StrSplit(lower, ',')) {
    std::string item(absl::StripAsciiWhitespace(part));
    if (absl::StartsWith(item, "cuda:")) item = item.substr(5);
    int ordinal = 0;
    if (item.empty() || !absl::SimpleAtoi(item, &ordinal) || ordinal < 0 || ordinal > 1023) {
      return Invalid(absl::StrCat(
          Quoted(text), " is not a device selection (auto, none, or CUDA ordinals like 0,1)"));
    }
    if (std::find(selection.cuda_ordinals.begin(), selection.cuda_ordinals.end(), ordinal) !=
        selection.cuda_ordinals.end()) {
      return Invalid(absl::StrCat("device ", ordinal, " is listed twice"));
    }
    selection.cuda_ordinals.push_back(ordinal);
  }
  return selection;
}

std::string FormatDevices(const DeviceSelection& devices) {
  switch (devices.mode) {
  case DeviceSelection::Mode::kAuto:
    return "auto";
  case DeviceSelection::Mode::kNone:
    return "none";
  case DeviceSelection::Mode::kList:
    return absl::StrJoin(devices.cuda_ordinals, ",");
  }
  return "auto";
}

std::string FormatClientKey(FairShareConfig::ClientKey key) {
  switch (key) {
  case FairShareConfig::ClientKey::kAuto:
    return "auto";
  case FairShareConfig::ClientKey::kPeer:
    return "peer";
  case FairShareConfig::ClientKey::kMetadata:
    return "metadata";
  }
  return "auto";
}

absl::StatusOr<FairShareConfig::ClientKey> ParseClientKey(std::string_view text) {
  const std::string lower = absl::AsciiStrToLower(S(text));
  if (lower == "auto") return FairShareConfig::ClientKey::kAuto;
  if (lower == "peer") return FairShareConfig::ClientKey::kPeer;
  if (lower == "metadata") return FairShareConfig::ClientKey::kMetadata;
  return Invalid(absl::StrCat(Quoted(text), " is not auto, peer or metadata"));
}

absl::StatusOr<uint64_t> ParseByteSize(std::string_view text) {
  const std::string trimmed(absl::StripAsciiWhitespace(S(text)));
  size_t digits_end = 0;
  while (digits_end < trimmed.size() &&
         (absl::ascii_isdigit(static_cast<unsigned char>(trimmed[digits_end])) ||
          trimmed[digits_end] == '.')) {
    ++digits_end;
  }
  const std::string number = trimmed.substr(0, digits_end);
  const std::string unit =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(trimmed.substr(digits_end)));
  const absl::Status bad = Invalid(absl::StrCat(
      Quoted(text), " is not a size (bytes, or a number with a unit: 512MiB, 10GiB, 1.5GB)"));
  static const std::map<std::string, uint64_t> kUnits = {
      {"", 1},
      {"b", 1},
      {"kb", 1000},
      {"mb", 1000 * 1000},
      {"gb", 1000 * 1000 * 1000},
      {"tb", uint64_t{1000} * 1000 * 1000 * 1000},
      {"ki", uint64_t{1} << 10},
      {"kib", uint64_t{1} << 10},
      {"mi", uint64_t{1} << 20},
      {"mib", uint64_t{1} << 20},
      {"gi", uint64_t{1} << 30},
      {"gib", uint64_t{1} << 30},
      {"ti", uint64_t{1} << 40},
      {"tib", uint64_t{1} << 40},
  };
  auto unit_it = kUnits.find(unit);
  if (number.empty() || unit_it == kUnits.end() ||
      std::count(number.begin(), number.end(), '.') > 1 || number.front() == '.' ||
      number.back() == '.') {
    return bad;
  }
  // Exact arithmetic: whole * unit + fraction * unit / 10^k must be whole.
  const size_t dot = number.find('.');
  const std::string whole = number.substr(0, dot);
  const std::string fraction = dot == std::string::npos ? "" : number.substr(dot + 1);
  if (whole.size() > 20 || fraction.size() > 18) return bad;
  unsigned __int128 value = 0;
  for (char c : whole) value = value * 10 + static_cast<unsigned>(c - '0');
  value *= unit_it->second;
  if (!fraction.empty()) {
    unsigned __int128 f = 0;
    unsigned __int128 scale = 1;
    for (char c : fraction) {
      f = f * 10 + static_cast<unsigned>(c - '0');
      scale *= 10;
    }
    f *= unit_it->second;
    if (f % scale != 0) {
      return Invalid(absl::StrCat(Quoted(text), " is not a whole number of bytes"));
    }
    value += f / scale;
  }
  if (value > std::numeric_limits<uint64_t>::max()) {
    return Invalid(absl::StrCat(Quoted(text), " is too large"));
  }
  return static_cast<uint64_t>(value);
}

std::string FormatByteSize(uint64_t bytes) {
  static constexpr std::pair<uint64_t, std::string_view> kUnits[] = {{uint64_t{1} << 40, "TiB"},
                                                                     {uint64_t{1} << 30, "GiB"},
                                                                     {uint64_t{1} << 20, "MiB"},
                                                                     {uint64_t{1} << 10, "KiB"}};
  if (bytes == 0) return "0";
  for (const auto& [size, name] : kUnits) {
    if (bytes % size == 0) return absl::StrCat(bytes / size, S(name));
  }
  return absl::StrCat(bytes);
}

absl::StatusOr<absl::Duration> ParseConfigDuration(std::string_view text) {
  const std::string trimmed(absl::StripAsciiWhitespace(S(text)));
  absl::Duration d;
  if (!absl::ParseDuration(trimmed, &d) || d == absl::InfiniteDuration() ||
      d < absl::ZeroDuration()) {
    return Invalid(absl::StrCat(
        Quoted(text), " is not a duration (a number with a unit: 500ms, 30s, 5m, 1h30m)"));
  }
  return d;
}

} // namespace kiln::server
