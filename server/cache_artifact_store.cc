#include "server/cache_artifact_store.h"

#include <algorithm>
#include <utility>

namespace kiln::server {

absl::StatusOr<cache::Artifact> CacheArtifactStore::Get(const std::string& key,
                                                        const std::vector<std::string>& kinds) {
  return cache_->GetArtifact(key, kinds);
}

absl::Status CacheArtifactStore::Put(const std::string& key, const cache::Artifact& artifact) {
  return cache_->PutArtifact(key, artifact);
}

absl::Status CacheArtifactStore::CheckRoom() { return cache_->CheckFreeSpace(); }

} // namespace kiln::server
