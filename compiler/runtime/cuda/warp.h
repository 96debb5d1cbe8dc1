// Kiln CUDA runtime: warp shuffles with the full member mask and width 32,
// and butterfly warp reductions built on them.
//
// shfl_xor reads lane (lane ^ mask), shfl_down lane (lane + delta), keeping
// the own value where the source is past lane 31; shfl_idx reads lane
// (src & 31). Reductions run xor 16, 8, 4, 2, 1 with `v = op(v, partner)`,
// so every lane ends with the result and float sums round identically to the
// CPU twin (kiln/cpu/warp.h). All 32 lanes must execute these convergently.
#ifndef KILN_CUDA_WARP_H_
#define KILN_CUDA_WARP_H_

#include "kiln/cuda/types.h"

namespace kiln {
namespace rt {

constexpr int kWarpSize = 32;

KILN_DEVICE uint32_t lane_id() {
  uint32_t l;
  asm("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}

// The c operand 0x1f is width 32 (clamp lane 31, no segments), as
// __shfl_*_sync(0xffffffff, v, x, 32) uses for down, xor and idx.
#define KILN_RT_SHFL(NAME, MODE, TYPE, CONSTRAINT)                                                 \
  KILN_DEVICE TYPE NAME(TYPE v, uint32_t x) {                                                      \
    TYPE r;                                                                                        \
    asm volatile("shfl.sync." MODE ".b32 %0, %1, %2, 0x1f, 0xffffffff;"                            \
                 : "=" CONSTRAINT(r)                                                               \
                 : CONSTRAINT(v), "r"(x));                                                         \
    return r;                                                                                      \
  }
KILN_RT_SHFL(shfl_xor, "bfly", float, "f")
KILN_RT_SHFL(shfl_xor, "bfly", int32_t, "r")
KILN_RT_SHFL(shfl_xor, "bfly", uint32_t, "r")
KILN_RT_SHFL(shfl_down, "down", float, "f")
KILN_RT_SHFL(shfl_down, "down", int32_t, "r")
KILN_RT_SHFL(shfl_down, "down", uint32_t, "r")
KILN_RT_SHFL(shfl_idx, "idx", float, "f")
KILN_RT_SHFL(shfl_idx, "idx", int32_t, "r")
KILN_RT_SHFL(shfl_idx, "idx", uint32_t, "r")
#undef KILN_RT_SHFL

namespace detail {
KILN_DEVICE float Add(float a, float b) {
  float r;
  asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); // never contracted into an fma
  return r;
}
KILN_DEVICE int32_t Add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
KILN_DEVICE uint32_t Add(uint32_t a, uint32_t b) { return a + b; }
KILN_DEVICE float Max(float a, float b) {
  float r;
  asm("max.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
KILN_DEVICE float Min(float a, float b) {
  float r;
  asm("min.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
KILN_DEVICE int32_t Max(int32_t a, int32_t b) { return a < b ? b : a; }
KILN_DEVICE int32_t Min(int32_t a, int32_t b) { return b < a ? b : a; }
KILN_DEVICE uint32_t Max(uint32_t a, uint32_t b) { return a < b ? b : a; }
KILN_DEVICE uint32_t Min(uint32_t a, uint32_t b) { return b < a ? b : a; }
} // namespace detail

// T is float, int32_t or uint32_t.
template <typename T>
KILN_DEVICE T warp_reduce_sum(T v) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask /= 2) v = detail::Add(v, shfl_xor(v, mask));
  return v;
}
template <typename T>
KILN_DEVICE T warp_reduce_max(T v) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask /= 2) v = detail::Max(v, shfl_xor(v, mask));
  return v;
}
template <typename T>
KILN_DEVICE T warp_reduce_min(T v) {
#pragma unroll
  for (int mask = 16; mask >= 1; mask /= 2) v = detail::Min(v, shfl_xor(v, mask));
  return v;
}

} // namespace rt
} // namespace kiln

#endif // KILN_CUDA_WARP_H_
