#include "server/cache_artifact_store.h"

#include <algorithm>
#include <utility>

namespace kiln::server {

absl::StatusOr<cache::Artifact> CacheArtifactStore::Get(const std::string& key,
                                                        const std::vector<std::string>& kinds) {
  absl::StatusOr<cache::Artifact> a = cache_->GetArtifact(key);
  if (!a.ok() || kinds.empty()) return a;
  std::vector<cache::ArtifactFile> keep;
  for (cache::ArtifactFile& f : a->files) {
    if (std::find(kinds.begin(), kinds.end(), f.kind) != kinds.end()) keep.push_back(std::move(f));
  }
  a->files = std::move(keep);
  return a;
}

absl::Status CacheArtifactStore::Put(const std::string& key, const cache::Artifact& artifact) {
  return cache_->PutArtifact(key, artifact);
}

} // namespace kiln::server
