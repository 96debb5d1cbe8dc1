// A pool of SQLite connections to one index file, so that threads of one
// process use the index in parallel (readers never wait for each other in WAL
// mode) without sharing a connection.
//
// Thread-safe. Connections are opened lazily; a released connection goes back
// to the free list. Not fork-safe: a child process must open its own cache.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cache/sqlite_db.h"

namespace kiln::cache {

class ConnectionPool {
 public:
  ConnectionPool(std::string path, SqliteOptions options)
      : path_(std::move(path)), options_(options) {}

  // A connection for the caller's exclusive use until the lease ends.
  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<SqliteDb> db) : pool_(pool), db_(std::move(db)) {}
    Lease(Lease&&) noexcept = default;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (db_ != nullptr) pool_->Release(std::move(db_));
    }
    SqliteDb& operator*() { return *db_; }
    SqliteDb* operator->() { return db_.get(); }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<SqliteDb> db_;
  };

  // Errors: those of SqliteDb::Open (the file must exist).
  absl::StatusOr<Lease> Acquire();
  const std::string& path() const { return path_; }

 private:
  void Release(std::unique_ptr<SqliteDb> db);

  const std::string path_;
  const SqliteOptions options_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<SqliteDb>> free_ ABSL_GUARDED_BY(mu_);
};

} // namespace kiln::cache
