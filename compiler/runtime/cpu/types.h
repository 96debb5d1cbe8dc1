// Kiln CPU runtime: scalar types of the thread-level program and their
// conversions, bit-exact with the GPU's cvt instructions.
//
// Generated host C++ includes this (through kiln/cpu/runtime.h) to emulate one
// thread block. Every conversion rounds to nearest even like PTX cvt.rn, so a
// program's numerics on the CPU target match the GPU wherever the hardware is
// exact. NaN inputs give the canonical NaN of the target format (0x7fff for
// f16/bf16, 0x7f for fp8); the GPU may keep a NaN payload, so compare NaNs by
// kind, not by bits. Plain C++17, no dependencies beyond the C++ library;
// every function is pure and thread-safe.
#ifndef KILN_CPU_TYPES_H_
#define KILN_CPU_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kiln {
namespace rt {

// 16- and 8-bit floating-point storage types. They hold bits only: arithmetic
// happens in float after an explicit conversion, as on the GPU.
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

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

namespace detail {

// Rounds |f| (finite, bits `mag`) to a float format with `man` mantissa bits
// and exponent bias `bias`, to nearest even, gradual underflow included, and
// returns the magnitude code (exponent and mantissa fields, no sign). The code
// may exceed the largest finite code; callers saturate or map it to inf.
// Codes are contiguous across the subnormal/normal boundary and across
// binades, so a mantissa carry simply bumps the exponent.
inline uint32_t RoundMagnitude(uint32_t mag, int man, int bias) {
  int exp_field = static_cast<int>(mag >> 23);
  int e = exp_field == 0 ? -126 : exp_field - 127;
  uint32_t mant = (mag & 0x7fffffu) | (exp_field == 0 ? 0u : 0x800000u);
  const int emin = 1 - bias;
  const int E = e < emin ? emin : e;
  // Quantum of the target at exponent E is 2^(E - man); mant is in units of
  // 2^(e - 23).
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

} // namespace detail

// float -> f16, round to nearest even; overflow gives +-inf (cvt.rn.f16.f32).
inline half_t float_to_half(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t mag = u & 0x7fffffffu;
  if (mag >= 0x38800000u && mag < 0x47800000u) {
    // A normal half (2^-14 <= |f| < 2^16), the common case: rebias the
    // exponent (127 -> 15) and round the 13 dropped mantissa bits in one add
    // (0xfff, plus 1 when the kept part is odd, carries exactly when the
    // dropped part is above the midpoint, or at it with an odd kept part);
    // a carry out of the mantissa bumps the exponent, up to inf from 65520.
    const uint32_t odd = (mag >> 13) & 1u;
    const uint32_t code = (mag - 0x38000000u + 0x0fffu + odd) >> 13;
    return half_t{static_cast<uint16_t>(sign | code)};
  }
  if (mag > 0x7f800000u) return half_t{0x7fff};
  if (mag == 0x7f800000u) return half_t{static_cast<uint16_t>(sign | 0x7c00u)};
  uint32_t code = detail::RoundMagnitude(mag, 10, 15);
  if (code > 0x7c00u) code = 0x7c00u;
  return half_t{static_cast<uint16_t>(sign | code)};
}

// f16 -> float, exact.
inline float half_to_float(half_t h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exp = (h.bits >> 10) & 0x1fu;
  uint32_t man = h.bits & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
  if (man == 0) return bits_float(sign);
  // Subnormal: normalize into a float exponent.
  int e = -14;
  while ((man & 0x400u) == 0) {
    man <<= 1;
    --e;
  }
  return bits_float(sign | (static_cast<uint32_t>(e + 127) << 23) | ((man & 0x3ffu) << 13));
}

// float -> bf16, round to nearest even; overflow gives +-inf (cvt.rn.bf16.f32).
inline bfloat16_t float_to_bfloat16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return bfloat16_t{0x7fff};
  if (mag == 0x7f800000u) return bfloat16_t{static_cast<uint16_t>(sign | 0x7f80u)};
  uint32_t code = detail::RoundMagnitude(mag, 7, 127);
  if (code > 0x7f80u) code = 0x7f80u;
  return bfloat16_t{static_cast<uint16_t>(sign | code)};
}

// bf16 -> float, exact (bf16 is the top half of a float).
inline float bfloat16_to_float(bfloat16_t b) {
  return bits_float(static_cast<uint32_t>(b.bits) << 16);
}

// float -> fp8 e4m3 as cvt.rn.satfinite.e4m3x2.f32: round to nearest even,
// finite overflow and +-inf saturate to +-448, NaN gives 0x7f.
inline fp8_e4m3_t float_to_e4m3(float f) {
  const uint32_t u = float_bits(f);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  const uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return fp8_e4m3_t{0x7f};
  uint32_t code = mag == 0x7f800000u ? 0x7eu : detail::RoundMagnitude(mag, 3, 7);
  if (code > 0x7eu) code = 0x7eu;
  return fp8_e4m3_t{static_cast<uint8_t>(sign | code)};
}

// float -> fp8 e5m2 as cvt.rn.satfinite.e5m2x2.f32: finite overflow and
// +-inf saturate to +-57344, NaN gives 0x7f.
inline fp8_e5m2_t float_to_e5m2(float f) {
  const uint32_t u = float_bits(f);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  const uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return fp8_e5m2_t{0x7f};
  uint32_t code = mag == 0x7f800000u ? 0x7bu : detail::RoundMagnitude(mag, 2, 15);
  if (code > 0x7bu) code = 0x7bu;
  return fp8_e5m2_t{static_cast<uint8_t>(sign | code)};
}

// fp8 e4m3 -> float, exact. 0x7f/0xff are NaN; e4m3 has no infinity.
inline float e4m3_to_float(fp8_e4m3_t v) {
  const uint32_t sign = static_cast<uint32_t>(v.bits & 0x80u) << 24;
  const uint32_t exp = (v.bits >> 3) & 0xfu;
  const uint32_t man = v.bits & 0x7u;
  if (exp == 0xf && man == 0x7) return bits_float(sign | 0x7fffffffu);
  if (exp == 0) {
    // Subnormal: man * 2^-9, exact in float.
    const float m = static_cast<float>(man) * (1.0f / 512.0f);
    return sign ? -m : m;
  }
  return bits_float(sign | ((exp + 120u) << 23) | (man << 20));
}

// fp8 e5m2 -> float, exact (e5m2 is the top byte of an f16).
inline float e5m2_to_float(fp8_e5m2_t v) {
  return half_to_float(half_t{static_cast<uint16_t>(v.bits << 8)});
}

// float -> tf32 as cvt.rna.tf32.f32: keeps 10 mantissa bits, rounding to
// nearest with ties away from zero; the low 13 bits of the result are zero.
// Inf and NaN are truncated instead, as an H200 does: a NaN whose payload
// lies only in the low 13 bits becomes inf.
inline float tf32_round(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7f800000u) == 0x7f800000u) return bits_float(u & 0xffffe000u);
  u += 0x1000u; // half of the dropped 13 bits: ties go away from zero
  u &= 0xffffe000u;
  return bits_float(u);
}

// Packs two 16-bit values into one 32-bit register, `lo` in bits 0..15, as
// the .f16x2/.bf16x2 register of the PTX ISA holds the lower-indexed element.
inline uint32_t pack_b16x2(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}
inline uint32_t pack_half2(half_t lo, half_t hi) { return pack_b16x2(lo.bits, hi.bits); }
inline uint32_t pack_bfloat162(bfloat16_t lo, bfloat16_t hi) {
  return pack_b16x2(lo.bits, hi.bits);
}
inline uint16_t b16_lo(uint32_t r) { return static_cast<uint16_t>(r & 0xffffu); }
inline uint16_t b16_hi(uint32_t r) { return static_cast<uint16_t>(r >> 16); }

// Packs four 8-bit values, element 0 in bits 0..7.
inline uint32_t pack_b8x4(uint8_t e0, uint8_t e1, uint8_t e2, uint8_t e3) {
  return static_cast<uint32_t>(e0) | (static_cast<uint32_t>(e1) << 8) |
         (static_cast<uint32_t>(e2) << 16) | (static_cast<uint32_t>(e3) << 24);
}

// The per-lane registers of one warp: lane l's register i is
// base[l * lane_stride + i]. Codegen keeps per-thread registers in arrays
// indexed by thread, e.g. `float acc[kThreads][8]`; the view of warp w's
// registers 4..7 is WarpRegs<float>(&acc[w * 32][4], 8).
template <typename T>
struct WarpRegs {
  T* base;
  std::ptrdiff_t lane_stride;

  WarpRegs(T* b, std::ptrdiff_t stride) : base(b), lane_stride(stride) {}
  template <std::size_t N>
  WarpRegs(T (&regs)[32][N]) : base(&regs[0][0]), lane_stride(N) {} // NOLINT
  WarpRegs(T (&regs)[32]) : base(&regs[0]), lane_stride(1) {}       // NOLINT
  // A view of mutable registers also reads as a view of const ones.
  template <typename U>
  WarpRegs(const WarpRegs<U>& o) : base(o.base), lane_stride(o.lane_stride) {} // NOLINT

  T& operator()(int lane, int i) const { return base[lane * lane_stride + i]; }
};

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_TYPES_H_
