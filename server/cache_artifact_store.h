// The ArtifactStore of kilnd: the content-addressed cache directory
// (cache/cache.h), with every read proving that what it returns is the
// artifact of the key asked for. Thread-safe, as the cache is.
//
// What a read checks (docs/api.md, "What a read checks"):
//  1. the cache: every blob read hashes its bytes (SHA-256) against the
//     blob's name, its content address (CacheOptions::read_verify);
//  2. here: the artifact's metadata file (read with every request, even
//     when not asked for: a few hundred bytes) names the requested key, and
//     every returned file's digest is the one the metadata lists for its kind.
// A mismatch in 2 means the index row points at another artifact's blobs:
// the row is evicted (Cache::EvictMismatched: the blobs stay while another
// artifact uses them), counted (corrupt_artifacts) and logged by the cache,
// and the read is NotFound, a miss (Compile recompiles; GetArtifact says
// that the key was damaged and evicted). An artifact without a metadata
// file (not stored by kilnd) is returned as the cache has it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "server/artifact_store.h"

namespace kiln::server {

// The files of `kinds` (all when empty) of `key`'s artifact, checked as
// above. Errors: NotFound on a miss or a mismatch (evicted), others as the
// cache reports them.
absl::StatusOr<cache::Artifact> ReadVerifiedArtifact(cache::Cache& cache, const std::string& key,
                                                     const std::vector<std::string>& kinds);

class CacheArtifactStore final : public ArtifactStore {
 public:
  explicit CacheArtifactStore(cache::Cache* cache) : cache_(cache) {}
  absl::StatusOr<cache::Artifact> Get(const std::string& key,
                                      const std::vector<std::string>& kinds) override;
  absl::Status Put(const std::string& key, const cache::Artifact& artifact) override;
  absl::Status CheckRoom() override;
  uint64_t Generation() override { return cache_->generation(); }

 private:
  cache::Cache* const cache_;
};

} // namespace kiln::server
