// Benchmark support: deterministic incompressible bytes (xorshift64 from
// `seed`), so runs are repeatable and compression or dedup cannot flatter
// them. Header-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::bench {

inline std::string RandomBytes(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return s;
}

} // namespace kiln::bench
