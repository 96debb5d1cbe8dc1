// The measurement history: every benchmark and tuning measurement, queried by
// key, label (e.g. a git sha), device model and time, newest first. This is
// what CI regression jobs read.
//
// Rows live only in the index (they are not blobs): `kiln cache rebuild`
// cannot restore them. Thread- and process-safe, errors as in sqlite_db.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/index.h"
#include "cache/records.h"

namespace kiln::cache {

class MeasurementLog {
 public:
  explicit MeasurementLog(Index* index) : index_(index) {}

  // Appends `m` (time_unix_ms 0 means now) and returns its id.
  absl::StatusOr<int64_t> Record(const Measurement& m);
  absl::StatusOr<std::vector<Measurement>> Query(const MeasurementQuery& q);
  // Distinct labels recorded for `key`, newest first (e.g. the commits a
  // regression tool can compare).
  absl::StatusOr<std::vector<std::string>> Labels(const std::string& key);

 private:
  Index* index_;
};

} // namespace kiln::cache
