#include "cache/device_profile_log.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "cache/cache_error.h"
#include "util/status_macros.h"

namespace kiln::cache {
namespace {

constexpr char kColumns[] =
    "device_model, driver, kiln_version, state, values_json, note, measured_ms";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Plausible(double v) { return std::isfinite(v) && v > 0; }

// The row at `st`, or kCorrupt naming it.
absl::StatusOr<DeviceProfile> Row(const Statement& st) {
  DeviceProfile p;
  p.device_model = st.Text(0);
  p.driver = st.Text(1);
  p.kiln_version = st.Text(2);
  p.state = st.Text(3);
  p.note = st.Text(5);
  p.measured_unix_ms = st.Int(6);
  const std::string text = st.Text(4);
  auto corrupt = [&](std::string_view why) {
    return MakeError(CacheError::kCorrupt,
                     absl::StrCat("device profile of '", p.device_model, "' (driver ", p.driver,
                                  ", kiln ", p.kiln_version, "): ", AsAbsl(why)));
  };
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return corrupt("values are not a JSON object");
  for (const auto& [name, value] : j.items()) {
    if (!value.is_number() || !Plausible(value.get<double>())) {
      return corrupt(absl::StrCat("value '", name, "' is not a positive number"));
    }
    p.values[name] = value.get<double>();
  }
  return p;
}

} // namespace

absl::Status DeviceProfileLog::Put(const DeviceProfile& profile) {
  if (profile.device_model.empty()) {
    return absl::InvalidArgumentError("a device profile needs a device model");
  }
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : profile.values) {
    if (name.empty() || !Plausible(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("device profile value '", name, "' = ", value, " is not a positive number"));
    }
    j[name] = value;
  }
  const int64_t when = profile.measured_unix_ms != 0 ? profile.measured_unix_ms : NowMs();
  return index_->Write([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(Statement st, txn.db().Prepare(absl::StrCat(
                                       "INSERT OR REPLACE INTO device_profiles(", kColumns,
                                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")));
    st.Bind(1, profile.device_model)
        .Bind(2, profile.driver)
        .Bind(3, profile.kiln_version)
        .Bind(4, profile.state)
        .Bind(5, j.dump())
        .Bind(6, profile.note)
        .Bind(7, when);
    return st.Run();
  });
}

absl::StatusOr<DeviceProfile> DeviceProfileLog::Get(const std::string& device_model,
                                                    const std::string& driver,
                                                    const std::string& kiln_version) {
  absl::StatusOr<DeviceProfile> out = absl::NotFoundError(absl::StrCat(
      "no device profile for '", device_model, "' (driver ", driver, ", kiln ", kiln_version, ")"));
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(Statement st,
                     txn.db().Prepare(absl::StrCat(
                         "SELECT ", kColumns,
                         " FROM device_profiles WHERE device_model = ?1 AND driver = ?2 "
                         "AND kiln_version = ?3")));
    st.Bind(1, device_model).Bind(2, driver).Bind(3, kiln_version);
    ASSIGN_OR_RETURN(bool found, st.Step());
    if (found) out = Row(st);
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<std::vector<DeviceProfile>> DeviceProfileLog::List() {
  std::vector<DeviceProfile> out;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    out.clear();
    ASSIGN_OR_RETURN(Statement st, txn.db().Prepare(absl::StrCat(
                                       "SELECT ", kColumns,
                                       " FROM device_profiles ORDER BY device_model, driver, "
                                       "kiln_version")));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      absl::StatusOr<DeviceProfile> p = Row(st);
      if (p.ok()) out.push_back(*std::move(p));
    }
    return absl::OkStatus();
  }));
  return out;
}

} // namespace kiln::cache
