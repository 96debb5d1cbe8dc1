// Cache maintenance: access-time flushes, eviction, garbage collection,
// verification, scrubbing, the background thread and index rebuilds. The
// ordering rules these follow are in cache.h.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <variant>

#include <sys/stat.h>
#include <unistd.h>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "cache/cache.h"
#include "cache/cache_error.h"
#include "cache/filesystem_check.h"
#include "cache/manifest.h"
#include "cache/schema.h"
#include "util/status_macros.h"

namespace kiln::cache {
namespace {

constexpr int64_t kEvictBatch = 64;
constexpr size_t kFilesPerTxn = 256;

bool IsMissOrDamage(const absl::Status& s) {
  return s.code() == absl::StatusCode::kNotFound || s.code() == absl::StatusCode::kDataLoss;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

absl::Status Cache::FlushAccessTimes() {
  AccessBatch batch = access_.Take();
  if (batch.empty()) return absl::OkStatus();
  absl::Status s = index_->Write([&](IndexTxn& txn) -> absl::Status {
    RETURN_IF_ERROR(txn.Touch(batch.last_access_ms));
    RETURN_IF_ERROR(txn.AddCounter("hits", batch.hits));
    return txn.AddCounter("misses", batch.misses);
  });
  if (!s.ok()) access_.Restore(batch);
  return s;
}

absl::StatusOr<int64_t> Cache::EvictTo(uint64_t target_bytes) {
  absl::MutexLock lock(&evict_mu_);
  (void)FlushAccessTimes();
  int64_t evicted = 0;
  // A WAL that has grown (a burst of writes, a long reader) keeps its size
  // until a truncating checkpoint: shrink it before giving up blobs for it.
  // Best effort: a busy index is checkpointed by a later call.
  (void)index_->Checkpoint();
  while (true) {
    std::vector<std::string> displaced;
    bool done = false;
    int64_t batch = 0;
    // The index's files and the reserve count against the limit too.
    const uint64_t overhead = LimitedOverheadBytes();
    RETURN_IF_ERROR(RemovalWrite([&](IndexTxn& txn) -> absl::Status {
      displaced.clear();
      done = false;
      batch = 0;
      ASSIGN_OR_RETURN(uint64_t blob_bytes, txn.TotalBytes());
      const uint64_t total = blob_bytes + overhead;
      if (total <= target_bytes) {
        done = true;
        return absl::OkStatus();
      }
      ASSIGN_OR_RETURN(std::vector<LruEntry> lru, txn.LruCandidates(kEvictBatch));
      if (lru.empty()) {
        done = true; // everything left is pinned
        return absl::OkStatus();
      }
      uint64_t freed = 0;
      for (const LruEntry& e : lru) {
        ASSIGN_OR_RETURN(std::vector<std::string> d, txn.DeleteArtifact(e.key));
        displaced.insert(displaced.end(), d.begin(), d.end());
        ++batch;
        freed += e.total_size;
        if (total - std::min(total, freed) <= target_bytes) break;
      }
      return txn.AddCounter("evictions", batch);
    }));
    evicted += batch;
    if (batch > 0) MemoClear();
    // Shared blobs may keep some bytes: the loop rechecks the total.
    if (!displaced.empty()) RETURN_IF_ERROR(SweepBlobs(&displaced).status());
    if (done) break;
  }
  RestoreReserve();
  return evicted;
}

absl::Status Cache::CheckFreeSpace() const {
  ASSIGN_OR_RETURN(uint64_t available, AvailableBytes(dir_));
  if (available > 0 && available >= options_.min_free_bytes) return absl::OkStatus();
  return MakeError(CacheError::kExhausted,
                   absl::StrCat("the filesystem of cache directory ", dir_, " has ", available,
                                " bytes free, under the ", options_.min_free_bytes,
                                " bytes it must keep free"));
}

uint64_t Cache::LimitedOverheadBytes() const {
  return options_.limits_count_overhead ? OverheadBytes() : 0;
}

uint64_t Cache::OverheadBytes() const {
  uint64_t bytes = index_->FileBytes();
  struct stat st {};
  if (options_.reserve_bytes != 0 && stat((dir_ + "/reserve").c_str(), &st) == 0) {
    bytes += static_cast<uint64_t>(st.st_size);
  }
  return bytes;
}

void Cache::MaybeStartEviction(uint64_t total_bytes) {
  if (options_.max_size_bytes == 0 || total_bytes <= options_.max_size_bytes) return;
  const auto target = static_cast<uint64_t>(static_cast<double>(options_.max_size_bytes) *
                                            options_.evict_to_fraction);
  if (options_.background) {
    absl::MutexLock lock(&mu_);
    evict_requested_ = true;
    return;
  }
  (void)EvictTo(target);
}

void Cache::MaintenanceLoop() {
  auto next_scrub = std::chrono::steady_clock::now() + options_.scrub_interval;
  while (true) {
    bool evict = false;
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || evict_requested_; };
      mu_.AwaitWithTimeout(absl::Condition(&wake),
                           absl::Milliseconds(options_.access_flush_interval.count()));
      if (stop_) return;
      evict = evict_requested_;
      evict_requested_ = false;
    }
    if (access_.Due(AccessBatcher::Clock::now())) (void)FlushAccessTimes();
    if (evict) {
      (void)EvictTo(static_cast<uint64_t>(static_cast<double>(options_.max_size_bytes) *
                                          options_.evict_to_fraction));
    }
    if (options_.scrub_interval.count() > 0 && std::chrono::steady_clock::now() >= next_scrub) {
      (void)Scrub(options_.scrub_bytes_per_pass);
      next_scrub = std::chrono::steady_clock::now() + options_.scrub_interval;
    }
  }
}

absl::StatusOr<CacheStats> Cache::Stats() {
  (void)FlushAccessTimes();
  CacheStats stats;
  IndexCounts counts;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(counts, txn.Counts());
    ASSIGN_OR_RETURN(stats.schema_version, SchemaVersion(txn.db()));
    return absl::OkStatus();
  }));
  stats.dir = dir_;
  stats.artifacts = counts.artifacts;
  stats.blobs = counts.blobs;
  stats.blob_bytes = counts.blob_bytes;
  stats.overhead_bytes = OverheadBytes();
  stats.soft_limit_bytes = options_.max_size_bytes;
  stats.hard_limit_bytes =
      options_.max_size_bytes == 0 && options_.hard_limit_bytes == 0 ? 0 : HardLimit();
  stats.pinned_artifacts = counts.pinned_artifacts;
  stats.best_configs = counts.best_configs;
  stats.measurements = counts.measurements;
  stats.hits = counts.counters["hits"];
  stats.misses = counts.counters["misses"];
  stats.evictions = counts.counters["evictions"];
  stats.corrupt_blobs = counts.counters["corrupt_blobs"];
  stats.corrupt_artifacts = counts.counters["corrupt_artifacts"];
  stats.warnings = warnings_;
  return stats;
}

absl::StatusOr<GcReport> Cache::Gc(const GcOptions& gc) {
  GcReport report;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(report.bytes_before, txn.TotalBytes());
    return absl::OkStatus();
  }));
  std::optional<uint64_t> target = gc.max_size_bytes;
  if (!target.has_value() && options_.max_size_bytes != 0) {
    target = static_cast<uint64_t>(static_cast<double>(options_.max_size_bytes) *
                                   options_.evict_to_fraction);
  }
  if (target.has_value()) {
    ASSIGN_OR_RETURN(report.evicted_artifacts, EvictTo(*target));
  }
  ASSIGN_OR_RETURN(report.removed_blobs, SweepBlobs(nullptr));

  // Files without a row: a crashed put's, or a put about to commit (hence
  // the grace period). Checked and removed under the write lock.
  const int64_t grace = gc.ignore_grace ? 0 : options_.orphan_grace_seconds;
  std::vector<std::string> files;
  RETURN_IF_ERROR(blobs_.ForEach([&](const std::string& d) { files.push_back(d); }));
  for (size_t begin = 0; begin < files.size(); begin += kFilesPerTxn) {
    const size_t end = std::min(files.size(), begin + kFilesPerTxn);
    int64_t removed = 0;
    RETURN_IF_ERROR(index_->Write([&](IndexTxn& txn) -> absl::Status {
      removed = 0;
      for (size_t i = begin; i < end; ++i) {
        ASSIGN_OR_RETURN(bool has_row, txn.HasBlob(files[i]));
        if (has_row) continue;
        absl::StatusOr<int64_t> age = blobs_.AgeSeconds(files[i]);
        if (!age.ok() || *age < grace) continue;
        if (blobs_.Remove(files[i]).ok()) ++removed;
      }
      return absl::OkStatus();
    }));
    report.removed_orphans += removed;
  }
  ASSIGN_OR_RETURN(int temps, blobs_.RemoveStaleTemps(grace));
  report.removed_temps = temps;
  RestoreReserve();
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(report.bytes_after, txn.TotalBytes());
    return absl::OkStatus();
  }));
  return report;
}

absl::StatusOr<VerifyReport> Cache::VerifyBlobs(const std::vector<BlobInfo>& blobs) {
  VerifyReport report;
  std::vector<std::string> verified;
  for (const BlobInfo& b : blobs) {
    absl::StatusOr<std::string> bytes = blobs_.Get(b.digest, ReadVerify::kFullHash, b.file_size);
    if (bytes.ok()) {
      ++report.checked_blobs;
      report.checked_bytes += b.file_size;
      verified.push_back(b.digest);
      continue;
    }
    if (!IsMissOrDamage(bytes.status())) return bytes.status();
    // A row nothing references, whose file is gone or damaged, is what an
    // interrupted sweep leaves (file unlinked, row not yet deleted): finish
    // the sweep. Rows removed since the listing are skipped.
    bool has_row = false;
    bool unreferenced = false;
    RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
      ASSIGN_OR_RETURN(has_row, txn.HasBlob(b.digest));
      const std::vector<std::string> one = {b.digest};
      ASSIGN_OR_RETURN(std::vector<std::string> u, txn.Unreferenced(&one));
      unreferenced = !u.empty();
      return absl::OkStatus();
    }));
    if (!has_row) continue;
    if (unreferenced) {
      const std::vector<std::string> one = {b.digest};
      RETURN_IF_ERROR(SweepBlobs(&one).status());
      continue;
    }
    if (bytes.status().code() == absl::StatusCode::kNotFound) {
      ++report.missing_blobs;
    } else {
      ++report.corrupt_blobs;
    }
    int64_t users = 0;
    RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
      ASSIGN_OR_RETURN(std::vector<std::string> u, txn.ArtifactsUsingBlob(b.digest));
      users = static_cast<int64_t>(u.size());
      return absl::OkStatus();
    }));
    report.evicted_artifacts += users;
    RETURN_IF_ERROR(HandleBadBlob("", b.digest, bytes.status()));
  }
  // Bookkeeping for Scrub's order; best effort (a full disk must not turn a
  // clean verify into an error).
  const int64_t now = NowMs();
  for (size_t begin = 0; begin < verified.size(); begin += kFilesPerTxn) {
    const size_t end = std::min(verified.size(), begin + kFilesPerTxn);
    absl::Status s = index_->Write([&](IndexTxn& txn) -> absl::Status {
      for (size_t i = begin; i < end; ++i) RETURN_IF_ERROR(txn.SetVerified(verified[i], now));
      return absl::OkStatus();
    });
    if (!s.ok()) break;
  }
  return report;
}

absl::Status Cache::VerifyArtifactRows(VerifyReport& report) {
  std::vector<ArtifactSummary> keys;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(keys, txn.ListArtifacts(0));
    return absl::OkStatus();
  }));
  for (const ArtifactSummary& k : keys) {
    std::optional<IndexedArtifact> row;
    RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
      ASSIGN_OR_RETURN(row, txn.GetArtifact(k.key));
      return absl::OkStatus();
    }));
    if (!row.has_value()) continue; // removed meanwhile
    // VerifyBlobs has just proven (or removed) the manifest: a read that
    // fails now is a concurrent removal, not this check's business.
    absl::StatusOr<std::string> bytes = blobs_.Get(row->manifest_digest, ReadVerify::kFullHash);
    if (!bytes.ok()) continue;
    absl::StatusOr<std::variant<ArtifactManifest, BestConfigRecord>> record = DecodeRecord(*bytes);
    std::string why;
    if (!record.ok() || !std::holds_alternative<ArtifactManifest>(*record)) {
      why = "its manifest blob is not an artifact manifest";
    } else {
      const ArtifactManifest& m = std::get<ArtifactManifest>(*record);
      std::map<std::string, std::string> listed;
      std::map<std::string, std::string> indexed;
      for (const ArtifactFile& f : m.artifact.files) listed[f.kind] = f.digest;
      for (const ArtifactFile& f : row->meta.files) indexed[f.kind] = f.digest;
      if (m.key != k.key) {
        why = absl::StrCat("its manifest names the key ", m.key);
      } else if (listed != indexed) {
        why = "its files are not the ones its manifest lists";
      }
    }
    if (why.empty()) continue;
    ++report.mismatched_artifacts;
    ++report.evicted_artifacts;
    RETURN_IF_ERROR(EvictMismatched(k.key, row->manifest_digest, why));
  }
  return absl::OkStatus();
}

absl::StatusOr<VerifyReport> Cache::Verify() {
  std::vector<BlobInfo> rows;
  std::string findings;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(findings, txn.QuickCheck());
    ASSIGN_OR_RETURN(rows, txn.AllBlobs());
    return absl::OkStatus();
  }));
  ASSIGN_OR_RETURN(VerifyReport report, VerifyBlobs(rows));
  RETURN_IF_ERROR(VerifyArtifactRows(report));
  report.index_findings = findings;
  absl::flat_hash_set<std::string> known;
  for (const BlobInfo& b : rows) known.insert(b.digest);
  RETURN_IF_ERROR(blobs_.ForEach([&](const std::string& d) {
    if (!known.contains(d)) ++report.orphan_files;
  }));
  return report;
}

absl::StatusOr<VerifyReport> Cache::Scrub(uint64_t max_bytes) {
  std::vector<BlobInfo> rows;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(rows, txn.ScrubCandidates(4096));
    return absl::OkStatus();
  }));
  uint64_t bytes = 0;
  size_t n = 0;
  while (n < rows.size() && (n == 0 || bytes + rows[n].file_size <= max_bytes)) {
    bytes += rows[n].file_size;
    ++n;
  }
  rows.resize(n);
  return VerifyBlobs(rows);
}

absl::StatusOr<RebuildReport> Cache::Rebuild(const std::string& dir, CacheOptions options) {
  RebuildReport report;
  const std::string index_path = dir + "/index.sqlite";
  if (access(dir.c_str(), F_OK) != 0) {
    return MakeError(CacheError::kNotFound, absl::StrCat("no cache directory ", dir));
  }
  if (access(index_path.c_str(), F_OK) == 0) {
    report.moved_aside = absl::StrCat(index_path, ".broken-", NowMs());
    if (rename(index_path.c_str(), report.moved_aside.c_str()) != 0) {
      return ErrnoError(errno, absl::StrCat("move ", index_path, " aside"));
    }
  }
  // A WAL or shared-memory file of the old index must not be replayed into
  // the new one.
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::string p = index_path + suffix;
    if (access(p.c_str(), F_OK) != 0) continue;
    const std::string to = report.moved_aside.empty() ? absl::StrCat(p, ".broken-", NowMs())
                                                      : report.moved_aside + suffix;
    if (rename(p.c_str(), to.c_str()) != 0) return ErrnoError(errno, absl::StrCat("move ", p));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Index> index, Index::Open(index_path, true, options.sqlite));
  BlobStore store(dir + "/blobs", BlobStoreOptions{options.sync, options.zstd_level});
  std::vector<std::string> digests;
  RETURN_IF_ERROR(store.ForEach([&](const std::string& d) { digests.push_back(d); }));

  std::map<std::string, std::pair<ArtifactManifest, std::string>> artifacts; // newest per key
  std::map<std::tuple<std::string, std::string, std::string, std::string>,
           std::pair<BestConfigRecord, std::string>>
      bests;
  const int64_t now = NowMs();
  RETURN_IF_ERROR(index->Write([&](IndexTxn& txn) -> absl::Status {
    report.blobs = 0;
    report.corrupt_blobs = 0;
    artifacts.clear();
    bests.clear();
    for (const std::string& d : digests) {
      absl::StatusOr<std::string> bytes = store.Get(d, ReadVerify::kFullHash);
      absl::StatusOr<BlobInfo> info = store.Stat(d);
      if (!bytes.ok() || !info.ok()) {
        if (bytes.status().code() == absl::StatusCode::kDataLoss ||
            info.status().code() == absl::StatusCode::kDataLoss) {
          ++report.corrupt_blobs;
          (void)store.Remove(d);
        }
        continue;
      }
      ++report.blobs;
      RETURN_IF_ERROR(txn.InsertBlob(*info, now).status());
      if (!info->record) continue;
      absl::StatusOr<std::variant<ArtifactManifest, BestConfigRecord>> rec = DecodeRecord(*bytes);
      if (!rec.ok()) continue;
      if (auto* m = std::get_if<ArtifactManifest>(&*rec)) {
        const std::string key = m->key;
        auto it = artifacts.find(key);
        if (it == artifacts.end() ||
            it->second.first.artifact.created_unix_ms < m->artifact.created_unix_ms) {
          artifacts[key] = {std::move(*m), d};
        }
      } else {
        auto& r = std::get<BestConfigRecord>(*rec);
        auto k = std::make_tuple(r.key.program_key, r.key.shape, r.key.target, r.key.device_model);
        auto it = bests.find(k);
        if (it == bests.end() || it->second.first.value.updated_unix_ms < r.value.updated_unix_ms) {
          bests[k] = {std::move(r), d};
        }
      }
    }
    report.artifacts = 0;
    report.incomplete_manifests = 0;
    for (auto& [key, entry] : artifacts) {
      const ArtifactManifest& m = entry.first;
      uint64_t total = 0;
      bool complete = true;
      for (const ArtifactFile& f : m.artifact.files) {
        absl::StatusOr<BlobInfo> info = store.Stat(f.digest);
        ASSIGN_OR_RETURN(bool has_row, txn.HasBlob(f.digest));
        if (!info.ok() || !has_row) {
          complete = false;
          break;
        }
        total += info->file_size;
      }
      if (!complete) {
        ++report.incomplete_manifests;
        continue;
      }
      ASSIGN_OR_RETURN(BlobInfo minfo, store.Stat(entry.second));
      RETURN_IF_ERROR(
          txn.InsertArtifact(key, m.artifact, entry.second, total + minfo.file_size, now));
      ++report.artifacts;
    }
    report.best_configs = 0;
    for (auto& [k, entry] : bests) {
      RETURN_IF_ERROR(txn.PutBest(entry.first.key, entry.first.value, entry.second));
      ++report.best_configs;
    }
    return absl::OkStatus();
  }));
  options.background = false;
  options.create = false;
  index.reset();
  ASSIGN_OR_RETURN(std::unique_ptr<Cache> cache, Open(dir, std::move(options)));
  // Blobs that no restored entry names (superseded records, files of
  // incomplete artifacts) go now: nothing else uses the cache during a
  // rebuild.
  RETURN_IF_ERROR(cache->SweepBlobs(nullptr).status());
  RETURN_IF_ERROR(cache->blobs_.RemoveStaleTemps(0).status());
  return report;
}

} // namespace kiln::cache
