// The content-addressed cache: compiled artifacts by cache key, best configs
// by (program, shape, target, device model), and the measurement history, in
// one directory that any number of processes (daemons, CLI) may share.
//
//   <dir>/kiln-cache.json        layout marker (its presence means "a cache")
//   <dir>/index.sqlite (+-wal)   the index (index.h, schema.h), WAL mode
//   <dir>/blobs/ab/ab12...       blob files (blob_store.h); blobs/tmp/ temps
//
// Publishing: an artifact's file blobs and its manifest blob (manifest.h) are
// written and fsynced first, then one index transaction inserts their rows
// and the artifact's. Readers see all of an artifact or none of it, and
// an index row never names a blob that was not complete on disk.
//
// Removal: deleting rows and unlinking files are ordered so that no committed
// entry can lose a blob. Artifact rows are deleted in one transaction; blobs
// that nothing references any more are unlinked in a later write transaction,
// under the write lock, after rechecking that they are still unreferenced.
// A writer that reuses an existing blob checks, under the same lock, that the
// file still exists before it commits rows naming it (see docs/cache.md).
//
// Thread-safety: a Cache is safe to use from any number of threads; open one
// per process (it is not fork-safe: a child opens its own).
//
// Reads prove identity: by default every blob read checks the SHA-256 of its
// bytes against the blob's name (its content address), so a blob file that
// is damaged, truncated or another blob's copy is never returned.
//
// Errors (cache_error.h): a miss is kNotFound; a damaged blob found on read is
// evicted, counted, and also reported as kNotFound ("a miss"); kExhausted for
// a full disk or the hard size limit (reads keep working); kTimeout when the
// index stays locked past the retry budget; kCorrupt when the index is
// damaged or missing while blobs remain (the message says to run
// `kiln cache rebuild`); kIo otherwise. InvalidArgument for malformed keys or
// artifacts.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cache/access_batcher.h"
#include "cache/blob_store.h"
#include "cache/device_profile_log.h"
#include "cache/index.h"
#include "cache/job_log.h"
#include "cache/measurement_log.h"
#include "cache/records.h"
#include "cache/sqlite_db.h"

namespace kiln::cache {

struct CacheOptions {
  // Soft limit on the cache's bytes on disk (blobs, the index with its WAL,
  // the reserve): crossing it starts eviction (in the background thread, or
  // inline without one) down to evict_to_fraction of it. 0: none.
  // Limits are recorded in the index; an Open that gives neither limit uses
  // the recorded ones (so `kiln cache gc` knows the daemon's).
  uint64_t max_size_bytes = 0;
  // Writes that would cross it fail with kExhausted until eviction catches
  // up. 0: max_size_bytes + max_size_bytes / 4.
  uint64_t hard_limit_bytes = 0;
  // Whether the limits count the index's files and the reserve (overhead_
  // bytes) with the blobs. Off: blob bytes only (tests of LRU order that
  // need exact sizes).
  bool limits_count_overhead = true;
  double evict_to_fraction = 0.9;
  // A maintenance thread that flushes access times, evicts past the soft
  // limit and scrubs. Without it, all of that runs inline.
  bool background = true;
  // Access-time batching (access_batcher.h).
  std::chrono::milliseconds access_flush_interval{1000};
  size_t access_flush_keys = 256;
  // Hit-path memo: what the index said about a key is reused for this long
  // without asking SQLite again (blobs are immutable, and a blob that is gone
  // sends the read back to the index). Another process's removal of an
  // artifact whose blobs are still stored can go unseen for up to this long;
  // this process's own changes are seen at once. 0: no memo.
  std::chrono::milliseconds memo_ttl{2000};
  size_t memo_entries = 4096;
  // What every read verifies. kFullHash (SHA-256 against the blob's name)
  // proves identity; kChecksum (XXH3) only that the file is intact, and
  // serves a valid blob file copied under another name. Measured in
  // docs/benchmarks.md ("Read verification"): SHA-256 adds ~1-2 us to a
  // metadata-only hit and ~0.5 ms per MiB read.
  ReadVerify read_verify = ReadVerify::kFullHash;
  // The background thread re-hashes (SHA-256) up to scrub_bytes_per_pass of
  // the least recently verified blobs every scrub_interval. 0: no scrub.
  std::chrono::seconds scrub_interval{0};
  uint64_t scrub_bytes_per_pass = 64ULL << 20;
  // Blob files that no index row names are removed by Gc once this old (a
  // younger one may belong to a put about to commit).
  int64_t orphan_grace_seconds = 3600;
  // fsync blobs and directories (off only for throwaway caches and tests).
  bool sync = true;
  // File kinds stored zstd-compressed (text compresses 4-10x; binaries are
  // kept raw so the hit path does no decompression).
  std::set<std::string> compressed_kinds = {"ptx", "source", "cuda_source", "hip_source",
                                            "cpp_source"};
  int zstd_level = 3;
  SqliteOptions sqlite;
  // A file of this size (<dir>/reserve) is kept so that, when the disk is
  // full, removals still find room for the index's writes: a removal that
  // fails with kExhausted deletes the reserve and retries, and the reserve
  // is recreated when space allows. 0: none.
  uint64_t reserve_bytes = 2ULL << 20;
  // CheckFreeSpace's floor: below this many bytes free on the cache's
  // filesystem, work that would end in a put (a compile) is refused before
  // it starts. 0: only a completely full disk.
  uint64_t min_free_bytes = 0;
  // Create the directory and index when missing.
  bool create = true;
  // Where warnings go (besides warnings()); default: stderr.
  std::function<void(const std::string&)> on_warning;
};

struct CacheStats {
  std::string dir;
  int schema_version = 0;
  int64_t artifacts = 0;
  int64_t blobs = 0;
  uint64_t blob_bytes = 0;
  // The index's files (with its -wal and -shm) and the reserve: counted with
  // blob_bytes against the limits.
  uint64_t overhead_bytes = 0;
  uint64_t soft_limit_bytes = 0;
  uint64_t hard_limit_bytes = 0;
  int64_t pinned_artifacts = 0;
  int64_t best_configs = 0;
  int64_t measurements = 0;
  // Since the cache was created (all processes), plus this process's
  // unflushed batch.
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t evictions = 0;
  int64_t corrupt_blobs = 0;
  // Artifacts whose sound bytes did not belong to their key (EvictMismatched).
  int64_t corrupt_artifacts = 0;
  std::vector<std::string> warnings;
};

struct GcOptions {
  // Evict down to this many bytes, counted as the limits are (blobs, plus
  // the index's files and the reserve unless limits_count_overhead is off;
  // default: the soft limit, or nothing when there is none). Pinned
  // artifacts are kept even if that leaves more.
  std::optional<uint64_t> max_size_bytes;
  // Remove unreferenced blob files and temps regardless of age (only safe
  // when no other process is writing).
  bool ignore_grace = false;
};

struct GcReport {
  uint64_t bytes_before = 0;
  uint64_t bytes_after = 0;
  int64_t evicted_artifacts = 0;
  int64_t removed_blobs = 0;   // unreferenced blob rows and their files
  int64_t removed_orphans = 0; // blob files without a row
  int64_t removed_temps = 0;
};

struct VerifyReport {
  int64_t checked_blobs = 0;
  uint64_t checked_bytes = 0;
  int64_t corrupt_blobs = 0; // found and removed, with the artifacts using them
  int64_t missing_blobs = 0; // rows whose file is gone
  int64_t evicted_artifacts = 0;
  int64_t orphan_files = 0; // files without a row (left for Gc)
  // Artifact rows whose manifest (a sound blob) names another key or other
  // files: evicted (Verify only; Scrub checks blobs).
  int64_t mismatched_artifacts = 0;
  std::string index_findings; // PRAGMA quick_check; empty when sound
  bool ok() const {
    return corrupt_blobs == 0 && missing_blobs == 0 && mismatched_artifacts == 0 &&
           index_findings.empty();
  }
};

struct RebuildReport {
  std::string moved_aside; // where the old index went ("" when there was none)
  int64_t blobs = 0;
  int64_t corrupt_blobs = 0; // failed SHA-256, removed
  int64_t artifacts = 0;
  int64_t best_configs = 0;
  int64_t incomplete_manifests = 0; // naming a blob that is gone
};

class Cache {
 public:
  static absl::StatusOr<std::unique_ptr<Cache>> Open(const std::string& dir,
                                                     CacheOptions options = {});
  // Flushes pending access times and stops the maintenance thread.
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // --- artifacts ---
  // The artifact with all its file bytes (digests filled in).
  absl::StatusOr<Artifact> GetArtifact(std::string_view key);
  // Only the files of `kinds` (all when empty): a caller that needs the
  // metadata reads no binary. The hit still counts (and refreshes LRU).
  absl::StatusOr<Artifact> GetArtifact(std::string_view key, const std::vector<std::string>& kinds);
  // Publishes (or replaces) the artifact for `key`: all or nothing.
  absl::Status PutArtifact(std::string_view key, const Artifact& artifact);
  absl::StatusOr<bool> ContainsArtifact(std::string_view key);
  // kNotFound when there is no such artifact.
  absl::Status RemoveArtifact(std::string_view key);
  // Most recently used first; limit <= 0: all.
  absl::StatusOr<std::vector<ArtifactSummary>> ListArtifacts(int64_t limit = 0);
  // For a reader above the cache that found `key`'s bytes sound (they match
  // their digests) but not `key`'s (its metadata file names another key or
  // other files: an index row pointing at another artifact's blobs). Evicts
  // `key`'s row if it still names `digest`; the blobs stay while another
  // artifact uses them, so nothing valid is lost. Counts corrupt_artifacts,
  // warns. OK when the row is gone or changed meanwhile.
  absl::Status EvictMismatched(std::string_view key, std::string_view digest, std::string_view why);
  // Changes whenever this process stores, removes or replaces an artifact
  // (a put, eviction, damage, RemoveArtifact, gc, verify). A reader
  // that keeps what it read (a hit memo) notes the value before reading and
  // trusts its copy only while the value is unchanged. Removals by other
  // processes are not seen here.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // --- best configs ---
  enum class BestUpdate {
    kReplace,
    // Store only when faster (lower median) than the stored one; the compare
    // and the write are one transaction.
    kIfFaster,
  };
  // Returns whether the value was stored.
  absl::StatusOr<bool> PutBest(const BestConfigKey& key, const BestConfig& value,
                               BestUpdate mode = BestUpdate::kReplace);
  absl::StatusOr<BestConfig> GetBest(const BestConfigKey& key);
  // Every device model's (and shape's) best for a program; "" lists all.
  absl::StatusOr<std::vector<std::pair<BestConfigKey, BestConfig>>>
  ListBest(const std::string& program_key);
  absl::Status RemoveBest(const BestConfigKey& key);

  // --- measurements ---
  absl::StatusOr<int64_t> RecordMeasurement(const Measurement& m);
  absl::StatusOr<std::vector<Measurement>> QueryMeasurements(const MeasurementQuery& q);
  absl::StatusOr<std::vector<std::string>> MeasurementLabels(const std::string& key);

  // --- job records (the daemon's; job_log.h) ---
  JobLog& jobs() { return jobs_; }

  // --- micro-benchmark results per device model (device_profile_log.h) ---
  DeviceProfileLog& device_profiles() { return device_profiles_; }

  // --- maintenance ---
  absl::StatusOr<CacheStats> Stats();
  absl::StatusOr<GcReport> Gc(const GcOptions& options = {});
  // Re-hashes every blob (SHA-256), removes damaged ones and the artifacts
  // using them, checks that every artifact row agrees with its manifest (its
  // key, its files' digests; EvictMismatched otherwise), and checks the index.
  absl::StatusOr<VerifyReport> Verify();
  // Re-hashes up to `max_bytes` of the least recently verified blobs.
  absl::StatusOr<VerifyReport> Scrub(uint64_t max_bytes);
  // Writes this process's batched access times and counters to the index.
  absl::Status FlushAccessTimes();
  // Evicts least recently used unpinned artifacts until blob bytes are at
  // most `target_bytes`; returns how many were evicted.
  absl::StatusOr<int64_t> EvictTo(uint64_t target_bytes);
  // Whether a put may find room on the disk now: kExhausted (naming the
  // directory, the free and the required bytes) when the filesystem has
  // less than min_free_bytes (or nothing) free; kIo when it cannot be asked.
  // Cheap (one statvfs): callers ask before expensive work, not per put.
  absl::Status CheckFreeSpace() const;

  // Reconstructs the index of `dir` from its blobs: the old index (if any)
  // is moved aside, every blob re-hashed, and artifacts and best configs
  // restored from their manifests. Measurements are not restored. Run it
  // while no other process uses the cache.
  static absl::StatusOr<RebuildReport> Rebuild(const std::string& dir, CacheOptions options = {});

  const std::string& dir() const { return dir_; }
  // Warnings found at open (network filesystem, ...).
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  Cache(std::string dir, CacheOptions options, std::unique_ptr<Index> index);

  absl::StatusOr<Artifact> ReadArtifact(const std::string& key,
                                        const std::vector<std::string>& kinds);
  absl::StatusOr<Artifact> ReadFrom(const std::string& key, const IndexedArtifact& indexed,
                                    bool from_memo, const std::vector<std::string>& kinds);
  std::shared_ptr<const IndexedArtifact> MemoGet(const std::string& key);
  void MemoPut(const std::string& key, std::shared_ptr<const IndexedArtifact> entry);
  void MemoDrop(const std::string& key);
  void MemoClear();
  // A blob of `key` was missing or damaged: evicts every artifact using it
  // (if it is still missing or damaged under the write lock) and counts it.
  absl::Status HandleBadBlob(const std::string& key, const std::string& digest,
                             const absl::Status& why);
  // Unlinks and forgets the blobs among `candidates` that nothing references
  // (all when null), under the write lock. Returns how many.
  absl::StatusOr<int64_t> SweepBlobs(const std::vector<std::string>* candidates);
  // Removes files this put created that no row names (after a failed put).
  void DiscardCreated(const std::vector<std::string>& created);
  absl::StatusOr<VerifyReport> VerifyBlobs(const std::vector<BlobInfo>& blobs);
  // Verify's second half: each artifact row against its manifest.
  absl::Status VerifyArtifactRows(VerifyReport& report);
  // Index::Write for removals: on kExhausted, frees the reserve and retries.
  absl::Status RemovalWrite(const std::function<absl::Status(IndexTxn&)>& fn);
  // Recreates the reserve file if it is missing (best effort).
  void RestoreReserve();
  // What the cache holds besides blobs: Index::FileBytes plus the reserve.
  uint64_t OverheadBytes() const;
  // OverheadBytes when the limits count it (limits_count_overhead), else 0.
  uint64_t LimitedOverheadBytes() const;
  // `total_bytes`: blobs plus OverheadBytes.
  void MaybeStartEviction(uint64_t total_bytes);
  void MaintenanceLoop();
  void Warn(const std::string& message);
  Compression CompressionFor(const std::string& kind) const;
  uint64_t HardLimit() const;

  const std::string dir_;
  const CacheOptions options_;
  BlobStore blobs_;
  std::unique_ptr<Index> index_;
  MeasurementLog measurements_;
  JobLog jobs_;
  DeviceProfileLog device_profiles_;
  AccessBatcher access_;
  std::vector<std::string> warnings_;

  struct MemoEntry {
    std::shared_ptr<const IndexedArtifact> artifact;
    std::chrono::steady_clock::time_point expires;
  };
  absl::Mutex memo_mu_;
  absl::flat_hash_map<std::string, MemoEntry> memo_ ABSL_GUARDED_BY(memo_mu_);
  // Bumped (after the index commit) by MemoDrop and MemoClear, which every
  // removal and replacement calls.
  std::atomic<uint64_t> generation_{0};

  // One eviction at a time in this process (others may run in other
  // processes; the index keeps them consistent).
  absl::Mutex evict_mu_;

  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool evict_requested_ ABSL_GUARDED_BY(mu_) = false;
  std::thread maintenance_;
};

} // namespace kiln::cache
