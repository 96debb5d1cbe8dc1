// The ArtifactStore of kilnd: the content-addressed cache directory
// (cache/cache.h). Thread-safe, as the cache is.
#pragma once

#include <string>
#include <vector>

#include "cache/cache.h"
#include "server/artifact_store.h"

namespace kiln::server {

class CacheArtifactStore final : public ArtifactStore {
 public:
  explicit CacheArtifactStore(cache::Cache* cache) : cache_(cache) {}
  absl::StatusOr<cache::Artifact> Get(const std::string& key,
                                      const std::vector<std::string>& kinds) override;
  absl::Status Put(const std::string& key, const cache::Artifact& artifact) override;
  absl::Status CheckRoom() override;

 private:
  cache::Cache* const cache_;
};

} // namespace kiln::server
