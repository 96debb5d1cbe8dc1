// What the compile service needs of the content-addressed cache: artifacts
// by cache key, optionally only some of their files (the hit path reads just
// the small metadata file, not the binary). kilnd uses the cache directory
// (cache_artifact_store.h); tests may use anything else behind this
// interface.
//
// Implementations are thread-safe. Errors: NotFound on a miss (also for an
// artifact found damaged, or not the key's, and evicted); ResourceExhausted when
// the store is full; others as the store reports them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/records.h"

namespace kiln::server {

// The file kind holding the serialized kiln.v1.ArtifactMetadata.
inline constexpr char kMetadataKind[] = "metadata";

class ArtifactStore {
 public:
  virtual ~ArtifactStore() = default;
  // The artifact with the files of `kinds` (every file when empty).
  virtual absl::StatusOr<cache::Artifact> Get(const std::string& key,
                                              const std::vector<std::string>& kinds) = 0;
  // Publishes all of `artifact` or nothing.
  virtual absl::Status Put(const std::string& key, const cache::Artifact& artifact) = 0;
  // Whether a Put is likely to find room now, asked before work whose result
  // would be put (a compile): ResourceExhausted when the store's disk is
  // below its free-space floor. The message may name server paths: it is for
  // the log, not for clients. Default: always room.
  virtual absl::Status CheckRoom() { return absl::OkStatus(); }
  // A value that changes whenever this process's store removes or replaces
  // an artifact (found damaged, evicted, replaced). A caller keeping what it
  // read (the compile service's hit memo) trusts its copy only while this is
  // unchanged. 0 for stores that cannot say (their copies expire by time).
  virtual uint64_t Generation() { return 0; }
};

} // namespace kiln::server
