#include "cache/schema.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace kiln::cache {
namespace {

// Step i brings the schema from version i to i + 1.
constexpr std::array<const char*, kSchemaVersion> kSteps = {
    // v1: blobs, artifacts (one row per cache key) and their files, counters.
    R"sql(
CREATE TABLE blobs (
  digest TEXT PRIMARY KEY,          -- sha256 hex of the uncompressed bytes
  file_size INTEGER NOT NULL,       -- bytes on disk (header + payload)
  raw_size INTEGER NOT NULL,
  compressed INTEGER NOT NULL,
  created_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE artifacts (
  key TEXT PRIMARY KEY,
  manifest_digest TEXT NOT NULL REFERENCES blobs(digest),
  target TEXT NOT NULL,
  toolchain_fingerprint TEXT NOT NULL,
  launch_json TEXT NOT NULL,
  timings_json TEXT NOT NULL,
  total_size INTEGER NOT NULL,      -- file_size of its files + manifest
  created_ms INTEGER NOT NULL,
  last_access_ms INTEGER NOT NULL
);
CREATE INDEX artifacts_lru ON artifacts(last_access_ms);
CREATE TABLE artifact_files (
  key TEXT NOT NULL REFERENCES artifacts(key) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  digest TEXT NOT NULL REFERENCES blobs(digest),
  raw_size INTEGER NOT NULL,
  PRIMARY KEY (key, kind)
) WITHOUT ROWID;
CREATE INDEX artifact_files_digest ON artifact_files(digest);
CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO counters(name, value) VALUES
  ('hits', 0), ('misses', 0), ('evictions', 0), ('corrupt_blobs', 0);
)sql",
    // v2: best configs and the measurement history.
    R"sql(
CREATE TABLE best_configs (
  program_key TEXT NOT NULL,        -- program without its tunable bindings
  shape TEXT NOT NULL,              -- canonical non-tunable bindings
  target TEXT NOT NULL,
  device_model TEXT NOT NULL,
  config_json TEXT NOT NULL,
  min_us REAL NOT NULL, median_us REAL NOT NULL, mean_us REAL NOT NULL,
  p90_us REAL NOT NULL, stddev_us REAL NOT NULL, samples INTEGER NOT NULL,
  tuning_record_id TEXT NOT NULL,
  artifact_key TEXT NOT NULL,       -- '' or the artifact it pins
  record_digest TEXT NOT NULL REFERENCES blobs(digest),
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (program_key, shape, target, device_model)
) WITHOUT ROWID;
CREATE INDEX best_configs_artifact ON best_configs(artifact_key);
CREATE TABLE measurements (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  config_json TEXT NOT NULL,
  device_model TEXT NOT NULL,
  device_id TEXT NOT NULL,
  driver TEXT NOT NULL,
  sm_clock_mhz INTEGER NOT NULL,
  mem_clock_mhz INTEGER NOT NULL,
  min_us REAL NOT NULL, median_us REAL NOT NULL, mean_us REAL NOT NULL,
  p90_us REAL NOT NULL, stddev_us REAL NOT NULL, samples INTEGER NOT NULL,
  failure TEXT NOT NULL,            -- '' when the run succeeded
  label TEXT NOT NULL,              -- e.g. a git sha
  time_ms INTEGER NOT NULL
);
CREATE INDEX measurements_key ON measurements(key, time_ms);
CREATE INDEX measurements_label ON measurements(label, time_ms);
)sql",
    // v3: scrub bookkeeping for blobs; the target a measurement ran for.
    R"sql(
ALTER TABLE blobs ADD COLUMN verified_ms INTEGER NOT NULL DEFAULT 0;
CREATE INDEX blobs_verified ON blobs(verified_ms);
ALTER TABLE measurements ADD COLUMN target TEXT NOT NULL DEFAULT '';
)sql",
    // v4: indexes for the reference checks of sweeps (without them every
    // check scanned the artifacts: eviction was quadratic).
    R"sql(
CREATE INDEX artifacts_manifest ON artifacts(manifest_digest);
CREATE INDEX best_configs_record ON best_configs(record_digest);
)sql",
    // v5: the daemon's job records (kilnd: server/job_manager.h), so results
    // and failures of jobs survive a restart.
    R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  state TEXT NOT NULL,
  key TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,     -- 0 while unfinished
  record BLOB NOT NULL              -- the caller's serialized record
) WITHOUT ROWID;
CREATE INDEX jobs_created ON jobs(created_ms);
CREATE INDEX jobs_unfinished ON jobs(finished_ms) WHERE finished_ms = 0;
)sql",
    // v6: micro-benchmark results per device model, driver and Kiln version
    // (server/device_profiles.h), so a restarted daemon does not measure again.
    R"sql(
CREATE TABLE device_profiles (
  device_model TEXT NOT NULL,
  driver TEXT NOT NULL,
  kiln_version TEXT NOT NULL,
  state TEXT NOT NULL,              -- "measured", "partial", ...
  values_json TEXT NOT NULL,        -- {"dram_gbs": 4012.5, ...}
  note TEXT NOT NULL,               -- what was not measured, and why
  measured_ms INTEGER NOT NULL,
  PRIMARY KEY (device_model, driver, kiln_version)
) WITHOUT ROWID;
)sql",
};

absl::Status ApplySteps(SqliteDb& db, int version) {
  return db.Transaction(true, [&]() -> absl::Status {
    absl::StatusOr<int> current = SchemaVersion(db);
    if (!current.ok()) return current.status();
    if (*current > kSchemaVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cache index ", db.path(), " has schema version ", *current,
          "; this Kiln understands up to ", kSchemaVersion, " (it was written by a newer Kiln)"));
    }
    for (int v = *current; v < version; ++v) {
      if (absl::Status s = db.Exec(kSteps[v]); !s.ok()) return s;
    }
    if (*current < version) {
      return db.Exec(absl::StrCat("PRAGMA user_version=", version));
    }
    return absl::OkStatus();
  });
}

} // namespace

absl::StatusOr<int> SchemaVersion(SqliteDb& db) {
  absl::StatusOr<Statement> st = db.Prepare("PRAGMA user_version");
  if (!st.ok()) return st.status();
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  return *row ? static_cast<int>(st->Int(0)) : 0;
}

absl::Status MigrateToLatest(SqliteDb& db) {
  // The common case, an index already at the latest version, takes no write
  // lock.
  absl::StatusOr<int> current = SchemaVersion(db);
  if (current.ok() && *current == kSchemaVersion) return absl::OkStatus();
  return ApplySteps(db, kSchemaVersion);
}

absl::Status MigrateTo(SqliteDb& db, int version) {
  if (version < 0 || version > kSchemaVersion) {
    return absl::InvalidArgumentError(absl::StrCat("no schema version ", version));
  }
  return ApplySteps(db, version);
}

} // namespace kiln::cache
