#include "cache/access_batcher.h"

#include <algorithm>
#include <utility>

namespace kiln::cache {

bool AccessBatcher::RecordHit(const std::string& key, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  const Clock::time_point now = Clock::now();
  if (batch_.empty()) started_ = now;
  int64_t& t = batch_.last_access_ms[key];
  t = std::max(t, now_ms);
  ++batch_.hits;
  return DueLocked(now);
}

bool AccessBatcher::RecordMiss() {
  absl::MutexLock lock(&mu_);
  const Clock::time_point now = Clock::now();
  if (batch_.empty()) started_ = now;
  ++batch_.misses;
  return DueLocked(now);
}

bool AccessBatcher::Due(Clock::time_point now) const {
  absl::MutexLock lock(&mu_);
  return DueLocked(now);
}

bool AccessBatcher::DueLocked(Clock::time_point now) const {
  if (batch_.empty()) return false;
  return batch_.last_access_ms.size() >= max_keys_ || now - started_ >= max_age_;
}

AccessBatch AccessBatcher::Take() {
  absl::MutexLock lock(&mu_);
  AccessBatch out = std::move(batch_);
  batch_ = AccessBatch();
  return out;
}

void AccessBatcher::Restore(const AccessBatch& batch) {
  absl::MutexLock lock(&mu_);
  if (batch_.empty()) started_ = Clock::now();
  for (const auto& [key, ms] : batch.last_access_ms) {
    int64_t& t = batch_.last_access_ms[key];
    t = std::max(t, ms);
  }
  batch_.hits += batch.hits;
  batch_.misses += batch.misses;
}

} // namespace kiln::cache
