// Kiln CPU runtime: emulation of Hopper's warpgroup MMA
// (wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16} and
// m64nNk32.f32.{e4m3,e5m2}) with both operands in shared memory, read
// through 64-bit matrix descriptors exactly as the PTX ISA describes them,
// or, 16-bit only, with A in registers (the register form). The per-lane
// wrappers that generated code calls are in kiln/cpu/thread_ops.h; the CUDA
// twins are kiln/cuda/wgmma.h, wgmma_rs.h and wgmma_fp8.h.
//
// Descriptor (smem_desc): start address >> 4 in bits 0-13, leading byte
// offset (LBO) >> 4 in bits 16-29, stride byte offset (SBO) >> 4 in bits
// 32-45, swizzle mode in bits 62-63 (1 = 128-byte, 2 = 64-byte, 3 =
// 32-byte; 0, no swizzle, is not used by Kiln and is rejected). Addresses
// are offsets in the block's shared memory window (the CPU's dyn_smem() is
// 1024-byte aligned like the GPU's, so the swizzle, which acts on address
// bits, sees the same bits).
//
// One instruction's K is 32 bytes of elements: K = 16 for the 16-bit types,
// 32 for fp8. With B = the element size in bytes (2, or 1 for fp8), S = the
// swizzle width in bytes (128/64/32) and E = S / B elements, element (mn, k)
// of an operand (A: mn = row m; B: mn = column n) lies at byte
//   K-major  (trans 0): start + (mn / 8) * SBO + (mn % 8) * S + B k
//   MN-major (trans 1): start + (mn / E) * LBO + (k / 8) * SBO + (k % 8) * S + B (mn % E)
// before the swizzle, which XORs the 16-byte chunk bits of the address
// (bits 4..) with its bits 7.. (3 bits for 128-byte, 2 for 64, 1 for 32).
// fp8 operands are K-major only (the PTX instruction has no transpose).
//
// D fragment (f32, per thread of the warpgroup): warp w covers rows
// 16w..16w+15; register 4j + r of lane (g = lane / 4, t = lane % 4) holds
// (row 16w + g + 8 (r / 2), col 8j + 2t + r % 2): the m16n8 accumulator
// table repeated every 8 columns.
//
// Numerics as kiln/cpu/mma.h: products of 16-bit and of fp8 inputs are
// exact in float; sums run in float in a fixed order (c, then k = 0..K-1).
// The computation of a warp's 16 rows needs only its own A rows and all of
// B, so the emulation runs per warp (warp % 4 of the block is the warp's
// place in its warpgroup); fence, commit and wait have nothing to do
// because the product is complete at issue (one execution the GPU allows:
// a valid program reads the accumulators only after a wait covering them).
#ifndef KILN_CPU_WGMMA_H_
#define KILN_CPU_WGMMA_H_

#include <cstdint>
#include <cstring>

#include "kiln/cpu/types.h"

namespace kiln {
namespace rt {

struct SmemDesc {
  uint32_t start = 0; // byte offset in shared memory
  uint32_t lbo = 0, sbo = 0;
  int swizzle = 0; // 1: 128-byte, 2: 64-byte, 3: 32-byte
};

inline uint64_t make_smem_desc(uint32_t offset, int lbo, int sbo, int swizzle) {
  return ((static_cast<uint64_t>(offset) & 0x3ffffu) >> 4) |
         (static_cast<uint64_t>((lbo >> 4) & 0x3fff) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3fff) << 32) |
         (static_cast<uint64_t>(swizzle & 3) << 62);
}

inline SmemDesc decode_smem_desc(uint64_t d) {
  SmemDesc s;
  s.start = static_cast<uint32_t>(d & 0x3fffu) << 4;
  s.lbo = static_cast<uint32_t>((d >> 16) & 0x3fffu) << 4;
  s.sbo = static_cast<uint32_t>((d >> 32) & 0x3fffu) << 4;
  s.swizzle = static_cast<int>((d >> 62) & 3u);
  return s;
}

// Swizzle width in bytes of a descriptor's mode (0 for no swizzle).
inline int smem_desc_swizzle_bytes(int mode) {
  return mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0;
}

// The operand element types: half_t, bfloat16_t, fp8_e4m3_t, fp8_e5m2_t
// (A and B have the same one). One instruction's K is 32 bytes of them.
template <typename T>
constexpr int wgmma_k = 32 / static_cast<int>(sizeof(T));

inline float wgmma_elem_to_float(half_t v) { return half_to_float(v); }
inline float wgmma_elem_to_float(bfloat16_t v) { return bfloat16_to_float(v); }
inline float wgmma_elem_to_float(fp8_e4m3_t v) { return e4m3_to_float(v); }
inline float wgmma_elem_to_float(fp8_e5m2_t v) { return e5m2_to_float(v); }

// Byte offset of operand element (mn, k) under `d` (mode 1..3), swizzled,
// for elements of `elem_bytes` bytes (2, or 1 for fp8).
inline uint32_t wgmma_operand_offset(const SmemDesc& d, bool mn_major, int mn, int k,
                                     int elem_bytes) {
  const uint32_t s = static_cast<uint32_t>(smem_desc_swizzle_bytes(d.swizzle));
  const uint32_t b = static_cast<uint32_t>(elem_bytes);
  const uint32_t e = s / b;
  const uint32_t umn = static_cast<uint32_t>(mn), uk = static_cast<uint32_t>(k);
  uint32_t o = mn_major
                   ? d.start + (umn / e) * d.lbo + (uk / 8) * d.sbo + (uk % 8) * s + b * (umn % e)
                   : d.start + (umn / 8) * d.sbo + (umn % 8) * s + b * uk;
  const uint32_t bits = d.swizzle == 1 ? 3u : d.swizzle == 2 ? 2u : 1u;
  return o ^ (((o >> 7) & ((1u << bits) - 1u)) << 4);
}

// Operand element (mn, k) of type T under `d` as a float, from the shared
// memory window `smem` of `smem_bytes`; false when it lies outside.
template <typename T>
inline bool wgmma_operand_elem(const SmemDesc& d, bool mn_major, int mn, int k,
                               const unsigned char* smem, uint32_t smem_bytes, float* out) {
  const uint32_t o = wgmma_operand_offset(d, mn_major, mn, k, static_cast<int>(sizeof(T)));
  if (o + sizeof(T) > smem_bytes) return false;
  T v;
  std::memcpy(&v, smem + o, sizeof(T));
  *out = wgmma_elem_to_float(v);
  return true;
}

// The product of one warp's part of m64nNkK (K = wgmma_k<T>) with its 16 A
// rows given as floats (`ta`, row-major 16 x K): d is the warp's 32 lanes x
// N/2 registers (read as C, written as D), smem the shared memory window B's
// descriptor addresses, smem_bytes its size. Returns false (and computes
// nothing) when the descriptor has swizzle mode 0 or reads outside the
// window.
template <int N, typename T>
inline bool wgmma_m64_warp_a(WarpRegs<float> d, const float (&ta)[16][wgmma_k<T>],
                             const unsigned char* smem, uint32_t smem_bytes, uint64_t desc_b,
                             bool trans_b) {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256, "wgmma N is a multiple of 8 up to 256");
  constexpr int K = wgmma_k<T>;
  const SmemDesc db = decode_smem_desc(desc_b);
  if (db.swizzle == 0) return false;
  // Not on the fiber stack: 32 KiB for N = 256 and fp8. One per OS thread
  // (blocks run one at a time on it).
  static thread_local float tb[K][N];
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n)
      if (!wgmma_operand_elem<T>(db, trans_b, n, k, smem, smem_bytes, &tb[k][n])) return false;
  for (int j = 0; j < N / 8; ++j) {
    for (int m = 0; m < 16; ++m) {
      for (int c = 0; c < 8; ++c) {
        const int lane = (m % 8) * 4 + c / 2, reg = 4 * j + (m / 8) * 2 + c % 2;
        float acc = d(lane, reg);
        for (int k = 0; k < K; ++k) acc += ta[m][k] * tb[k][8 * j + c];
        d(lane, reg) = acc;
      }
    }
  }
  return true;
}

// One warp's part of m64nNkK with both operands in shared memory:
// `group_warp` is the warp's place (0..3) in the warpgroup, whose 16 rows
// of A it reads through desc_a. Returns false as wgmma_m64_warp_a, for
// either descriptor.
template <int N, typename T>
inline bool wgmma_m64_warp(WarpRegs<float> d, int group_warp, const unsigned char* smem,
                           uint32_t smem_bytes, uint64_t desc_a, uint64_t desc_b, bool trans_a,
                           bool trans_b) {
  constexpr int K = wgmma_k<T>;
  const SmemDesc da = decode_smem_desc(desc_a);
  if (da.swizzle == 0) return false;
  static thread_local float ta[16][K];
  for (int m = 0; m < 16; ++m)
    for (int k = 0; k < K; ++k)
      if (!wgmma_operand_elem<T>(da, trans_a, 16 * group_warp + m, k, smem, smem_bytes, &ta[m][k]))
        return false;
  return wgmma_m64_warp_a<N, T>(d, ta, smem, smem_bytes, desc_b, trans_b);
}

// The A tile (16 x 16, row-major floats) of one warp's register operands of
// 16-bit type T: lane (g = lane / 4, t = lane % 4) holds 8 elements (their
// bits), element 2r + e at row g + 8 (r % 2), col 2t + 8 (r / 2) + e (the
// m16n8k16 A fragment).
template <typename T>
inline void wgmma_register_a_tile(const uint16_t (&lanes)[32][8], float (&ta)[16][16]) {
  static_assert(sizeof(T) == 2, "wgmma's register form takes 16-bit A elements");
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) {
      const int r = i / 2, e = i % 2;
      ta[lane / 4 + 8 * (r % 2)][2 * (lane % 4) + 8 * (r / 2) + e] =
          wgmma_elem_to_float(T{lanes[lane][i]});
    }
  }
}

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_WGMMA_H_
