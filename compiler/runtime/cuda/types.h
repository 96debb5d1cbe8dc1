// Kiln CUDA runtime: scalar types of the thread-level program and their
// conversions, as single PTX cvt instructions.
//
// Generated CUDA C++ includes this (through kiln/cuda/runtime.h). It must
// compile under NVRTC with no system or toolkit headers, so it defines its own
// fixed-width integers and 16/8-bit float storage types instead of using
// cuda_fp16.h. Storage types hold bits only; arithmetic happens in float after
// an explicit conversion. The host twin is kiln/cpu/types.h, which matches
// these conversions bit for bit (NaN payloads aside). fp8 conversions use the
// sm_89 cvt instructions where they exist and an exact software rounding
// (the CPU runtime's algorithm) below sm_89. Requires sm_80 or newer.
#ifndef KILN_CUDA_TYPES_H_
#define KILN_CUDA_TYPES_H_

#define KILN_DEVICE __device__ __forceinline__
#define KILN_HOST_DEVICE __host__ __device__ __forceinline__

namespace kiln {
namespace rt {

typedef unsigned char uint8_t;
typedef signed char int8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;

struct half_t {
  uint16_t bits;
};
struct bfloat16_t {
  uint16_t bits;
};
struct fp8_e4m3_t {
  uint8_t bits;
};
struct fp8_e5m2_t {
  uint8_t bits;
};

KILN_DEVICE uint32_t float_bits(float f) {
  uint32_t u;
  asm("mov.b32 %0, %1;" : "=r"(u) : "f"(f));
  return u;
}
KILN_DEVICE float bits_float(uint32_t u) {
  float f;
  asm("mov.b32 %0, %1;" : "=f"(f) : "r"(u));
  return f;
}

// cvt.rn.f16.f32: round to nearest even, overflow to +-inf.
KILN_DEVICE half_t float_to_half(float f) {
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  half_t r = {h};
  return r;
}
KILN_DEVICE float half_to_float(half_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
}

// cvt.rn.bf16.f32 (sm_80): round to nearest even, overflow to +-inf.
KILN_DEVICE bfloat16_t float_to_bfloat16(float f) {
  uint16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  bfloat16_t r = {h};
  return r;
}
KILN_DEVICE float bfloat16_to_float(bfloat16_t b) {
  return bits_float(static_cast<uint32_t>(b.bits) << 16);
}

namespace detail {

// Software round-to-nearest-even of a finite float magnitude to a format with
// `man` mantissa bits and bias `bias`; see kiln/cpu/types.h.
KILN_DEVICE uint32_t RoundMagnitude(uint32_t mag, int man, int bias) {
  int exp_field = static_cast<int>(mag >> 23);
  int e = exp_field == 0 ? -126 : exp_field - 127;
  uint32_t mant = (mag & 0x7fffffu) | (exp_field == 0 ? 0u : 0x800000u);
  const int emin = 1 - bias;
  const int E = e < emin ? emin : e;
  const int shift = 23 - man + (E - e);
  uint32_t n;
  if (shift >= 32) {
    n = 0;
  } else {
    n = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (n & 1u))) ++n;
  }
  return (static_cast<uint32_t>(E + bias - 1) << man) + n;
}

KILN_DEVICE uint8_t FloatToFp8Soft(float f, int man, int bias, uint32_t max_code) {
  const uint32_t u = float_bits(f);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  const uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return 0x7f;
  uint32_t code = mag == 0x7f800000u ? max_code : RoundMagnitude(mag, man, bias);
  if (code > max_code) code = max_code;
  return static_cast<uint8_t>(sign | code);
}

} // namespace detail

// cvt.rn.satfinite.e4m3x2.f32: saturates to +-448, NaN -> 0x7f.
KILN_DEVICE fp8_e4m3_t float_to_e4m3(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint16_t pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
  fp8_e4m3_t r = {static_cast<uint8_t>(pair & 0xffu)};
#else
  fp8_e4m3_t r = {detail::FloatToFp8Soft(f, 3, 7, 0x7eu)};
#endif
  return r;
}

// cvt.rn.satfinite.e5m2x2.f32: saturates to +-57344, NaN -> 0x7f.
KILN_DEVICE fp8_e5m2_t float_to_e5m2(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint16_t pair;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
  fp8_e5m2_t r = {static_cast<uint8_t>(pair & 0xffu)};
#else
  fp8_e5m2_t r = {detail::FloatToFp8Soft(f, 2, 15, 0x7bu)};
#endif
  return r;
}

// Exact fp8 -> float.
KILN_DEVICE float e4m3_to_float(fp8_e4m3_t v) {
  const uint32_t sign = static_cast<uint32_t>(v.bits & 0x80u) << 24;
  const uint32_t exp = (v.bits >> 3) & 0xfu;
  const uint32_t man = v.bits & 0x7u;
  if (exp == 0xf && man == 0x7) return bits_float(sign | 0x7fffffffu);
  if (exp == 0) {
    const float m = static_cast<float>(man) * (1.0f / 512.0f);
    return sign ? -m : m;
  }
  return bits_float(sign | ((exp + 120u) << 23) | (man << 20));
}
KILN_DEVICE float e5m2_to_float(fp8_e5m2_t v) {
  half_t h = {static_cast<uint16_t>(v.bits << 8)};
  return half_to_float(h);
}

// cvt.rna.tf32.f32 (sm_80): 10 mantissa bits, ties away from zero; inf and
// NaN are truncated (a NaN with payload only in the low 13 bits gives inf).
KILN_DEVICE float tf32_round(float f) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
  return bits_float(r);
}

// Packing as in .f16x2/.bf16x2 registers: the lower-indexed element in the
// lower 16 bits.
KILN_HOST_DEVICE uint32_t pack_b16x2(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}
KILN_HOST_DEVICE uint32_t pack_half2(half_t lo, half_t hi) { return pack_b16x2(lo.bits, hi.bits); }
KILN_HOST_DEVICE uint32_t pack_bfloat162(bfloat16_t lo, bfloat16_t hi) {
  return pack_b16x2(lo.bits, hi.bits);
}
KILN_HOST_DEVICE uint16_t b16_lo(uint32_t r) { return static_cast<uint16_t>(r & 0xffffu); }
KILN_HOST_DEVICE uint16_t b16_hi(uint32_t r) { return static_cast<uint16_t>(r >> 16); }
KILN_HOST_DEVICE uint32_t pack_b8x4(uint8_t e0, uint8_t e1, uint8_t e2, uint8_t e3) {
  return static_cast<uint32_t>(e0) | (static_cast<uint32_t>(e1) << 8) |
         (static_cast<uint32_t>(e2) << 16) | (static_cast<uint32_t>(e3) << 24);
}

// Shared-memory window address of a generic pointer into shared memory, as
// ldmatrix and cp.async take it. The compiler's builtin (NVRTC and nvcc
// declare it without a header), not inline PTX: it sees through it, so the
// address of a tile at a constant offset is a 32-bit add to the window's
// base rather than a 64-bit generic pointer kept live (and spilled) until
// its conversion.
KILN_DEVICE uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

} // namespace rt
} // namespace kiln

#endif // KILN_CUDA_TYPES_H_
