#include "cache/cache.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "cache/cache_error.h"
#include "cache/filesystem_check.h"
#include "cache/manifest.h"
#include "cache/schema.h"
#include "util/file_path.h"
#include "util/status_macros.h"

namespace kiln::cache {
namespace {

constexpr char kMarkerName[] = "kiln-cache.json";
constexpr char kIndexName[] = "index.sqlite";
constexpr int kPutAttempts = 4;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

absl::Status ValidateKey(std::string_view key, std::string_view what) {
  if (key.empty() || key.size() > 256) {
    return absl::InvalidArgumentError(absl::StrCat(AsAbsl(what), " must have 1 to 256 characters"));
  }
  for (char c : key) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '.' || c == '_' || c == '-' || c == ':';
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(AsAbsl(what), " '", AsAbsl(key),
                                                     "' has a character outside [A-Za-z0-9._:-]"));
    }
  }
  return absl::OkStatus();
}

// Writes `text` to `path` atomically (temp + rename).
absl::Status WriteFileAtomically(const std::string& path, const std::string& text, bool sync) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("create ", tmp));
  const ssize_t n = write(fd, text.data(), text.size());
  const int write_errno = errno;
  if (n != static_cast<ssize_t>(text.size()) || (sync && fsync(fd) != 0)) {
    const int err = n < 0 ? write_errno : (errno != 0 ? errno : EIO);
    close(fd);
    unlink(tmp.c_str());
    return ErrnoError(err, absl::StrCat("write ", tmp));
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return ErrnoError(err, absl::StrCat("rename ", tmp));
  }
  return absl::OkStatus();
}

// The message names the component in the way ("'x' exists and is not a
// folder", "folder 'x' is not writable (Permission denied)").
absl::Status EnsureDirectory(const std::string& dir) {
  absl::Status s = util::EnsureDirectory(dir);
  if (s.ok()) return s;
  return MakeError(s.code() == absl::StatusCode::kResourceExhausted ? CacheError::kExhausted
                                                                    : CacheError::kIo,
                   absl::StrCat(s.message()));
}

bool IsMissOrDamage(const absl::Status& s) {
  return s.code() == absl::StatusCode::kNotFound || s.code() == absl::StatusCode::kDataLoss;
}

// Size limits are part of the cache, not only of one process's options: an
// Open that sets them records them, and an Open that does not (the CLI)
// uses the recorded ones.
absl::Status ApplyStoredLimits(Index& index, CacheOptions& options) {
  int64_t stored_soft = 0;
  int64_t stored_hard = 0;
  RETURN_IF_ERROR(index.ReadOne([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(IndexCounts c, txn.Counts());
    stored_soft = c.counters["limit_soft_bytes"];
    stored_hard = c.counters["limit_hard_bytes"];
    return absl::OkStatus();
  }));
  if (options.max_size_bytes == 0 && options.hard_limit_bytes == 0) {
    options.max_size_bytes = static_cast<uint64_t>(stored_soft);
    options.hard_limit_bytes = static_cast<uint64_t>(stored_hard);
    return absl::OkStatus();
  }
  const auto soft = static_cast<int64_t>(options.max_size_bytes);
  const auto hard = static_cast<int64_t>(options.hard_limit_bytes);
  if (soft == stored_soft && hard == stored_hard) return absl::OkStatus();
  return index.Write([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(IndexCounts c, txn.Counts());
    RETURN_IF_ERROR(txn.AddCounter("limit_soft_bytes", soft - c.counters["limit_soft_bytes"]));
    return txn.AddCounter("limit_hard_bytes", hard - c.counters["limit_hard_bytes"]);
  });
}

// A put found, under the write lock, that a blob it relies on is gone.
constexpr char kVanished[] = "blob vanished before commit";

} // namespace

Cache::Cache(std::string dir, CacheOptions options, std::unique_ptr<Index> index)
    : dir_(std::move(dir)), options_(std::move(options)),
      blobs_(dir_ + "/blobs", BlobStoreOptions{options_.sync, options_.zstd_level}),
      index_(std::move(index)), measurements_(index_.get()), jobs_(index_.get()),
      device_profiles_(index_.get()),
      access_(options_.access_flush_keys, options_.access_flush_interval) {}

absl::StatusOr<std::unique_ptr<Cache>> Cache::Open(const std::string& dir, CacheOptions options) {
  if (dir.empty()) return absl::InvalidArgumentError("empty cache directory");
  if (options.create) {
    RETURN_IF_ERROR(EnsureDirectory(dir + "/blobs"));
  } else if (!Exists(dir)) {
    return MakeError(CacheError::kNotFound, absl::StrCat("no cache directory ", dir));
  }
  std::vector<std::string> warnings;
  absl::StatusOr<std::optional<std::string>> fs = DetectNetworkFilesystem(dir);
  if (fs.ok() && fs->has_value()) {
    warnings.push_back(absl::StrCat("cache directory ", dir, " is on a network filesystem (", **fs,
                                    "): SQLite's locking and atomic renames are unreliable "
                                    "there; keep the cache on a local disk"));
  }
  const std::string marker = absl::StrCat(dir, "/", kMarkerName);
  const std::string index_path = absl::StrCat(dir, "/", kIndexName);
  const bool has_marker = Exists(marker);
  if (!Exists(index_path)) {
    if (has_marker) {
      return MakeError(CacheError::kCorrupt,
                       absl::StrCat("cache index ", index_path,
                                    " is missing but the cache holds blobs; run `kiln cache "
                                    "rebuild --cache-dir ",
                                    dir, "` to reconstruct it"));
    }
    if (!options.create) {
      return MakeError(CacheError::kNotFound, absl::StrCat("no cache index in ", dir));
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Index> index,
                   Index::Open(index_path, options.create, options.sqlite));
  RETURN_IF_ERROR(ApplyStoredLimits(*index, options));
  if (!has_marker) {
    RETURN_IF_ERROR(WriteFileAtomically(
        marker,
        absl::StrCat("{\"kiln_cache_layout\": 1, \"schema_version\": ", kSchemaVersion, "}\n"),
        options.sync));
  }
  std::unique_ptr<Cache> cache(new Cache(dir, std::move(options), std::move(index)));
  for (const std::string& w : warnings) cache->Warn(w);
  cache->RestoreReserve();
  if (const uint64_t overhead = cache->LimitedOverheadBytes();
      cache->options_.max_size_bytes != 0 && overhead >= cache->options_.max_size_bytes) {
    cache->Warn(absl::StrCat("the cache's size limit of ", cache->options_.max_size_bytes,
                             " bytes is not above what its index and reserve file take (", overhead,
                             " bytes): everything but pinned entries will be evicted"));
  }
  if (cache->options_.background) {
    cache->maintenance_ = std::thread([c = cache.get()] { c->MaintenanceLoop(); });
  }
  return cache;
}

Cache::~Cache() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (maintenance_.joinable()) maintenance_.join();
  (void)FlushAccessTimes();
}

void Cache::Warn(const std::string& message) {
  warnings_.push_back(message);
  if (options_.on_warning) {
    options_.on_warning(message);
  } else {
    std::fprintf(stderr, "kiln cache: warning: %s\n", message.c_str());
  }
}

Compression Cache::CompressionFor(const std::string& kind) const {
  return options_.compressed_kinds.count(kind) != 0 ? Compression::kZstd : Compression::kNone;
}

uint64_t Cache::HardLimit() const {
  if (options_.hard_limit_bytes != 0) return options_.hard_limit_bytes;
  return options_.max_size_bytes + options_.max_size_bytes / 4;
}

// --- artifacts ---------------------------------------------------------------

absl::StatusOr<Artifact> Cache::GetArtifact(std::string_view key) { return GetArtifact(key, {}); }

absl::StatusOr<Artifact> Cache::GetArtifact(std::string_view key,
                                            const std::vector<std::string>& kinds) {
  RETURN_IF_ERROR(ValidateKey(key, "artifact key"));
  absl::StatusOr<Artifact> a = ReadArtifact(std::string(key), kinds);
  const bool due = a.ok()
                       ? access_.RecordHit(std::string(key), NowMs())
                       : (a.status().code() == absl::StatusCode::kNotFound && access_.RecordMiss());
  if (due && !options_.background) (void)FlushAccessTimes();
  return a;
}

absl::StatusOr<Artifact> Cache::ReadArtifact(const std::string& key,
                                             const std::vector<std::string>& kinds) {
  if (std::shared_ptr<const IndexedArtifact> memo = MemoGet(key)) {
    absl::StatusOr<Artifact> a = ReadFrom(key, *memo, /*from_memo=*/true, kinds);
    if (a.ok() || !IsMissOrDamage(a.status())) return a;
    MemoDrop(key); // stale: ask the index
  }
  std::optional<IndexedArtifact> indexed;
  RETURN_IF_ERROR(index_->ReadOne([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(indexed, txn.GetArtifact(key));
    return absl::OkStatus();
  }));
  if (!indexed.has_value()) {
    return MakeError(CacheError::kNotFound, absl::StrCat("no artifact for key ", key));
  }
  auto entry = std::make_shared<const IndexedArtifact>(*std::move(indexed));
  absl::StatusOr<Artifact> a = ReadFrom(key, *entry, /*from_memo=*/false, kinds);
  if (a.ok()) MemoPut(key, std::move(entry));
  return a;
}

absl::StatusOr<Artifact> Cache::ReadFrom(const std::string& key, const IndexedArtifact& indexed,
                                         bool from_memo, const std::vector<std::string>& kinds) {
  Artifact out = indexed.meta;
  std::vector<ArtifactFile> files;
  for (size_t i = 0; i < out.files.size(); ++i) {
    ArtifactFile& f = out.files[i];
    if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), f.kind) == kinds.end()) continue;
    absl::StatusOr<std::string> bytes =
        blobs_.Get(f.digest, options_.read_verify, indexed.file_sizes[i]);
    if (!bytes.ok()) {
      if (from_memo || !IsMissOrDamage(bytes.status())) return bytes.status();
      RETURN_IF_ERROR(HandleBadBlob(key, f.digest, bytes.status()));
      return MakeError(CacheError::kNotFound,
                       absl::StrCat("artifact ", key, " was damaged (its ", f.kind,
                                    " file: ", bytes.status().message(), ") and has been evicted"));
    }
    f.bytes = *std::move(bytes);
    files.push_back(std::move(f));
  }
  out.files = std::move(files);
  return out;
}

std::shared_ptr<const IndexedArtifact> Cache::MemoGet(const std::string& key) {
  if (options_.memo_ttl.count() <= 0) return nullptr;
  absl::ReaderMutexLock lock(&memo_mu_);
  auto it = memo_.find(key);
  if (it == memo_.end() || std::chrono::steady_clock::now() >= it->second.expires) return nullptr;
  return it->second.artifact;
}

void Cache::MemoPut(const std::string& key, std::shared_ptr<const IndexedArtifact> entry) {
  if (options_.memo_ttl.count() <= 0) return;
  absl::MutexLock lock(&memo_mu_);
  if (memo_.size() >= options_.memo_entries) memo_.clear();
  memo_[key] = {std::move(entry), std::chrono::steady_clock::now() + options_.memo_ttl};
}

void Cache::MemoDrop(const std::string& key) {
  {
    absl::MutexLock lock(&memo_mu_);
    memo_.erase(key);
  }
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

void Cache::MemoClear() {
  {
    absl::MutexLock lock(&memo_mu_);
    memo_.clear();
  }
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

absl::Status Cache::EvictMismatched(std::string_view key_view, std::string_view digest,
                                    std::string_view why) {
  RETURN_IF_ERROR(ValidateKey(key_view, "artifact key"));
  const std::string key(key_view);
  std::vector<std::string> displaced;
  bool evicted = false;
  RETURN_IF_ERROR(RemovalWrite([&](IndexTxn& txn) -> absl::Status {
    displaced.clear();
    evicted = false;
    ASSIGN_OR_RETURN(std::optional<IndexedArtifact> row, txn.GetArtifact(key));
    if (!row.has_value()) return absl::OkStatus();
    const bool names_it = row->manifest_digest == digest ||
                          std::any_of(row->meta.files.begin(), row->meta.files.end(),
                                      [&](const ArtifactFile& f) { return f.digest == digest; });
    if (!names_it) return absl::OkStatus(); // replaced meanwhile
    ASSIGN_OR_RETURN(displaced, txn.DeleteArtifact(key));
    evicted = true;
    return txn.AddCounter("corrupt_artifacts", 1);
  }));
  MemoDrop(key);
  if (evicted) {
    Warn(absl::StrCat("artifact ", key, " was evicted: its blob ", AsAbsl(digest),
                      " is sound but not this artifact's (", AsAbsl(why), ")"));
  }
  if (!displaced.empty()) (void)SweepBlobs(&displaced);
  return absl::OkStatus();
}

absl::Status Cache::HandleBadBlob(const std::string& key, const std::string& digest,
                                  const absl::Status& why) {
  std::vector<std::string> displaced;
  int64_t evicted = 0;
  bool repaired_records = false;
  RETURN_IF_ERROR(RemovalWrite([&](IndexTxn& txn) -> absl::Status {
    displaced.clear();
    evicted = 0;
    repaired_records = false;
    ASSIGN_OR_RETURN(std::vector<std::string> users, txn.ArtifactsUsingBlob(digest));
    if (!key.empty() && std::find(users.begin(), users.end(), key) == users.end()) {
      return absl::OkStatus(); // removed meanwhile: a plain miss
    }
    // Recheck under the lock: a concurrent put may have replaced the file.
    if (blobs_.Get(digest, ReadVerify::kFullHash).ok()) return absl::OkStatus();
    for (const std::string& user : users) {
      ASSIGN_OR_RETURN(std::vector<std::string> d, txn.DeleteArtifact(user));
      displaced.insert(displaced.end(), d.begin(), d.end());
      ++evicted;
    }
    // A best config's record is rewritten from its row rather than lost.
    bool rewrote_in_place = false;
    ASSIGN_OR_RETURN(auto bests, txn.BestUsingRecord(digest));
    for (const auto& [k, v] : bests) {
      ASSIGN_OR_RETURN(BlobPutResult r,
                       blobs_.Put(EncodeBestConfigRecord(k, v), Compression::kNone, true));
      if (r.info.digest == digest) {
        rewrote_in_place = true;
      } else {
        RETURN_IF_ERROR(txn.InsertBlob(r.info, NowMs()).status());
        RETURN_IF_ERROR(txn.ReplaceBestRecord(digest, r.info.digest));
      }
      repaired_records = true;
    }
    if (!rewrote_in_place) {
      RETURN_IF_ERROR(txn.DeleteBlob(digest));
      absl::Status rm = blobs_.Remove(digest);
      if (!rm.ok() && rm.code() != absl::StatusCode::kNotFound) return rm;
    }
    RETURN_IF_ERROR(txn.AddCounter("corrupt_blobs", 1));
    return absl::OkStatus();
  }));
  if (evicted > 0 || repaired_records) {
    Warn(absl::StrCat("blob ", digest, " failed verification (", why.message(), "); evicted ",
                      evicted, " artifact(s)",
                      repaired_records ? ", rewrote its best config" : ""));
  }
  MemoClear();
  if (!displaced.empty()) (void)SweepBlobs(&displaced);
  return absl::OkStatus();
}

absl::Status Cache::PutArtifact(std::string_view key_view, const Artifact& artifact) {
  RETURN_IF_ERROR(ValidateKey(key_view, "artifact key"));
  const std::string key(key_view);
  absl::flat_hash_set<std::string> kinds;
  for (const ArtifactFile& f : artifact.files) {
    RETURN_IF_ERROR(ValidateKey(f.kind, "artifact file kind"));
    if (!kinds.insert(f.kind).second) {
      return absl::InvalidArgumentError(absl::StrCat("artifact has two '", f.kind, "' files"));
    }
  }
  // The metadata copy that the index and the manifest describe (no bytes).
  Artifact meta;
  meta.target = artifact.target;
  meta.toolchain_fingerprint = artifact.toolchain_fingerprint;
  meta.launch_json = artifact.launch_json;
  meta.timings = artifact.timings;
  meta.created_unix_ms = artifact.created_unix_ms != 0 ? artifact.created_unix_ms : NowMs();

  for (int attempt = 0; attempt < kPutAttempts; ++attempt) {
    std::vector<std::string> created;
    std::vector<BlobInfo> infos;
    meta.files.clear();
    uint64_t total_size = 0;
    for (const ArtifactFile& f : artifact.files) {
      absl::StatusOr<BlobPutResult> r = blobs_.Put(f.bytes, CompressionFor(f.kind));
      if (!r.ok()) {
        DiscardCreated(created);
        return r.status();
      }
      if (r->created) created.push_back(r->info.digest);
      meta.files.push_back({f.kind, "", r->info.digest, f.bytes.size()});
      total_size += r->info.file_size;
      infos.push_back(r->info);
    }
    absl::StatusOr<BlobPutResult> m =
        blobs_.Put(EncodeArtifactManifest(key, meta), Compression::kNone, /*record=*/true);
    if (!m.ok()) {
      DiscardCreated(created);
      return m.status();
    }
    if (m->created) created.push_back(m->info.digest);
    infos.push_back(m->info);
    total_size += m->info.file_size;

    std::vector<std::string> displaced;
    uint64_t total_after = 0;
    const int64_t now = NowMs();
    const uint64_t hard = HardLimit();
    const uint64_t overhead = LimitedOverheadBytes(); // the index and the reserve count too
    absl::Status s = index_->Write([&](IndexTxn& txn) -> absl::Status {
      displaced.clear();
      for (const BlobInfo& info : infos) {
        // Under the write lock no sweep can run: a file that exists now
        // stays until after this commit.
        if (!blobs_.Contains(info.digest)) return absl::AbortedError(kVanished);
        RETURN_IF_ERROR(txn.InsertBlob(info, now).status());
      }
      ASSIGN_OR_RETURN(displaced, txn.DeleteArtifact(key));
      RETURN_IF_ERROR(txn.InsertArtifact(key, meta, m->info.digest, total_size, now));
      ASSIGN_OR_RETURN(total_after, txn.TotalBytes());
      total_after += overhead;
      if (hard != 0 && total_after > hard) {
        return MakeError(CacheError::kExhausted,
                         absl::StrCat("cache is full: storing ", key, " would make ", total_after,
                                      " bytes, over the hard limit of ", hard,
                                      " bytes; eviction is running, retry later"));
      }
      return absl::OkStatus();
    });
    if (s.code() == absl::StatusCode::kAborted && s.message() == kVanished) continue;
    if (!s.ok()) {
      DiscardCreated(created);
      if (s.code() == absl::StatusCode::kResourceExhausted) MaybeStartEviction(hard + 1);
      return s;
    }
    MemoDrop(key);
    if (!displaced.empty()) (void)SweepBlobs(&displaced);
    MaybeStartEviction(total_after);
    return absl::OkStatus();
  }
  return MakeError(CacheError::kIo,
                   absl::StrCat("storing ", key, ": its blobs kept being removed concurrently"));
}

void Cache::DiscardCreated(const std::vector<std::string>& created) {
  if (created.empty()) return;
  (void)index_->Write([&](IndexTxn& txn) -> absl::Status {
    for (const std::string& d : created) {
      ASSIGN_OR_RETURN(bool has_row, txn.HasBlob(d));
      if (!has_row) (void)blobs_.Remove(d);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<bool> Cache::ContainsArtifact(std::string_view key) {
  RETURN_IF_ERROR(ValidateKey(key, "artifact key"));
  bool found = false;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(Statement st, txn.db().Prepare("SELECT 1 FROM artifacts WHERE key = ?1"));
    st.Bind(1, key);
    ASSIGN_OR_RETURN(found, st.Step());
    return absl::OkStatus();
  }));
  return found;
}

absl::Status Cache::RemoveArtifact(std::string_view key_view) {
  RETURN_IF_ERROR(ValidateKey(key_view, "artifact key"));
  const std::string key(key_view);
  std::vector<std::string> displaced;
  RETURN_IF_ERROR(RemovalWrite([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(displaced, txn.DeleteArtifact(key));
    return absl::OkStatus();
  }));
  MemoDrop(key);
  if (displaced.empty()) {
    return MakeError(CacheError::kNotFound, absl::StrCat("no artifact for key ", key));
  }
  return SweepBlobs(&displaced).status();
}

absl::StatusOr<std::vector<ArtifactSummary>> Cache::ListArtifacts(int64_t limit) {
  RETURN_IF_ERROR(FlushAccessTimes());
  std::vector<ArtifactSummary> out;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(out, txn.ListArtifacts(limit));
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<int64_t> Cache::SweepBlobs(const std::vector<std::string>* candidates) {
  int64_t removed = 0;
  RETURN_IF_ERROR(RemovalWrite([&](IndexTxn& txn) -> absl::Status {
    removed = 0;
    ASSIGN_OR_RETURN(std::vector<std::string> gone, txn.Unreferenced(candidates));
    for (const std::string& d : gone) {
      absl::Status rm = blobs_.Remove(d);
      if (!rm.ok() && rm.code() != absl::StatusCode::kNotFound) return rm;
      RETURN_IF_ERROR(txn.DeleteBlob(d));
      ++removed;
    }
    return absl::OkStatus();
  }));
  return removed;
}

absl::Status Cache::RemovalWrite(const std::function<absl::Status(IndexTxn&)>& fn) {
  absl::Status s = index_->Write(fn);
  if (s.code() != absl::StatusCode::kResourceExhausted || options_.reserve_bytes == 0) return s;
  if (unlink((dir_ + "/reserve").c_str()) != 0) return s;
  return index_->Write(fn);
}

void Cache::RestoreReserve() {
  if (options_.reserve_bytes == 0) return;
  const std::string path = dir_ + "/reserve";
  if (Exists(path)) return;
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const bool ok = posix_fallocate(fd, 0, static_cast<off_t>(options_.reserve_bytes)) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) unlink(tmp.c_str());
}

// --- best configs ------------------------------------------------------------

absl::StatusOr<bool> Cache::PutBest(const BestConfigKey& key, const BestConfig& value_in,
                                    BestUpdate mode) {
  if (key.program_key.empty() || key.target.empty() || key.device_model.empty()) {
    return absl::InvalidArgumentError("a best config needs a program key, target and device model");
  }
  BestConfig value = value_in;
  if (value.updated_unix_ms == 0) value.updated_unix_ms = NowMs();
  for (int attempt = 0; attempt < kPutAttempts; ++attempt) {
    ASSIGN_OR_RETURN(BlobPutResult r, blobs_.Put(EncodeBestConfigRecord(key, value),
                                                 Compression::kNone, /*record=*/true));
    std::vector<std::string> created;
    if (r.created) created.push_back(r.info.digest);
    bool stored = false;
    std::string old_digest;
    absl::Status s = index_->Write([&](IndexTxn& txn) -> absl::Status {
      stored = false;
      old_digest.clear();
      ASSIGN_OR_RETURN(auto existing, txn.GetBest(key));
      if (existing.has_value()) {
        if (mode == BestUpdate::kIfFaster &&
            existing->first.latency.median_us <= value.latency.median_us) {
          return absl::OkStatus();
        }
        old_digest = existing->second;
      }
      if (!blobs_.Contains(r.info.digest)) return absl::AbortedError(kVanished);
      RETURN_IF_ERROR(txn.InsertBlob(r.info, NowMs()).status());
      RETURN_IF_ERROR(txn.PutBest(key, value, r.info.digest));
      stored = true;
      return absl::OkStatus();
    });
    if (s.code() == absl::StatusCode::kAborted && s.message() == kVanished) continue;
    if (!s.ok() || !stored) DiscardCreated(created);
    RETURN_IF_ERROR(s);
    if (!old_digest.empty() && old_digest != r.info.digest) {
      std::vector<std::string> candidates = {old_digest};
      (void)SweepBlobs(&candidates);
    }
    return stored;
  }
  return MakeError(CacheError::kIo, "storing a best config: its record kept being removed");
}

absl::StatusOr<BestConfig> Cache::GetBest(const BestConfigKey& key) {
  std::optional<std::pair<BestConfig, std::string>> found;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(found, txn.GetBest(key));
    return absl::OkStatus();
  }));
  if (!found.has_value()) {
    return MakeError(CacheError::kNotFound,
                     absl::StrCat("no best config for ", key.program_key, " [", key.shape, "] on ",
                                  key.target, " / ", key.device_model));
  }
  return std::move(found->first);
}

absl::StatusOr<std::vector<std::pair<BestConfigKey, BestConfig>>>
Cache::ListBest(const std::string& program_key) {
  std::vector<std::pair<BestConfigKey, BestConfig>> out;
  RETURN_IF_ERROR(index_->Read([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(out, txn.ListBest(program_key));
    return absl::OkStatus();
  }));
  return out;
}

absl::Status Cache::RemoveBest(const BestConfigKey& key) {
  std::string record;
  bool removed = false;
  RETURN_IF_ERROR(index_->Write([&](IndexTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(removed, txn.RemoveBest(key, &record));
    return absl::OkStatus();
  }));
  if (!removed) {
    return MakeError(CacheError::kNotFound, absl::StrCat("no best config for ", key.program_key));
  }
  std::vector<std::string> candidates = {record};
  return SweepBlobs(&candidates).status();
}

// --- measurements ------------------------------------------------------------

absl::StatusOr<int64_t> Cache::RecordMeasurement(const Measurement& m) {
  if (m.key.empty()) return absl::InvalidArgumentError("a measurement needs a key");
  return measurements_.Record(m);
}

absl::StatusOr<std::vector<Measurement>> Cache::QueryMeasurements(const MeasurementQuery& q) {
  return measurements_.Query(q);
}

absl::StatusOr<std::vector<std::string>> Cache::MeasurementLabels(const std::string& key) {
  return measurements_.Labels(key);
}

} // namespace kiln::cache
