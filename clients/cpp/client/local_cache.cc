#include "clients/cpp/client/local_cache.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "util/file_path.h"
#include "util/sha256.h"

namespace kiln::client {
namespace {

bool ReadWhole(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

void RemoveQuietly(const std::string& path) {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
}

const kiln::v1::ArtifactFile* FileOf(const kiln::v1::ArtifactMetadata& m,
                                     kiln::v1::ArtifactKind kind) {
  for (const kiln::v1::ArtifactFile& f : m.files()) {
    if (f.kind() == kind) return &f;
  }
  return nullptr;
}

} // namespace

const char* KindFileName(kiln::v1::ArtifactKind kind) {
  switch (kind) {
  case kiln::v1::ARTIFACT_KIND_CUBIN:
    return "cubin";
  case kiln::v1::ARTIFACT_KIND_PTX:
    return "ptx";
  case kiln::v1::ARTIFACT_KIND_HSACO:
    return "hsaco";
  case kiln::v1::ARTIFACT_KIND_SHARED_OBJECT:
    return "so";
  case kiln::v1::ARTIFACT_KIND_SOURCE:
    return "source";
  case kiln::v1::ARTIFACT_KIND_IR_TEXT:
    return "kir";
  default:
    return "unknown";
  }
}

bool IsCacheKey(const std::string& key) {
  if (key.size() != 64) return false;
  for (char c : key) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string LocalCache::ArtifactDir(const std::string& key) const {
  return absl::StrCat(dir_, "/artifacts/", key);
}

LocalCache::Read LocalCache::GetMetadata(const std::string& key,
                                         kiln::v1::ArtifactMetadata* out) const {
  if (!IsCacheKey(key)) return Read::kMissing;
  const std::string path = ArtifactDir(key) + "/metadata.pb";
  std::string bytes;
  if (!ReadWhole(path, &bytes)) return Read::kMissing;
  if (!out->ParseFromString(bytes) || out->key() != key) {
    RemoveQuietly(path);
    return Read::kCorrupt;
  }
  return Read::kOk;
}

LocalCache::Read LocalCache::GetFile(const kiln::v1::ArtifactMetadata& metadata,
                                     kiln::v1::ArtifactKind kind, std::string* out) const {
  const kiln::v1::ArtifactFile* f = FileOf(metadata, kind);
  if (f == nullptr || !IsCacheKey(metadata.key())) return Read::kMissing;
  const std::string path = absl::StrCat(ArtifactDir(metadata.key()), "/", KindFileName(kind));
  if (!ReadWhole(path, out)) return Read::kMissing;
  if (util::Sha256Hex(*out) != f->blob_digest()) {
    RemoveQuietly(path);
    out->clear();
    return Read::kCorrupt;
  }
  return Read::kOk;
}

absl::Status LocalCache::PutMetadata(const kiln::v1::ArtifactMetadata& metadata) const {
  if (!IsCacheKey(metadata.key())) {
    return absl::InvalidArgumentError(absl::StrCat("not a cache key: '", metadata.key(), "'"));
  }
  return util::WriteFileAtomically(ArtifactDir(metadata.key()) + "/metadata.pb",
                                   metadata.SerializeAsString());
}

absl::Status LocalCache::PutFile(const kiln::v1::ArtifactMetadata& metadata,
                                 kiln::v1::ArtifactKind kind, const std::string& bytes) const {
  const kiln::v1::ArtifactFile* f = FileOf(metadata, kind);
  if (f == nullptr || !IsCacheKey(metadata.key())) {
    return absl::InvalidArgumentError("the metadata lists no such file");
  }
  if (util::Sha256Hex(bytes) != f->blob_digest()) {
    return absl::DataLossError(absl::StrCat("the ", KindFileName(kind), " of ", metadata.key(),
                                            " does not match its SHA-256"));
  }
  return util::WriteFileAtomically(
      absl::StrCat(ArtifactDir(metadata.key()), "/", KindFileName(kind)), bytes);
}

std::optional<std::string> LocalCache::GetCompileKey(const std::string& memo_id,
                                                     std::chrono::seconds ttl,
                                                     int64_t now_unix_ms) const {
  if (ttl.count() <= 0) return std::nullopt;
  std::string text;
  const std::string path = absl::StrCat(dir_, "/compile/", memo_id);
  if (!ReadWhole(path, &text)) return std::nullopt;
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  int64_t written = 0;
  if (lines.size() < 2 || !IsCacheKey(lines[0]) || !absl::SimpleAtoi(lines[1], &written)) {
    RemoveQuietly(path);
    return std::nullopt;
  }
  const int64_t age_ms = now_unix_ms - written;
  if (age_ms < 0 || age_ms > ttl.count() * 1000) return std::nullopt;
  return lines[0];
}

absl::Status LocalCache::PutCompileKey(const std::string& memo_id, const std::string& key,
                                       int64_t now_unix_ms) const {
  return util::WriteFileAtomically(absl::StrCat(dir_, "/compile/", memo_id),
                                   absl::StrCat(key, "\n", now_unix_ms, "\n"));
}

} // namespace kiln::client
