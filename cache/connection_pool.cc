#include "cache/connection_pool.h"

#include <utility>

namespace kiln::cache {

absl::StatusOr<ConnectionPool::Lease> ConnectionPool::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!free_.empty()) {
      std::unique_ptr<SqliteDb> db = std::move(free_.back());
      free_.pop_back();
      return Lease(this, std::move(db));
    }
  }
  absl::StatusOr<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path_, /*create=*/false, options_);
  if (!db.ok()) return db.status();
  return Lease(this, *std::move(db));
}

void ConnectionPool::Release(std::unique_ptr<SqliteDb> db) {
  absl::MutexLock lock(&mu_);
  free_.push_back(std::move(db));
}

} // namespace kiln::cache
