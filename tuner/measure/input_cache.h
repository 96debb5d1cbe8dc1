// Generated kernel inputs kept between worker requests.
//
// A tuning sweep sends every candidate the same argument specs (same shapes,
// init kinds and seed), and generating random fp16 data for a 4096x4096
// operand takes longer than timing the kernel. The cache keeps the generated
// bytes per (dtype, shape, init, seed, argument position), so only the first
// request of a sweep pays for them. Only generated data is cached: INIT_BYTES
// comes with the request and zeros cost nothing to make.
//
// Bounded by bytes; the least recently used entries go first. An entry larger
// than the bound is not kept.
// Thread-safety: none; one worker session drives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <string>

#include "kiln/v1/worker.pb.h"

namespace kiln::measure {

class InputCache {
 public:
  explicit InputCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  // The key of the data `spec` generates at argument position `index`, or
  // "" when that data is not worth caching.
  static std::string KeyFor(const kiln::v1::TensorSpec& spec, size_t index);

  // The cached bytes for `key`, or nullptr. Marks the entry recently used.
  const std::string* Find(const std::string& key);
  // Keeps `data` under `key` (pass an rvalue to hand the bytes over without
  // a copy), evicting old entries to fit.
  void Insert(const std::string& key, std::string data);

  size_t bytes() const { return bytes_; }
  size_t entries() const { return lru_.size(); }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct Entry {
    std::string key;
    std::string data;
  };
  size_t max_bytes_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
  std::list<Entry> lru_; // most recently used first
  std::map<std::string, std::list<Entry>::iterator> index_;
};

} // namespace kiln::measure
