// The client's read-through cache directory (client.h describes the
// contract): artifacts by key, and the Compile memo (request -> key).
//
//   DIR/artifacts/<key>/metadata.pb      ArtifactMetadata (binary proto)
//   DIR/artifacts/<key>/<kind>           one file per ArtifactKind ("cubin")
//   DIR/compile/<sha256>                 "<key>\n<unix ms written>\n"
//
// Writes go to a unique temporary file in the same folder, are fsynced and
// renamed into place, so a reader sees a whole file or none, and several
// processes may share the directory. Reads are verified (the metadata's key
// equals the folder, each file's SHA-256 equals the metadata's digest); a
// file that fails is removed and reported as absent, to be fetched again.
// Thread-safe (no in-memory state besides the path).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "kiln/v1/service.pb.h"

namespace kiln::client {

class LocalCache {
 public:
  explicit LocalCache(std::string dir) : dir_(std::move(dir)) {}

  enum class Read { kOk, kMissing, kCorrupt };

  // The stored metadata of `key`; kMissing / kCorrupt otherwise.
  Read GetMetadata(const std::string& key, kiln::v1::ArtifactMetadata* out) const;
  // The verified bytes of one file of `metadata`'s artifact.
  Read GetFile(const kiln::v1::ArtifactMetadata& metadata, kiln::v1::ArtifactKind kind,
               std::string* out) const;
  absl::Status PutMetadata(const kiln::v1::ArtifactMetadata& metadata) const;
  // The bytes must match the metadata's digest for `kind` (DataLoss).
  absl::Status PutFile(const kiln::v1::ArtifactMetadata& metadata, kiln::v1::ArtifactKind kind,
                       const std::string& bytes) const;

  // The memo: the key the server answered for `memo_id` if recorded within
  // `ttl` of `now`.
  std::optional<std::string> GetCompileKey(const std::string& memo_id, std::chrono::seconds ttl,
                                           int64_t now_unix_ms) const;
  absl::Status PutCompileKey(const std::string& memo_id, const std::string& key,
                             int64_t now_unix_ms) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string ArtifactDir(const std::string& key) const;
  std::string dir_;
};

// The file name of an artifact kind in the local cache ("cubin", "ptx", ...).
const char* KindFileName(kiln::v1::ArtifactKind kind);
// 64 lowercase hex digits.
bool IsCacheKey(const std::string& key);

} // namespace kiln::client
