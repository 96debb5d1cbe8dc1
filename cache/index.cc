#include "cache/index.h"

#include <utility>

#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cache/schema.h"
#include "util/status_macros.h"

namespace kiln::cache {
namespace {

// A blob is referenced when an artifact file, an artifact manifest or a best
// config record names it.
constexpr char kReferenced[] = "(EXISTS (SELECT 1 FROM artifact_files f WHERE f.digest = ?1) OR "
                               "EXISTS (SELECT 1 FROM artifacts a WHERE a.manifest_digest = ?1) OR "
                               "EXISTS (SELECT 1 FROM best_configs c WHERE c.record_digest = ?1))";

std::string TimingsToJson(const std::map<std::string, double>& timings) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : timings) j[k] = v;
  return j.dump();
}

std::map<std::string, double> TimingsFromJson(const std::string& text) {
  std::map<std::string, double> out;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items()) {
    if (v.is_number()) out[k] = v.get<double>();
  }
  return out;
}

} // namespace

absl::StatusOr<bool> IndexTxn::HasBlob(const std::string& digest) {
  ASSIGN_OR_RETURN(Statement st, db_.Prepare("SELECT 1 FROM blobs WHERE digest = ?1"));
  st.Bind(1, digest);
  return st.Step();
}

absl::StatusOr<bool> IndexTxn::InsertBlob(const BlobInfo& info, int64_t now_ms) {
  {
    ASSIGN_OR_RETURN(Statement st,
                     db_.Prepare("INSERT OR IGNORE INTO blobs(digest, file_size, raw_size, "
                                 "compressed, created_ms, verified_ms) VALUES (?1, ?2, ?3, ?4, "
                                 "?5, ?5)"));
    st.Bind(1, info.digest)
        .Bind(2, static_cast<int64_t>(info.file_size))
        .Bind(3, static_cast<int64_t>(info.raw_size))
        .Bind(4, static_cast<int64_t>(info.compressed ? 1 : 0))
        .Bind(5, now_ms);
    RETURN_IF_ERROR(st.Run());
  }
  if (db_.Changes() == 0) return false;
  RETURN_IF_ERROR(AddCounter("total_bytes", static_cast<int64_t>(info.file_size)));
  return true;
}

absl::Status IndexTxn::DeleteBlob(const std::string& digest) {
  int64_t size = 0;
  {
    ASSIGN_OR_RETURN(Statement st, db_.Prepare("SELECT file_size FROM blobs WHERE digest = ?1"));
    st.Bind(1, digest);
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return absl::OkStatus();
    size = st.Int(0);
  }
  {
    ASSIGN_OR_RETURN(Statement st, db_.Prepare("DELETE FROM blobs WHERE digest = ?1"));
    st.Bind(1, digest);
    RETURN_IF_ERROR(st.Run());
  }
  return AddCounter("total_bytes", -size);
}

absl::StatusOr<std::vector<std::string>>
IndexTxn::Unreferenced(const std::vector<std::string>* candidates) {
  std::vector<std::string> out;
  if (candidates != nullptr) {
    ASSIGN_OR_RETURN(Statement st,
                     db_.Prepare(absl::StrCat("SELECT EXISTS (SELECT 1 FROM blobs WHERE digest = "
                                              "?1) AND NOT ",
                                              kReferenced)));
    for (const std::string& d : *candidates) {
      st.Bind(1, d);
      ASSIGN_OR_RETURN(bool row, st.Step());
      const bool unreferenced = row && st.Int(0) != 0;
      RETURN_IF_ERROR(st.Run());
      if (unreferenced) out.push_back(d);
    }
    return out;
  }
  ASSIGN_OR_RETURN(Statement st,
                   db_.Prepare("SELECT b.digest FROM blobs b WHERE "
                               "NOT EXISTS (SELECT 1 FROM artifact_files f WHERE f.digest = "
                               "b.digest) AND NOT EXISTS (SELECT 1 FROM artifacts a WHERE "
                               "a.manifest_digest = b.digest) AND NOT EXISTS (SELECT 1 FROM "
                               "best_configs c WHERE c.record_digest = b.digest)"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(st.Text(0));
  }
  return out;
}

namespace {

absl::StatusOr<std::vector<BlobInfo>> ReadBlobRows(Statement& st) {
  std::vector<BlobInfo> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    BlobInfo b;
    b.digest = st.Text(0);
    b.file_size = static_cast<uint64_t>(st.Int(1));
    b.raw_size = static_cast<uint64_t>(st.Int(2));
    b.compressed = st.Int(3) != 0;
    out.push_back(std::move(b));
  }
  return out;
}

} // namespace

absl::StatusOr<std::vector<BlobInfo>> IndexTxn::AllBlobs() {
  ASSIGN_OR_RETURN(Statement st,
                   db_.Prepare("SELECT digest, file_size, raw_size, compressed FROM blobs"));
  return ReadBlobRows(st);
}

absl::StatusOr<std::vector<BlobInfo>> IndexTxn::ScrubCandidates(int64_t limit) {
  ASSIGN_OR_RETURN(Statement st,
                   db_.Prepare("SELECT digest, file_size, raw_size, compressed FROM blobs "
                               "ORDER BY verified_ms LIMIT ?1"));
  st.Bind(1, limit);
  return ReadBlobRows(st);
}

absl::Status IndexTxn::SetVerified(const std::string& digest, int64_t now_ms) {
  ASSIGN_OR_RETURN(Statement st,
                   db_.Prepare("UPDATE blobs SET verified_ms = ?2 WHERE digest = ?1"));
  st.Bind(1, digest).Bind(2, now_ms);
  return st.Run();
}

absl::StatusOr<uint64_t> IndexTxn::TotalBytes() {
  ASSIGN_OR_RETURN(Statement st,
                   db_.Prepare("SELECT value FROM counters WHERE name = 'total_bytes'"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? static_cast<uint64_t>(std::max<int64_t>(0, st.Int(0))) : 0;
}

absl::StatusOr<std::optional<IndexedArtifact>> IndexTxn::GetArtifact(const std::string& key) {
  // One statement, so one snapshot: the artifact row and all its files.
  ASSIGN_OR_RETURN(Statement st,
                   db_.Prepare("SELECT a.target, a.toolchain_fingerprint, a.launch_json, "
                               "a.timings_json, a.created_ms, a.last_access_ms, "
                               "a.manifest_digest, a.total_size, f.kind, f.digest, b.file_size, "
                               "f.raw_size "
                               "FROM artifacts a LEFT JOIN artifact_files f ON f.key = a.key "
                               "LEFT JOIN blobs b ON b.digest = f.digest WHERE a.key = ?1"));
  st.Bind(1, key);
  std::optional<IndexedArtifact> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    if (!out.has_value()) {
      out.emplace();
      out->meta.target = st.Text(0);
      out->meta.toolchain_fingerprint = st.Text(1);
      out->meta.launch_json = st.Text(2);
      out->meta.timings = TimingsFromJson(st.Text(3));
      out->meta.created_unix_ms = st.Int(4);
      out->last_access_unix_ms = st.Int(5);
      out->manifest_digest = st.Text(6);
      out->total_size = static_cast<uint64_t>(st.Int(7));
    }
    if (!st.IsNull(8)) {
      ArtifactFile f;
      f.kind = st.Text(8);
      f.digest = st.Text(9);
      f.raw_size = static_cast<uint64_t>(st.Int(11));
      out->meta.files.push_back(std::move(f));
      out->file_sizes.push_back(static_cast<uint64_t>(st.Int(10)));
    }
  }
  return out;
}

absl::Status IndexTxn::InsertArtifact(const std::string& key, const Artifact& meta,
                                      const std::string& manifest_digest, uint64_t total_size,
                                      int64_t now_ms) {
  {
    ASSIGN_OR_RETURN(Statement st,
                     db_.Prepare("INSERT INTO artifacts(key, manifest_digest, target, "
                                 "toolchain_fingerprint, launch_json, timings_json, total_size, "
                                 "created_ms, last_access_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                                 "?8, ?9)"));
    st.Bind(1, key)
        .Bind(2, manifest_digest)
        .Bind(3, meta.target)
        .Bind(4, meta.toolchain_fingerprint)
        .Bind(5, meta.launch_json)
        .Bind(6, TimingsToJson(meta.timings))
        .Bind(7, static_cast<int64_t>(total_size))
        .Bind(8, meta.created_unix_ms)
        .Bind(9, now_ms);
    RETURN_IF_ERROR(st.Run());
  }
  ASSIGN_OR_RETURN(Statement st, db_.Prepare("INSERT INTO artifact_files(key, kind, digest, "
                                             "raw_size) VALUES (?1, ?2, ?3, ?4)"));
  for (const ArtifactFile& f : meta.files) {
    st.Bind(1, key).Bind(2, f.kind).Bind(3, f.digest).Bind(4, static_cast<int64_t>(f.raw_size));
    RETURN_IF_ERROR(st.Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> IndexTxn::DeleteArtifact(const std::string& key) {
  std::vector<std::string> digests;
  {
    ASSIGN_OR_RETURN(Statement st, db_.Prepare("SELECT manifest_digest FROM artifacts WHERE key "
                                               "= ?1 UNION ALL SELECT digest FROM "
                                               "artifact_files WHERE key = ?1"));
    st.Bind(1, key);
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      digests.push_back(st.Text(0));
    }
  }
  if (digests.empty()) return digests;
  ASSIGN_OR_RETURN(Statement st, db_.Prepare("DELETE FROM artifacts WHERE key = ?1"));
  st.Bind(1, key);
  RETURN_IF_ERROR(st.Run());
  return digests;
}

absl::StatusOr<std::vector<std::string>> IndexTxn::ArtifactsUsingBlob(const std::string& digest) {
  ASSIGN_OR_RETURN(Statement st, db_.Prepare("SELECT key FROM artifact_files WHERE digest = ?1 "
                                             "UNION SELECT key FROM artifacts WHERE "
                                             "manifest_digest = ?1"));
  st.Bind(1, digest);
  std::vector<std::string> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(st.Text(0));
  }
  return out;
}

absl::StatusOr<std::vector<LruEntry>> IndexTxn::LruCandidates(int64_t limit) {
  ASSIGN_OR_RETURN(Statement st,
                   db_.Prepare("SELECT a.key, a.total_size FROM artifacts a WHERE NOT EXISTS "
                               "(SELECT 1 FROM best_configs c WHERE c.artifact_key = a.key) "
                               "ORDER BY a.last_access_ms LIMIT ?1"));
  st.Bind(1, limit);
  std::vector<LruEntry> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back({st.Text(0), static_cast<uint64_t>(st.Int(1))});
  }
  return out;
}

absl::Status IndexTxn::Touch(const std::map<std::string, int64_t>& last_access_ms) {
  ASSIGN_OR_RETURN(Statement st, db_.Prepare("UPDATE artifacts SET last_access_ms = "
                                             "max(last_access_ms, ?2) WHERE key = ?1"));
  for (const auto& [key, ms] : last_access_ms) {
    st.Bind(1, key).Bind(2, ms);
    RETURN_IF_ERROR(st.Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ArtifactSummary>> IndexTxn::ListArtifacts(int64_t limit) {
  ASSIGN_OR_RETURN(
      Statement st,
      db_.Prepare("SELECT a.key, a.target, a.total_size, a.created_ms, a.last_access_ms, "
                  "EXISTS (SELECT 1 FROM best_configs c WHERE c.artifact_key = a.key), "
                  "(SELECT group_concat(kind, ',') FROM (SELECT kind FROM artifact_files f "
                  "WHERE f.key = a.key ORDER BY kind)) FROM artifacts a ORDER BY "
                  "a.last_access_ms DESC LIMIT ?1"));
  st.Bind(1, limit <= 0 ? int64_t{-1} : limit);
  std::vector<ArtifactSummary> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    ArtifactSummary s;
    s.key = st.Text(0);
    s.target = st.Text(1);
    s.size_bytes = static_cast<uint64_t>(st.Int(2));
    s.created_unix_ms = st.Int(3);
    s.last_access_unix_ms = st.Int(4);
    s.pinned = st.Int(5) != 0;
    if (!st.IsNull(6)) s.kinds = absl::StrSplit(st.Text(6), ',');
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<std::optional<std::pair<BestConfig, std::string>>>
IndexTxn::GetBest(const BestConfigKey& key) {
  ASSIGN_OR_RETURN(Statement st,
                   db_.Prepare("SELECT config_json, min_us, median_us, mean_us, p90_us, "
                               "stddev_us, samples, tuning_record_id, artifact_key, updated_ms, "
                               "record_digest FROM best_configs WHERE program_key = ?1 AND "
                               "shape = ?2 AND target = ?3 AND device_model = ?4"));
  st.Bind(1, key.program_key).Bind(2, key.shape).Bind(3, key.target).Bind(4, key.device_model);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return std::optional<std::pair<BestConfig, std::string>>();
  BestConfig b;
  b.config_json = st.Text(0);
  b.latency = {st.Double(1), st.Double(2), st.Double(3), st.Double(4), st.Double(5), st.Int(6)};
  b.tuning_record_id = st.Text(7);
  b.artifact_key = st.Text(8);
  b.updated_unix_ms = st.Int(9);
  return std::make_optional(std::make_pair(std::move(b), st.Text(10)));
}

absl::Status IndexTxn::PutBest(const BestConfigKey& key, const BestConfig& value,
                               const std::string& record_digest) {
  ASSIGN_OR_RETURN(
      Statement st,
      db_.Prepare("INSERT OR REPLACE INTO best_configs(program_key, shape, target, device_model, "
                  "config_json, min_us, median_us, mean_us, p90_us, stddev_us, samples, "
                  "tuning_record_id, artifact_key, record_digest, updated_ms) VALUES (?1, ?2, "
                  "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"));
  st.Bind(1, key.program_key)
      .Bind(2, key.shape)
      .Bind(3, key.target)
      .Bind(4, key.device_model)
      .Bind(5, value.config_json)
      .Bind(6, value.latency.min_us)
      .Bind(7, value.latency.median_us)
      .Bind(8, value.latency.mean_us)
      .Bind(9, value.latency.p90_us)
      .Bind(10, value.latency.stddev_us)
      .Bind(11, value.latency.samples)
      .Bind(12, value.tuning_record_id)
      .Bind(13, value.artifact_key)
      .Bind(14, record_digest)
      .Bind(15, value.updated_unix_ms);
  return st.Run();
}

absl::StatusOr<bool> IndexTxn::RemoveBest(const BestConfigKey& key, std::string* record_digest) {
  ASSIGN_OR_RETURN(auto existing, GetBest(key));
  if (!existing.has_value()) return false;
  *record_digest = existing->second;
  ASSIGN_OR_RETURN(Statement st,
                   db_.Prepare("DELETE FROM best_configs WHERE program_key = ?1 AND shape = ?2 "
                               "AND target = ?3 AND device_model = ?4"));
  st.Bind(1, key.program_key).Bind(2, key.shape).Bind(3, key.target).Bind(4, key.device_model);
  RETURN_IF_ERROR(st.Run());
  return true;
}

absl::StatusOr<std::vector<std::pair<BestConfigKey, BestConfig>>>
IndexTxn::ListBest(const std::string& program_key) {
  ASSIGN_OR_RETURN(
      Statement st,
      db_.Prepare("SELECT program_key, shape, target, device_model, config_json, min_us, "
                  "median_us, mean_us, p90_us, stddev_us, samples, tuning_record_id, "
                  "artifact_key, updated_ms FROM best_configs WHERE ?1 = '' OR program_key = ?1 "
                  "ORDER BY program_key, shape, target, device_model"));
  st.Bind(1, program_key);
  std::vector<std::pair<BestConfigKey, BestConfig>> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    BestConfigKey k{st.Text(0), st.Text(1), st.Text(2), st.Text(3)};
    BestConfig b;
    b.config_json = st.Text(4);
    b.latency = {st.Double(5), st.Double(6), st.Double(7), st.Double(8), st.Double(9), st.Int(10)};
    b.tuning_record_id = st.Text(11);
    b.artifact_key = st.Text(12);
    b.updated_unix_ms = st.Int(13);
    out.emplace_back(std::move(k), std::move(b));
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<BestConfigKey, BestConfig>>>
IndexTxn::BestUsingRecord(const std::string& digest) {
  std::vector<BestConfigKey> keys;
  {
    ASSIGN_OR_RETURN(Statement st,
                     db_.Prepare("SELECT program_key, shape, target, device_model FROM "
                                 "best_configs WHERE record_digest = ?1"));
    st.Bind(1, digest);
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      keys.push_back({st.Text(0), st.Text(1), st.Text(2), st.Text(3)});
    }
  }
  std::vector<std::pair<BestConfigKey, BestConfig>> out;
  for (BestConfigKey& k : keys) {
    ASSIGN_OR_RETURN(auto best, GetBest(k));
    if (best.has_value()) out.emplace_back(std::move(k), std::move(best->first));
  }
  return out;
}

absl::Status IndexTxn::ReplaceBestRecord(const std::string& old_digest,
                                         const std::string& new_digest) {
  ASSIGN_OR_RETURN(Statement st, db_.Prepare("UPDATE best_configs SET record_digest = ?2 WHERE "
                                             "record_digest = ?1"));
  st.Bind(1, old_digest).Bind(2, new_digest);
  return st.Run();
}

absl::Status IndexTxn::AddCounter(const std::string& name, int64_t delta) {
  if (delta == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(Statement st,
                   db_.Prepare("INSERT INTO counters(name, value) VALUES (?1, ?2) ON CONFLICT "
                               "(name) DO UPDATE SET value = value + ?2"));
  st.Bind(1, name).Bind(2, delta);
  return st.Run();
}

absl::StatusOr<IndexCounts> IndexTxn::Counts() {
  IndexCounts c;
  {
    ASSIGN_OR_RETURN(
        Statement st,
        db_.Prepare("SELECT (SELECT count(*) FROM artifacts), (SELECT count(*) FROM blobs), "
                    "(SELECT count(*) FROM artifacts a WHERE EXISTS (SELECT 1 FROM best_configs "
                    "c WHERE c.artifact_key = a.key)), (SELECT count(*) FROM best_configs), "
                    "(SELECT count(*) FROM measurements)"));
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) {
      c.artifacts = st.Int(0);
      c.blobs = st.Int(1);
      c.pinned_artifacts = st.Int(2);
      c.best_configs = st.Int(3);
      c.measurements = st.Int(4);
    }
  }
  ASSIGN_OR_RETURN(Statement st, db_.Prepare("SELECT name, value FROM counters"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    c.counters[st.Text(0)] = st.Int(1);
  }
  c.blob_bytes = static_cast<uint64_t>(std::max<int64_t>(0, c.counters["total_bytes"]));
  c.counters.erase("total_bytes");
  return c;
}

absl::StatusOr<std::string> IndexTxn::QuickCheck() {
  ASSIGN_OR_RETURN(Statement st, db_.Prepare("PRAGMA quick_check"));
  std::string findings;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    const std::string line = st.Text(0);
    if (line != "ok") absl::StrAppend(&findings, line, "\n");
  }
  return findings;
}

absl::StatusOr<std::unique_ptr<Index>> Index::Open(const std::string& path, bool create,
                                                   const SqliteOptions& options) {
  // The first connection creates the file and migrates; it then joins the
  // pool.
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path, create, options));
  RETURN_IF_ERROR(MigrateToLatest(*db));
  std::unique_ptr<Index> index(new Index(path, options));
  { ConnectionPool::Lease lease(&index->pool_, std::move(db)); }
  return index;
}

absl::Status Index::Run(bool write, const std::function<absl::Status(IndexTxn&)>& fn) {
  ASSIGN_OR_RETURN(ConnectionPool::Lease db, pool_.Acquire());
  IndexTxn txn(*db);
  return db->Transaction(write, [&] { return fn(txn); });
}

absl::Status Index::Read(const std::function<absl::Status(IndexTxn&)>& fn) {
  return Run(false, fn);
}

absl::Status Index::ReadOne(const std::function<absl::Status(IndexTxn&)>& fn) {
  ASSIGN_OR_RETURN(ConnectionPool::Lease db, pool_.Acquire());
  IndexTxn txn(*db);
  return db->Read([&] { return fn(txn); });
}

absl::Status Index::Write(const std::function<absl::Status(IndexTxn&)>& fn) {
  return Run(true, fn);
}

uint64_t Index::FileBytes() const {
  uint64_t total = 0;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    struct stat st {};
    if (stat((path_ + suffix).c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_size);
  }
  return total;
}

absl::Status Index::Checkpoint() {
  ASSIGN_OR_RETURN(ConnectionPool::Lease db, pool_.Acquire());
  const int rc =
      sqlite3_wal_checkpoint_v2(db->raw(), nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  if (rc != SQLITE_OK) return db->StatusFor(rc, "checkpoint the index's WAL");
  return absl::OkStatus();
}

} // namespace kiln::cache
