// The index's SQL schema as a chain of forward migrations, versioned with
// PRAGMA user_version. A fresh index runs every step, so the path from each
// earlier version is the one every new cache takes (and tests/cache/
// schema_test.cc opens a database left at each version with data in it).
//
// Rule for changes: append a step; never edit a released one.
// Thread-safety: functions take the connection they use (one thread at a time).
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cache/sqlite_db.h"

namespace kiln::cache {

inline constexpr int kSchemaVersion = 6;

// Brings `db` to kSchemaVersion in one write transaction. FailedPrecondition
// when the database is newer than this code (written by a later Kiln).
absl::Status MigrateToLatest(SqliteDb& db);

// Applies steps up to `version` only (tests build older databases with it).
absl::Status MigrateTo(SqliteDb& db, int version);

// PRAGMA user_version.
absl::StatusOr<int> SchemaVersion(SqliteDb& db);

} // namespace kiln::cache
