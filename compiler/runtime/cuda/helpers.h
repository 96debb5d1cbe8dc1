// Kiln CUDA runtime: barriers, ceildiv, the shared-memory swizzle and fast
// math, with the same names as the CPU twin (kiln/cpu/helpers.h).
//
// fast_exp2 and fast_rsqrt are the approximate ex2/rsqrt instructions
// (flush-to-zero); the CPU twin is exact, so compare their results with a
// tolerance.
#ifndef KILN_CUDA_HELPERS_H_
#define KILN_CUDA_HELPERS_H_

#include "kiln/cuda/types.h"

namespace kiln {
namespace rt {

KILN_DEVICE void sync_threads() { __syncthreads(); }

// ceil(a / b) for a >= 0, b > 0.
template <typename T>
__host__ __device__ constexpr T ceildiv(T a, T b) {
  return (a + b - 1) / b;
}

// Element offset of (row, col) in a row-major tile whose 16-byte chunks are
// XOR-swizzled within each `swizzle_bytes`-wide segment (32, 64 or 128) by
// the row: chunk c of row r is stored at chunk c ^ (r % (swizzle_bytes/16)).
// See kiln/cpu/helpers.h for the requirements.
__host__ __device__ constexpr int swizzle_offset(int row, int col, int row_elems, int elem_bytes,
                                                 int swizzle_bytes) {
  return row * row_elems + ((((col * elem_bytes) / 16) ^ (row % (swizzle_bytes / 16))) * 16 +
                            (col * elem_bytes) % 16) /
                               elem_bytes;
}

KILN_DEVICE float fast_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
KILN_DEVICE float fast_rsqrt(float x) {
  float r;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

} // namespace rt
} // namespace kiln

#endif // KILN_CUDA_HELPERS_H_
