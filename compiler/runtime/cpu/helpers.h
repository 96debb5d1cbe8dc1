// Kiln CPU runtime: small helpers generated code uses on both targets:
// ceildiv, the shared-memory swizzle, fast math. (The block barrier,
// sync_threads, is the fiber scheduler's: kiln/cpu/thread_ops.h.)
//
// fast_exp2/fast_rsqrt are the exact
// library functions here, while the GPU uses ex2.approx/rsqrt.approx (2 ulp
// or so), so results that go through them are compared with a tolerance.
// All functions are pure and thread-safe.
#ifndef KILN_CPU_HELPERS_H_
#define KILN_CPU_HELPERS_H_

#include <cmath>

namespace kiln {
namespace rt {

// ceil(a / b) for a >= 0, b > 0.
template <typename T>
constexpr T ceildiv(T a, T b) {
  return (a + b - 1) / b;
}

// Element offset of (row, col) in a row-major shared-memory tile of
// `row_elems` elements of `elem_bytes` bytes per row, whose 16-byte chunks
// are XOR-swizzled inside each `swizzle_bytes`-wide segment of a row (32, 64
// or 128 bytes, like the TMA swizzle modes): chunk c of row r is stored at
// chunk c ^ (r % (swizzle_bytes / 16)). With 128-byte rows of f16 this makes
// the eight rows that ldmatrix or a 16-byte cp.async touch hit distinct bank
// groups. Requires row_elems * elem_bytes to be a multiple of swizzle_bytes
// and elem_bytes <= 16; within such a tile the map is a bijection.
constexpr int swizzle_offset(int row, int col, int row_elems, int elem_bytes, int swizzle_bytes) {
  const int byte = col * elem_bytes;
  const int chunk = (byte / 16) ^ (row % (swizzle_bytes / 16));
  return row * row_elems + (chunk * 16 + byte % 16) / elem_bytes;
}

inline float fast_exp2(float x) { return std::exp2(x); }
inline float fast_rsqrt(float x) { return 1.0f / std::sqrt(x); }

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_HELPERS_H_
