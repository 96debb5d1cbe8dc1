// Kiln CPU runtime: warp shuffles (full mask, width 32) and butterfly warp
// reductions over the 32 lanes' values.
//
// Each function reads lane l's value at in[l * stride] and writes lane l's
// result at out[l * stride]; out may alias in. Lane semantics are those of
// shfl.sync with the full member mask: shfl_xor reads lane l ^ mask and
// shfl_down lane l + delta, and a lane whose source is past lane 31 keeps its
// own value; shfl_idx reads lane (src & 31). shfl_xor uses the mask's low 5
// bits (measured on an H200: mask 33 reads lane ^ 1). Reductions are the butterfly the
// CUDA side runs (xor 16, 8, 4, 2, 1), in the same order, so float sums are
// bit-identical to the GPU; every lane ends with the result. Max/min of floats
// follow fmaxf/fminf (a NaN operand loses); signed zeros are not ordered.
// T is any 32-bit or smaller trivially copyable type. Thread-safe.
#ifndef KILN_CPU_WARP_H_
#define KILN_CPU_WARP_H_

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace kiln {
namespace rt {

constexpr int kWarpSize = 32;

template <typename T>
inline void shfl_xor(T* out, const T* in, unsigned lane_mask, std::ptrdiff_t stride = 1) {
  T v[32];
  for (int l = 0; l < 32; ++l) v[l] = in[l * stride];
  for (unsigned l = 0; l < 32; ++l) {
    const unsigned src = l ^ (lane_mask & 31u); // the hardware reads 5 bits of the mask
    out[l * stride] = src < 32 ? v[src] : v[l];
  }
}

template <typename T>
inline void shfl_down(T* out, const T* in, unsigned delta, std::ptrdiff_t stride = 1) {
  T v[32];
  for (int l = 0; l < 32; ++l) v[l] = in[l * stride];
  for (unsigned l = 0; l < 32; ++l) {
    const unsigned src = l + delta;
    out[l * stride] = src < 32 && src >= l ? v[src] : v[l];
  }
}

// shfl_idx with one source lane for the whole warp.
template <typename T>
inline void shfl_idx(T* out, const T* in, unsigned src_lane, std::ptrdiff_t stride = 1) {
  const T v = in[(src_lane & 31u) * stride];
  for (int l = 0; l < 32; ++l) out[l * stride] = v;
}

// shfl_idx where each lane names its own source lane: src_lane[l * stride].
template <typename T>
inline void shfl_idx(T* out, const T* in, const int* src_lane, std::ptrdiff_t stride = 1) {
  T v[32];
  int src[32];
  for (int l = 0; l < 32; ++l) {
    v[l] = in[l * stride];
    src[l] = src_lane[l * stride] & 31;
  }
  for (int l = 0; l < 32; ++l) out[l * stride] = v[src[l]];
}

namespace detail {

template <typename T, typename Op>
inline void ButterflyReduce(T* vals, std::ptrdiff_t stride, Op op) {
  T v[32];
  for (int l = 0; l < 32; ++l) v[l] = vals[l * stride];
  for (int mask = 16; mask >= 1; mask /= 2) {
    T next[32];
    // Lane l computes op(own, partner) like the GPU code `v = op(v, shfl_xor(v, mask))`.
    for (int l = 0; l < 32; ++l) next[l] = op(v[l], v[l ^ mask]);
    for (int l = 0; l < 32; ++l) v[l] = next[l];
  }
  for (int l = 0; l < 32; ++l) vals[l * stride] = v[l];
}

inline float Add(float a, float b) { return a + b; }
inline int32_t Add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
inline uint32_t Add(uint32_t a, uint32_t b) { return a + b; }
inline float Max(float a, float b) { return std::fmax(a, b); }
inline float Min(float a, float b) { return std::fmin(a, b); }
template <typename T>
inline T Max(T a, T b) {
  return a < b ? b : a;
}
template <typename T>
inline T Min(T a, T b) {
  return b < a ? b : a;
}

} // namespace detail

// In place: every lane's value becomes the warp's sum / max / min. T is
// float, int32_t or uint32_t (integer sums wrap).
template <typename T>
inline void warp_reduce_sum(T* vals, std::ptrdiff_t stride = 1) {
  detail::ButterflyReduce(vals, stride, [](T a, T b) { return detail::Add(a, b); });
}
template <typename T>
inline void warp_reduce_max(T* vals, std::ptrdiff_t stride = 1) {
  detail::ButterflyReduce(vals, stride, [](T a, T b) { return detail::Max(a, b); });
}
template <typename T>
inline void warp_reduce_min(T* vals, std::ptrdiff_t stride = 1) {
  detail::ButterflyReduce(vals, stride, [](T a, T b) { return detail::Min(a, b); });
}

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_WARP_H_
