// The cache's SQLite index: which blobs exist, which artifacts name them, the
// best configs that pin artifacts, counters. Index knows nothing of blob
// files; Cache runs its file steps inside Index transactions where an
// ordering argument needs the write lock (see cache.h).
//
// Thread- and process-safe: every Read/Write takes a pooled connection, and
// SQLite (WAL mode) serializes writers across processes. Errors are those of
// sqlite_db.h; a callback's own error rolls its transaction back.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cache/blob_store.h"
#include "cache/connection_pool.h"
#include "cache/records.h"

namespace kiln::cache {

// An artifact as the index holds it: metadata and the blobs of its files.
struct IndexedArtifact {
  Artifact meta;                    // files carry kind and digest; bytes empty
  std::vector<uint64_t> file_sizes; // on disk, parallel to meta.files
  std::string manifest_digest;
  uint64_t total_size = 0;
  int64_t last_access_unix_ms = 0;
};

struct LruEntry {
  std::string key;
  uint64_t total_size = 0;
};

struct IndexCounts {
  int64_t artifacts = 0;
  int64_t blobs = 0;
  uint64_t blob_bytes = 0;
  int64_t pinned_artifacts = 0;
  int64_t best_configs = 0;
  int64_t measurements = 0;
  std::map<std::string, int64_t> counters; // hits, misses, evictions, corrupt_blobs
};

// The operations available inside one transaction. Valid only during the
// Index::Read / Index::Write callback that received it.
class IndexTxn {
 public:
  explicit IndexTxn(SqliteDb& db) : db_(db) {}

  // Blobs. InsertBlob is a no-op (false) when the row exists; the counted
  // total follows rows inserted and deleted.
  absl::StatusOr<bool> HasBlob(const std::string& digest);
  absl::StatusOr<bool> InsertBlob(const BlobInfo& info, int64_t now_ms);
  absl::Status DeleteBlob(const std::string& digest);
  // Digests among `candidates` (or all, when null) that no artifact, artifact
  // file or best config names.
  absl::StatusOr<std::vector<std::string>> Unreferenced(const std::vector<std::string>* candidates);
  absl::StatusOr<std::vector<BlobInfo>> AllBlobs();
  // The least recently verified blobs, at most `limit`.
  absl::StatusOr<std::vector<BlobInfo>> ScrubCandidates(int64_t limit);
  absl::Status SetVerified(const std::string& digest, int64_t now_ms);
  absl::StatusOr<uint64_t> TotalBytes();

  // Artifacts.
  absl::StatusOr<std::optional<IndexedArtifact>> GetArtifact(const std::string& key);
  // Inserts the artifact rows (all blobs must have rows already).
  absl::Status InsertArtifact(const std::string& key, const Artifact& meta,
                              const std::string& manifest_digest, uint64_t total_size,
                              int64_t now_ms);
  // Deletes the artifact; returns the digests it named (sweep candidates),
  // empty when there was no such artifact.
  absl::StatusOr<std::vector<std::string>> DeleteArtifact(const std::string& key);
  absl::StatusOr<std::vector<std::string>> ArtifactsUsingBlob(const std::string& digest);
  // Unpinned artifacts, least recently used first.
  absl::StatusOr<std::vector<LruEntry>> LruCandidates(int64_t limit);
  absl::Status Touch(const std::map<std::string, int64_t>& last_access_ms);
  absl::StatusOr<std::vector<ArtifactSummary>> ListArtifacts(int64_t limit);

  // Best configs.
  absl::StatusOr<std::optional<std::pair<BestConfig, std::string>>>
  GetBest(const BestConfigKey& key); // value and its record digest
  absl::Status PutBest(const BestConfigKey& key, const BestConfig& value,
                       const std::string& record_digest);
  absl::StatusOr<bool> RemoveBest(const BestConfigKey& key, std::string* record_digest);
  absl::StatusOr<std::vector<std::pair<BestConfigKey, BestConfig>>>
  ListBest(const std::string& program_key); // empty program_key: all
  // Best configs whose record blob is `digest`.
  absl::StatusOr<std::vector<std::pair<BestConfigKey, BestConfig>>>
  BestUsingRecord(const std::string& digest);
  absl::Status ReplaceBestRecord(const std::string& old_digest, const std::string& new_digest);

  // Counters.
  absl::Status AddCounter(const std::string& name, int64_t delta);
  absl::StatusOr<IndexCounts> Counts();

  // PRAGMA quick_check: empty when the database is sound, else SQLite's
  // findings.
  absl::StatusOr<std::string> QuickCheck();

  SqliteDb& db() { return db_; }

 private:
  SqliteDb& db_;
};

class Index {
 public:
  // Opens (creating when `create`) and migrates the index at `path`.
  static absl::StatusOr<std::unique_ptr<Index>> Open(const std::string& path, bool create,
                                                     const SqliteOptions& options);

  absl::Status Read(const std::function<absl::Status(IndexTxn&)>& fn);
  // For callbacks that run a single statement: no explicit transaction.
  absl::Status ReadOne(const std::function<absl::Status(IndexTxn&)>& fn);
  absl::Status Write(const std::function<absl::Status(IndexTxn&)>& fn);

  ConnectionPool& pool() { return pool_; }

  // Bytes of the index's files on disk: the database, its -wal and its
  // -shm (missing ones count 0). The WAL keeps its largest size until a
  // truncating checkpoint, so it is disk the cache uses.
  uint64_t FileBytes() const;
  // Copies the WAL into the database and truncates it to zero bytes
  // (PRAGMA wal_checkpoint(TRUNCATE)). kTimeout / kIo when readers or a
  // writer (any process) keep it from completing; nothing is lost then.
  absl::Status Checkpoint();

 private:
  Index(const std::string& path, const SqliteOptions& options)
      : path_(path), pool_(path, options) {}
  absl::Status Run(bool write, const std::function<absl::Status(IndexTxn&)>& fn);

  const std::string path_;
  ConnectionPool pool_;
};

} // namespace kiln::cache
