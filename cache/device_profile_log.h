// Micro-benchmark results per (device model, driver version, Kiln version):
// the daemon measures a device model's DRAM bandwidth and tensor throughput
// once and reads them back after a restart (server/device_profiles.h).
//
// Rows live only in the index (not blobs): `kiln cache rebuild` does not
// restore them, which costs one re-measurement. Thread- and process-safe,
// errors as in sqlite_db.h. Get: NotFound when there is no row; kCorrupt
// (DataLoss) when the row's values are not a JSON object of finite,
// positive numbers, so the caller measures again and Put replaces it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/index.h"
#include "cache/records.h"

namespace kiln::cache {

class DeviceProfileLog {
 public:
  explicit DeviceProfileLog(Index* index) : index_(index) {}

  // Inserts or replaces the row of (device_model, driver, kiln_version).
  // InvalidArgument for an empty device model or a value that is not finite
  // and positive.
  absl::Status Put(const DeviceProfile& profile);
  absl::StatusOr<DeviceProfile> Get(const std::string& device_model, const std::string& driver,
                                    const std::string& kiln_version);
  // Every row, by device model then driver then Kiln version; corrupt rows
  // are left out.
  absl::StatusOr<std::vector<DeviceProfile>> List();

 private:
  Index* index_;
};

} // namespace kiln::cache
