#include "cache/sqlite_db.h"

#include <random>
#include <thread>
#include <utility>

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "cache/cache_error.h"

namespace kiln::cache {
namespace {

constexpr char kBusyMessage[] = "sqlite busy";

bool IsBusyCode(int rc) {
  const int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

} // namespace

bool IsBusy(const absl::Status& status) {
  return status.code() == absl::StatusCode::kAborted && status.message() == kBusyMessage;
}

absl::Status SqliteDb::StatusFor(int rc, std::string_view what) const {
  const int primary = rc & 0xff;
  if (IsBusyCode(rc)) return absl::AbortedError(kBusyMessage);
  const std::string detail = absl::StrCat(absl::string_view(what.data(), what.size()), ": ",
                                          sqlite3_errmsg(db_), " (", sqlite3_errstr(rc), ")");
  switch (primary) {
  case SQLITE_FULL:
    return MakeError(CacheError::kExhausted,
                     absl::StrCat("disk full: cache index ", path_, ": ", detail));
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB:
    return MakeError(CacheError::kCorrupt,
                     absl::StrCat("cache index ", path_, " is corrupt (", detail,
                                  "); run `kiln cache rebuild` to reconstruct it from the blobs"));
  default:
    return MakeError(CacheError::kIo, absl::StrCat("cache index ", path_, ": ", detail));
  }
}

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
  other.stmt_ = nullptr;
}

Statement::~Statement() {
  if (stmt_ == nullptr) return;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Statement& Statement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}

Statement& Statement::Bind(int index, std::string_view text) {
  sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Statement& Statement::BindBlob(int index, std::string_view bytes) {
  sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::BindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

absl::StatusOr<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  absl::Status s = db_->StatusFor(rc, sqlite3_sql(stmt_));
  sqlite3_reset(stmt_);
  return s;
}

absl::Status Statement::Run() {
  while (true) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) {
      sqlite3_reset(stmt_);
      return absl::OkStatus();
    }
  }
}

int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::Double(int column) const { return sqlite3_column_double(stmt_, column); }
std::string Statement::Text(int column) const {
  const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
  const int n = sqlite3_column_bytes(stmt_, column);
  return p == nullptr ? std::string() : std::string(p, static_cast<size_t>(n));
}
bool Statement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

absl::StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path, bool create,
                                                         const SqliteOptions& options) {
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (create) flags |= SQLITE_OPEN_CREATE;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw, path, options));
  if (rc != SQLITE_OK) {
    if (raw == nullptr) return MakeError(CacheError::kIo, absl::StrCat("cannot open ", path));
    if ((rc & 0xff) == SQLITE_CANTOPEN) {
      return MakeError(CacheError::kNotFound, absl::StrCat("cache index ", path, " not found"));
    }
    return db->StatusFor(rc, "open");
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, static_cast<int>(options.busy_timeout.count()));
  // journal_mode=WAL needs the write lock the first time; retry it like any
  // other statement.
  const std::string pragmas = absl::StrCat(
      "PRAGMA journal_mode=WAL; PRAGMA synchronous=", options.synchronous_full ? "FULL" : "NORMAL",
      "; PRAGMA foreign_keys=ON;");
  const auto deadline = std::chrono::steady_clock::now() + options.retry_budget;
  while (true) {
    absl::Status s = db->Exec(pragmas);
    if (s.ok()) break;
    if (!IsBusy(s)) return s;
    if (std::chrono::steady_clock::now() > deadline) {
      return MakeError(CacheError::kTimeout,
                       absl::StrCat("cache index ", path, " stayed locked while opening"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return db;
}

SqliteDb::~SqliteDb() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

absl::Status SqliteDb::Exec(std::string_view sql) {
  const std::string text(sql);
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) return StatusFor(rc, text);
  return absl::OkStatus();
}

absl::StatusOr<Statement> SqliteDb::Prepare(std::string_view sql) {
  auto it = statements_.find(AsAbsl(sql));
  if (it == statements_.end()) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return StatusFor(rc, sql);
    it = statements_.emplace(std::string(sql), stmt).first;
  }
  return Statement(this, it->second);
}

absl::Status SqliteDb::Transaction(bool write, const std::function<absl::Status()>& fn) {
  if (depth_ > 0) return fn();
  const auto deadline = std::chrono::steady_clock::now() + options_.retry_budget;
  thread_local std::minstd_rand rng(std::random_device{}());
  int attempt = 0;
  while (true) {
    absl::Status s = RunCached(write ? "BEGIN IMMEDIATE" : "BEGIN");
    if (s.ok()) {
      ++depth_;
      s = fn();
      --depth_;
      if (s.ok()) {
        s = RunCached("COMMIT");
        if (s.ok()) return s;
      }
      // ROLLBACK fails harmlessly when SQLite already rolled back.
      (void)RunCached("ROLLBACK");
    }
    if (!IsBusy(s)) return s;
    if (std::chrono::steady_clock::now() > deadline) {
      return MakeError(CacheError::kTimeout,
                       absl::StrCat("cache index ", path_, " stayed locked for ",
                                    options_.retry_budget.count(), " ms"));
    }
    // Jittered backoff, growing to ~50 ms.
    const int cap = std::min(50, 1 << std::min(attempt, 6));
    ++attempt;
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::uniform_int_distribution<int>(100, cap * 1000)(rng)));
  }
}

absl::Status SqliteDb::RunCached(std::string_view sql) {
  absl::StatusOr<Statement> st = Prepare(sql);
  if (!st.ok()) return st.status();
  return st->Run();
}

absl::Status SqliteDb::Read(const std::function<absl::Status()>& fn) {
  const auto deadline = std::chrono::steady_clock::now() + options_.retry_budget;
  while (true) {
    absl::Status s = fn();
    if (!IsBusy(s)) return s;
    if (std::chrono::steady_clock::now() > deadline) {
      return MakeError(CacheError::kTimeout,
                       absl::StrCat("cache index ", path_, " stayed locked for ",
                                    options_.retry_budget.count(), " ms"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

int64_t SqliteDb::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }
int SqliteDb::Changes() const { return sqlite3_changes(db_); }

} // namespace kiln::cache
