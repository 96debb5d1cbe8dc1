#include "server/cache_artifact_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kiln/v1/service.pb.h"
#include "server/artifact_metadata.h"

namespace kiln::server {
namespace {

bool Has(const std::vector<std::string>& kinds, const std::string& kind) {
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

// Why `artifact` (read under `key`) is not `key`'s, or "" when it is; `*digest`
// is the blob that carries the wrong identity.
std::string Mismatch(const std::string& key, const cache::Artifact& artifact,
                     const cache::ArtifactFile& metadata_file, std::string* digest) {
  *digest = metadata_file.digest;
  kiln::v1::ArtifactMetadata m;
  if (!m.ParseFromString(metadata_file.bytes)) return "its metadata file does not parse";
  if (m.key() != key) return absl::StrCat("its metadata names the key ", m.key());
  for (const cache::ArtifactFile& f : artifact.files) {
    const kiln::v1::ArtifactKind kind = ArtifactKindOf(f.kind);
    if (kind == kiln::v1::ARTIFACT_KIND_UNSPECIFIED) continue;
    for (const kiln::v1::ArtifactFile& listed : m.files()) {
      if (listed.kind() != kind || listed.blob_digest() == f.digest) continue;
      *digest = f.digest;
      return absl::StrCat("its ", f.kind, " file is blob ", f.digest, ", its metadata lists ",
                          listed.blob_digest());
    }
  }
  return "";
}

} // namespace

absl::StatusOr<cache::Artifact> ReadVerifiedArtifact(cache::Cache& cache, const std::string& key,
                                                     const std::vector<std::string>& kinds) {
  const bool metadata_wanted = kinds.empty() || Has(kinds, kMetadataKind);
  std::vector<std::string> read_kinds = kinds;
  if (!metadata_wanted) read_kinds.emplace_back(kMetadataKind);
  absl::StatusOr<cache::Artifact> a = cache.GetArtifact(key, read_kinds);
  if (!a.ok()) return a;
  auto metadata = std::find_if(a->files.begin(), a->files.end(), [](const cache::ArtifactFile& f) {
    return f.kind == kMetadataKind;
  });
  if (metadata == a->files.end()) return a;
  std::string digest;
  const std::string why = Mismatch(key, *a, *metadata, &digest);
  if (!why.empty()) {
    if (absl::Status s = cache.EvictMismatched(key, digest, why); !s.ok()) return s;
    return absl::NotFoundError(
        absl::StrCat("artifact ", key, " was damaged (", why, ") and has been evicted"));
  }
  if (!metadata_wanted) a->files.erase(metadata);
  return a;
}

absl::StatusOr<cache::Artifact> CacheArtifactStore::Get(const std::string& key,
                                                        const std::vector<std::string>& kinds) {
  return ReadVerifiedArtifact(*cache_, key, kinds);
}

absl::Status CacheArtifactStore::Put(const std::string& key, const cache::Artifact& artifact) {
  return cache_->PutArtifact(key, artifact);
}

absl::Status CacheArtifactStore::CheckRoom() { return cache_->CheckFreeSpace(); }

} // namespace kiln::server
