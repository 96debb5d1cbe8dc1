// Kiln CPU runtime: warp-wide emulation of
// ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16.
//
// The instruction loads 1, 2 or 4 8x8 matrices of 16-bit elements. Lane
// 8*j + r supplies the address of row r of matrix j (lanes 0-7 for .x1, 0-15
// for .x2, all 32 for .x4; the other lanes' addresses are not read). Register
// j of lane l then holds, of matrix j, elements (l/4, 2*(l%4)) and
// (l/4, 2*(l%4)+1); with .trans it holds (2*(l%4), l/4) and (2*(l%4)+1, l/4).
// The lower column (row with .trans) sits in the lower 16 bits. Each row
// address points to 16 contiguous bytes of the emulated shared memory.
// `row_addr` holds the warp's 32 addresses; `dst` is the warp's registers.
// Thread-safe; reads only the rows named.
#ifndef KILN_CPU_LDMATRIX_H_
#define KILN_CPU_LDMATRIX_H_

#include <cstdint>
#include <cstring>

#include "kiln/cpu/types.h"

namespace kiln {
namespace rt {
namespace detail {

inline uint16_t LoadB16(const void* row, int col) {
  uint16_t v;
  std::memcpy(&v, static_cast<const unsigned char*>(row) + 2 * col, sizeof v);
  return v;
}

template <int kNum, bool kTrans>
inline void LdMatrix(WarpRegs<uint32_t> dst, const void* const* row_addr) {
  uint32_t out[32][kNum];
  for (int j = 0; j < kNum; ++j) {
    const void* const* rows = row_addr + 8 * j;
    for (int lane = 0; lane < 32; ++lane) {
      const int a = lane / 4, b = 2 * (lane % 4);
      out[lane][j] = kTrans ? pack_b16x2(LoadB16(rows[b], a), LoadB16(rows[b + 1], a))
                            : pack_b16x2(LoadB16(rows[a], b), LoadB16(rows[a], b + 1));
    }
  }
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < kNum; ++j) dst(lane, j) = out[lane][j];
}

} // namespace detail

inline void ldmatrix_x1(WarpRegs<uint32_t> dst, const void* const* row_addr) {
  detail::LdMatrix<1, false>(dst, row_addr);
}
inline void ldmatrix_x2(WarpRegs<uint32_t> dst, const void* const* row_addr) {
  detail::LdMatrix<2, false>(dst, row_addr);
}
inline void ldmatrix_x4(WarpRegs<uint32_t> dst, const void* const* row_addr) {
  detail::LdMatrix<4, false>(dst, row_addr);
}
inline void ldmatrix_x1_trans(WarpRegs<uint32_t> dst, const void* const* row_addr) {
  detail::LdMatrix<1, true>(dst, row_addr);
}
inline void ldmatrix_x2_trans(WarpRegs<uint32_t> dst, const void* const* row_addr) {
  detail::LdMatrix<2, true>(dst, row_addr);
}
inline void ldmatrix_x4_trans(WarpRegs<uint32_t> dst, const void* const* row_addr) {
  detail::LdMatrix<4, true>(dst, row_addr);
}

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_LDMATRIX_H_
