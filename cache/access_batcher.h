// Collects cache hits in memory so that LRU access times and hit/miss counters
// reach the index in one transaction per batch instead of a write per hit.
// A batch is due when it holds `max_keys` keys or is `max_age` old.
//
// Thread-safe. Losing a batch (a crash) only makes eviction slightly less
// accurate; nothing stored depends on it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace kiln::cache {

struct AccessBatch {
  std::map<std::string, int64_t> last_access_ms; // key -> newest access
  int64_t hits = 0;
  int64_t misses = 0;
  bool empty() const { return last_access_ms.empty() && hits == 0 && misses == 0; }
};

class AccessBatcher {
 public:
  using Clock = std::chrono::steady_clock;
  AccessBatcher(size_t max_keys, std::chrono::milliseconds max_age)
      : max_keys_(max_keys), max_age_(max_age) {}

  // Notes a hit on `key` at wall time `now_ms`. Returns true when the batch is
  // now due (the caller should Take and flush it).
  bool RecordHit(const std::string& key, int64_t now_ms);
  // Returns true when the batch is now due.
  bool RecordMiss();
  bool Due(Clock::time_point now) const;
  // Hands over the pending batch and starts a new one.
  AccessBatch Take();
  // Puts back a batch that could not be flushed (merged with newer entries).
  void Restore(const AccessBatch& batch);

 private:
  bool DueLocked(Clock::time_point now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_keys_;
  const std::chrono::milliseconds max_age_;
  mutable absl::Mutex mu_;
  AccessBatch batch_ ABSL_GUARDED_BY(mu_);
  // When the oldest pending entry arrived.
  Clock::time_point started_ ABSL_GUARDED_BY(mu_);
};

} // namespace kiln::cache
