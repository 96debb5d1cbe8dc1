// ldmatrix, shuffles, warp reductions, cp.async and the swizzle helper of the
// CPU runtime, against direct readings of their PTX definitions.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "kiln/cpu/runtime.h"

namespace kiln::rt {
namespace {

// Emulated shared memory: 4 matrices of 8x8 b16, rows scattered at distinct,
// non-contiguous 16-byte slots so row addresses matter.
struct Smem {
  alignas(16) uint16_t words[64 * 8] = {};
  const void* row_addr[32];
  uint16_t m[4][8][8]; // the logical matrices

  explicit Smem(uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int> slots(64);
    for (int i = 0; i < 64; ++i) slots[i] = i;
    std::shuffle(slots.begin(), slots.end(), rng);
    for (int j = 0; j < 4; ++j) {
      for (int r = 0; r < 8; ++r) {
        uint16_t* row = &words[slots[8 * j + r] * 8];
        for (int c = 0; c < 8; ++c) row[c] = m[j][r][c] = static_cast<uint16_t>(rng());
        row_addr[8 * j + r] = row;
      }
    }
  }
};

TEST(CpuLdmatrix, AllVariantsMatchDirectReading) {
  using Fn = void (*)(WarpRegs<uint32_t>, const void* const*);
  struct Case {
    const char* name;
    Fn fn;
    int num;
    bool trans;
  };
  const Case cases[] = {
      {"x1", &ldmatrix_x1, 1, false},
      {"x2", &ldmatrix_x2, 2, false},
      {"x4", &ldmatrix_x4, 4, false},
      {"x1.trans", &ldmatrix_x1_trans, 1, true},
      {"x2.trans", &ldmatrix_x2_trans, 2, true},
      {"x4.trans", &ldmatrix_x4_trans, 4, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Smem s(42);
    // Addresses of lanes the instruction does not read are poisoned.
    for (int l = 8 * c.num; l < 32; ++l) s.row_addr[l] = nullptr;
    uint32_t regs[32][4];
    std::memset(regs, 0xee, sizeof regs);
    c.fn(WarpRegs<uint32_t>(regs), s.row_addr);
    for (int lane = 0; lane < 32; ++lane) {
      for (int j = 0; j < c.num; ++j) {
        const int r = lane / 4, col = 2 * (lane % 4);
        const uint16_t lo = c.trans ? s.m[j][col][r] : s.m[j][r][col];
        const uint16_t hi = c.trans ? s.m[j][col + 1][r] : s.m[j][r][col + 1];
        EXPECT_EQ(regs[lane][j], (static_cast<uint32_t>(hi) << 16) | lo)
            << "lane " << lane << " matrix " << j;
      }
      for (int j = c.num; j < 4; ++j) EXPECT_EQ(regs[lane][j], 0xeeeeeeeeu); // untouched
    }
  }
}

TEST(CpuWarp, ShufflesFollowShflSyncLaneRules) {
  int32_t in[32];
  for (int l = 0; l < 32; ++l) in[l] = 100 + l;
  int32_t out[32];
  for (unsigned mask : {1u, 2u, 5u, 16u, 31u}) {
    shfl_xor(out, in, mask);
    for (unsigned l = 0; l < 32; ++l) EXPECT_EQ(out[l], in[l ^ mask]) << mask << " " << l;
  }
  shfl_xor(out, in, 33u); // only the mask's low 5 bits count, as on the GPU
  for (unsigned l = 0; l < 32; ++l) EXPECT_EQ(out[l], in[l ^ 1u]);
  for (unsigned delta : {0u, 1u, 3u, 16u, 31u, 40u}) {
    shfl_down(out, in, delta);
    for (unsigned l = 0; l < 32; ++l)
      EXPECT_EQ(out[l], l + delta < 32 ? in[l + delta] : in[l]) << delta << " " << l;
  }
  shfl_idx(out, in, 37u); // src & 31 == 5
  for (int l = 0; l < 32; ++l) EXPECT_EQ(out[l], in[5]);
  int src[32];
  for (int l = 0; l < 32; ++l) src[l] = (l * 7 + 3) % 32;
  shfl_idx(out, in, src);
  for (int l = 0; l < 32; ++l) EXPECT_EQ(out[l], in[src[l]]);
  // In place, strided: the second column of a [32][2] array.
  float two[32][2];
  for (int l = 0; l < 32; ++l) two[l][0] = -1, two[l][1] = static_cast<float>(l);
  shfl_down(&two[0][1], &two[0][1], 1u, 2);
  for (int l = 0; l < 32; ++l) {
    EXPECT_EQ(two[l][0], -1.0f);
    EXPECT_EQ(two[l][1], static_cast<float>(l < 31 ? l + 1 : 31));
  }
}

TEST(CpuWarp, ReductionsGiveEveryLaneTheButterflyResult) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
  float v[32], sum[32], mx[32], mn[32];
  for (float& x : v) x = dist(rng);
  std::memcpy(sum, v, sizeof v);
  std::memcpy(mx, v, sizeof v);
  std::memcpy(mn, v, sizeof v);
  warp_reduce_sum(sum);
  warp_reduce_max(mx);
  warp_reduce_min(mn);
  // The butterfly order, spelled out: lane 0's partial sums pair up as a tree.
  float tree[32];
  std::memcpy(tree, v, sizeof v);
  for (int width = 16; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) tree[l] = tree[l] + tree[l + width];
  for (int l = 0; l < 32; ++l) {
    EXPECT_EQ(sum[l], tree[0]);
    EXPECT_EQ(mx[l], *std::max_element(v, v + 32));
    EXPECT_EQ(mn[l], *std::min_element(v, v + 32));
  }
  int32_t iv[32];
  for (int l = 0; l < 32; ++l) iv[l] = l == 3 ? INT32_MAX : l;
  warp_reduce_sum(iv); // wraps
  EXPECT_EQ(iv[17], static_cast<int32_t>(static_cast<uint32_t>(INT32_MAX) + 493u));
}

TEST(CpuCpAsync, CopiesAndZeroFillsTheRaggedTail) {
  const unsigned char src[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  for (int src_bytes : {16, 9, 4, 1, 0, -3, 99}) {
    SCOPED_TRACE(src_bytes);
    unsigned char dst[17];
    std::memset(dst, 0xaa, sizeof dst);
    cp_async_cg(dst, src_bytes == 0 ? nullptr : src, src_bytes); // size 0 reads nothing
    const int n = std::clamp(src_bytes, 0, 16);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(dst[i], i < n ? src[i] : 0) << i;
    EXPECT_EQ(dst[16], 0xaa); // never past kBytes
  }
  unsigned char d4[8];
  std::memset(d4, 0xaa, sizeof d4);
  cp_async_ca<4>(d4, src, 3);
  cp_async_commit_group();
  cp_async_wait_group<0>();
  EXPECT_EQ(d4[2], 3);
  EXPECT_EQ(d4[3], 0);
  EXPECT_EQ(d4[4], 0xaa);
  cp_async_ca<8>(d4, src);
  cp_async_wait_all();
  EXPECT_EQ(d4[7], 8);
}

TEST(CpuHelpers, SwizzleIsABijectionWithinATile) {
  struct Case {
    int rows, row_elems, elem_bytes, swizzle_bytes;
  };
  const Case cases[] = {{8, 64, 2, 128}, {32, 64, 2, 128}, {16, 128, 2, 128}, {16, 32, 4, 128},
                        {8, 32, 2, 64},  {8, 16, 2, 32},   {64, 128, 1, 128}, {8, 8, 16, 128}};
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << c.rows << "x" << c.row_elems << " elem " << c.elem_bytes
                                    << " swizzle " << c.swizzle_bytes);
    std::set<int> seen;
    for (int r = 0; r < c.rows; ++r) {
      for (int col = 0; col < c.row_elems; ++col) {
        const int off = swizzle_offset(r, col, c.row_elems, c.elem_bytes, c.swizzle_bytes);
        EXPECT_GE(off, r * c.row_elems); // stays in its row
        EXPECT_LT(off, (r + 1) * c.row_elems);
        seen.insert(off);
      }
    }
    EXPECT_EQ(static_cast<int>(seen.size()), c.rows * c.row_elems);
  }
  // Row r's chunk 0 lands in chunk r % 8: eight rows of 16-byte reads hit
  // eight different chunks, i.e. different banks.
  for (int r = 0; r < 8; ++r) EXPECT_EQ(swizzle_offset(r, 0, 64, 2, 128), r * 64 + r * 8);
  static_assert(ceildiv(10, 3) == 4 && ceildiv(9, 3) == 3 && ceildiv(0, 3) == 0);
  EXPECT_FLOAT_EQ(fast_exp2(3.0f), 8.0f);
  EXPECT_FLOAT_EQ(fast_rsqrt(4.0f), 0.5f);
  sync_threads();
}

} // namespace
} // namespace kiln::rt
