// The JobStore of kilnd: job records in the cache's index (cache/job_log.h),
// so jobs survive a restart and every daemon and CLI sharing the cache
// directory sees them. Thread-safe, as the cache is.
#pragma once

#include <string>
#include <vector>

#include "cache/cache.h"
#include "server/job_manager.h"

namespace kiln::server {

class CacheJobStore final : public JobStore {
 public:
  explicit CacheJobStore(cache::Cache* cache) : cache_(cache) {}
  absl::Status Save(const kiln::v1::Job& job) override;
  absl::StatusOr<kiln::v1::Job> Load(const std::string& id) override;
  absl::StatusOr<std::vector<kiln::v1::Job>> List(int64_t limit) override;
  absl::StatusOr<std::vector<kiln::v1::Job>> ListSince(int64_t limit,
                                                       int64_t min_created_unix_ms) override;
  absl::StatusOr<int64_t> PruneFinished(int64_t keep) override;

 private:
  cache::Cache* const cache_;
};

} // namespace kiln::server
