// The job records of the daemons that share this cache (kilnd's compile,
// tune and benchmark jobs), so that a job's result or failure can still be
// asked for after a restart. The record itself is the daemon's own bytes.
//
// Rows live only in the index (not blobs): `kiln cache rebuild` does not
// restore them. Old finished jobs are pruned by Prune(). Thread- and
// process-safe, errors as in sqlite_db.h; Get's NotFound for an unknown id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/index.h"
#include "cache/records.h"

namespace kiln::cache {

class JobLog {
 public:
  explicit JobLog(Index* index) : index_(index) {}

  // Inserts or replaces the record with `job.id`.
  absl::Status Put(const JobRecord& job);
  absl::StatusOr<JobRecord> Get(const std::string& id);
  // Newest first; limit <= 0: all. `unfinished_only`: finished_unix_ms == 0.
  // `min_created_ms`: only jobs created then or later.
  absl::StatusOr<std::vector<JobRecord>> List(int64_t limit, bool unfinished_only = false,
                                              int64_t min_created_ms = 0);
  // Deletes finished jobs created before `before_unix_ms`; returns how many.
  absl::StatusOr<int64_t> Prune(int64_t before_unix_ms);
  // Deletes finished jobs but the newest `keep` (by created time; those
  // created in the same millisecond as the oldest kept one stay too), so
  // that the table does not grow with every job a daemon runs. Unfinished
  // jobs stay; keep <= 0 deletes every finished one. Returns how many were
  // deleted.
  absl::StatusOr<int64_t> PruneKeepNewest(int64_t keep);

 private:
  Index* index_;
};

} // namespace kiln::cache
