// Kiln CPU runtime: warp-wide emulation of mma.sync.aligned (m16n8k16 f16 and
// bf16, m16n8k8 tf32, m16n8k32 s8), with the PTX ISA's fragment layouts.
//
// One call computes D = A * B + C for a whole warp from the 32 lanes'
// registers (WarpRegs views), exactly as the instruction distributes them:
// with g = lane / 4 and t = lane % 4,
//   f16/bf16 A (16x16, row): reg r holds (row g + 8*(r&1), cols 2t + 8*(r>>1) + {0,1})
//   f16/bf16 B (16x8,  col): reg r holds (rows 2t + 8*r + {0,1}, col g)
//   tf32 A (16x8): reg r holds (row g + 8*(r&1), col t + 4*(r>>1))
//   tf32 B (8x8):  reg r holds (row t + 4*r, col g)
//   s8 A (16x32):  reg r holds (row g + 8*(r&1), cols 4t + 16*(r>>1) + {0..3})
//   s8 B (32x8):   reg r holds (rows 4t + 16*r + {0..3}, col g)
//   C/D (16x8):    reg r holds (row g + 8*(r>>1), col 2t + (r&1))
// Packed elements: the lower index sits in the lower bits.
//
// Numerics: every product of f16, bf16 or tf32 inputs is exact in float; the
// sum runs in float in a fixed order (c, then k = 0, 1, ...), so it is
// deterministic but can differ from a tensor core in the last bits. tf32
// inputs are read with their low 13 bits ignored, as the hardware does. s8
// sums wrap modulo 2^32 like the instruction without .satfinite.
// D may alias C. Thread-safe as long as callers do not share output views.
#ifndef KILN_CPU_MMA_H_
#define KILN_CPU_MMA_H_

#include <cstdint>

#include "kiln/cpu/types.h"

namespace kiln {
namespace rt {
namespace detail {

// Accumulator element (row, col) -> (lane, reg) of the 16x8 C/D fragment.
inline int AccLane(int row, int col) { return (row % 8) * 4 + col / 2; }
inline int AccReg(int row, int col) { return (row / 8) * 2 + col % 2; }

// Computes the f32-accumulating 16x8xK product from logical A (16xK) and B
// (Kx8) tiles already in float.
template <int K>
inline void MmaFloatTiles(WarpRegs<float> d, const float (&a)[16][K], const float (&b)[K][8],
                          WarpRegs<const float> c) {
  float out[16][8];
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      float acc = c(AccLane(m, n), AccReg(m, n));
      for (int k = 0; k < K; ++k) acc += a[m][k] * b[k][n];
      out[m][n] = acc;
    }
  }
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) d(AccLane(m, n), AccReg(m, n)) = out[m][n];
}

template <typename ToFloat>
inline void MmaM16n8k16B16(WarpRegs<float> d, WarpRegs<const uint32_t> a,
                           WarpRegs<const uint32_t> b, WarpRegs<const float> c, ToFloat to_float) {
  float ta[16][16];
  float tb[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int r = 0; r < 4; ++r) {
      const int row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
      ta[row][col] = to_float(b16_lo(a(lane, r)));
      ta[row][col + 1] = to_float(b16_hi(a(lane, r)));
    }
    for (int r = 0; r < 2; ++r) {
      const int row = 2 * t + 8 * r;
      tb[row][g] = to_float(b16_lo(b(lane, r)));
      tb[row + 1][g] = to_float(b16_hi(b(lane, r)));
    }
  }
  MmaFloatTiles<16>(d, ta, tb, c);
}

} // namespace detail

// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32: a [32][4], b [32][2]
// (f16x2 registers), c and d [32][4] floats.
inline void mma_m16n8k16_f16(WarpRegs<float> d, WarpRegs<const uint32_t> a,
                             WarpRegs<const uint32_t> b, WarpRegs<const float> c) {
  detail::MmaM16n8k16B16(d, a, b, c, [](uint16_t v) { return half_to_float(half_t{v}); });
}

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32: as above with bf16x2.
inline void mma_m16n8k16_bf16(WarpRegs<float> d, WarpRegs<const uint32_t> a,
                              WarpRegs<const uint32_t> b, WarpRegs<const float> c) {
  detail::MmaM16n8k16B16(d, a, b, c, [](uint16_t v) { return bfloat16_to_float(bfloat16_t{v}); });
}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: a [32][4], b [32][2]
// (one tf32 per register, float bits), c and d [32][4] floats.
inline void mma_m16n8k8_tf32(WarpRegs<float> d, WarpRegs<const uint32_t> a,
                             WarpRegs<const uint32_t> b, WarpRegs<const float> c) {
  float ta[16][8];
  float tb[8][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int r = 0; r < 4; ++r)
      ta[g + 8 * (r & 1)][t + 4 * (r >> 1)] = bits_float(a(lane, r) & 0xffffe000u);
    for (int r = 0; r < 2; ++r) tb[t + 4 * r][g] = bits_float(b(lane, r) & 0xffffe000u);
  }
  detail::MmaFloatTiles<8>(d, ta, tb, c);
}

// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32: a [32][4], b [32][2]
// (four s8 per register), c and d [32][4] int32.
inline void mma_m16n8k32_s8(WarpRegs<int32_t> d, WarpRegs<const uint32_t> a,
                            WarpRegs<const uint32_t> b, WarpRegs<const int32_t> c) {
  int32_t ta[16][32];
  int32_t tb[32][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int r = 0; r < 4; ++r)
      for (int e = 0; e < 4; ++e)
        ta[g + 8 * (r & 1)][4 * t + 16 * (r >> 1) + e] =
            static_cast<int8_t>((a(lane, r) >> (8 * e)) & 0xffu);
    for (int r = 0; r < 2; ++r)
      for (int e = 0; e < 4; ++e)
        tb[4 * t + 16 * r + e][g] = static_cast<int8_t>((b(lane, r) >> (8 * e)) & 0xffu);
  }
  int32_t out[16][8];
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      // Unsigned arithmetic: wraps like the hardware instead of overflowing.
      uint32_t acc = static_cast<uint32_t>(c(detail::AccLane(m, n), detail::AccReg(m, n)));
      for (int k = 0; k < 32; ++k) acc += static_cast<uint32_t>(ta[m][k] * tb[k][n]);
      out[m][n] = static_cast<int32_t>(acc);
    }
  }
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) d(detail::AccLane(m, n), detail::AccReg(m, n)) = out[m][n];
}

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_MMA_H_
