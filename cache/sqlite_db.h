// A thin RAII layer over one SQLite connection: prepared-statement cache,
// transactions that retry while another process holds the lock, and the
// mapping of SQLite result codes onto the cache's errors (cache_error.h).
//
// Errors: SQLITE_BUSY / SQLITE_LOCKED are retried (busy timeout inside
// SQLite, then whole-transaction retries with jittered backoff) until
// `retry_budget` is spent, then kTimeout; no caller ever sees "database is
// locked". SQLITE_FULL is kExhausted, SQLITE_CORRUPT / SQLITE_NOTADB are
// kCorrupt (the message names the file and `kiln cache rebuild`), anything
// else is kIo.
//
// Thread-safety: a SqliteDb is used by one thread at a time (the connection
// is opened without SQLite's own mutex); share through ConnectionPool.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::cache {

struct SqliteOptions {
  // Passed to sqlite3_busy_timeout for each attempt.
  std::chrono::milliseconds busy_timeout{2000};
  // Total time one call may spend retrying before it fails with kTimeout.
  std::chrono::milliseconds retry_budget{60000};
  // PRAGMA synchronous: true = FULL (each commit fsyncs the WAL), false =
  // NORMAL (WAL fsynced at checkpoints; a power loss may drop the last
  // commits but never corrupts the database).
  bool synchronous_full = false;
};

class SqliteDb;

// A prepared statement borrowed from its connection's cache; reset and
// unbound when it goes out of scope.
class Statement {
 public:
  Statement(SqliteDb* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view text);
  Statement& BindBlob(int index, std::string_view bytes);
  Statement& BindNull(int index);

  // true: a row is ready; false: done. Errors as in the file comment, with
  // busy reported as kAborted so that SqliteDb::Transaction can retry.
  absl::StatusOr<bool> Step();
  // Steps to the end (for statements that return no rows).
  absl::Status Run();

  int64_t Int(int column) const;
  double Double(int column) const;
  std::string Text(int column) const;
  bool IsNull(int column) const;

 private:
  SqliteDb* db_;
  sqlite3_stmt* stmt_;
};

class SqliteDb {
 public:
  // Opens (creating when `create`) the database at `path` in WAL mode.
  static absl::StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path, bool create,
                                                        const SqliteOptions& options);
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;
  ~SqliteDb();

  // Runs semicolon-separated SQL without results (no retries: for use inside
  // Transaction or at open).
  absl::Status Exec(std::string_view sql);
  // A cached prepared statement for `sql`.
  absl::StatusOr<Statement> Prepare(std::string_view sql);

  // Runs `fn` in a transaction (BEGIN IMMEDIATE when `write`, so a writer
  // never has to upgrade a read lock) and commits when it returns OK. The
  // whole of `fn` is retried while the database is busy, so `fn` must be
  // safe to run again (no side effects outside the database, or idempotent
  // ones). Any other error rolls back and is returned.
  absl::Status Transaction(bool write, const std::function<absl::Status()>& fn);

  // Runs `fn`, one statement's worth of reading, outside an explicit
  // transaction (a single statement is its own consistent snapshot), with
  // the same busy retries. Cheaper than Transaction on the hit path.
  absl::Status Read(const std::function<absl::Status()>& fn);

  int64_t LastInsertRowId() const;
  int Changes() const;
  const std::string& path() const { return path_; }
  sqlite3* raw() { return db_; }

  // The status for SQLite result code `rc` with the connection's message.
  absl::Status StatusFor(int rc, std::string_view what) const;

 private:
  // Exec through the statement cache (BEGIN / COMMIT / ROLLBACK).
  absl::Status RunCached(std::string_view sql);

  SqliteDb(sqlite3* db, std::string path, const SqliteOptions& options)
      : db_(db), path_(std::move(path)), options_(options) {}

  sqlite3* db_;
  std::string path_;
  SqliteOptions options_;
  absl::flat_hash_map<std::string, sqlite3_stmt*> statements_;
  int depth_ = 0; // nesting of Transaction (inner calls join the outer one)
};

// True for the internal "database busy, retry" status.
bool IsBusy(const absl::Status& status);

} // namespace kiln::cache
