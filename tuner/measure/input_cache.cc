#include "tuner/measure/input_cache.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::measure {

namespace pb = kiln::v1;

std::string InputCache::KeyFor(const pb::TensorSpec& spec, size_t index) {
  if (spec.has_scalar()) return "";
  switch (spec.init()) {
  case pb::TensorSpec::INIT_RANDOM_UNIFORM:
  case pb::TensorSpec::INIT_RANDOM_NORMAL:
  case pb::TensorSpec::INIT_ONES:
  case pb::TensorSpec::INIT_ARANGE:
    break;
  default:
    return "";
  }
  return absl::StrCat(static_cast<int>(spec.dtype()), "/", static_cast<int>(spec.init()), "/",
                      spec.seed(), "/", index, "/", absl::StrJoin(spec.shape(), "x"));
}

const std::string* InputCache::Find(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return &it->second->data;
}

void InputCache::Insert(const std::string& key, std::string data) {
  if (key.empty() || data.size() > max_bytes_) return;
  if (auto it = index_.find(key); it != index_.end()) {
    bytes_ -= it->second->data.size();
    lru_.erase(it->second);
    index_.erase(it);
  }
  while (!lru_.empty() && bytes_ + data.size() > max_bytes_) {
    bytes_ -= lru_.back().data.size();
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  const size_t size = data.size();
  lru_.push_front(Entry{key, std::move(data)});
  index_[key] = lru_.begin();
  bytes_ += size;
}

} // namespace kiln::measure
