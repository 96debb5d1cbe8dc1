// Warp-wide mma emulation (kiln/cpu/mma.h) against a naive matmul of the
// logical tiles. The test scatters matrices into lanes with the PTX ISA's
// per-element formulas (element index i of a lane's fragment), written
// independently of the runtime's per-register formulas.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kiln/cpu/mma.h"

namespace kiln::rt {
namespace {

// Fragment element i of `lane` -> (row, col), as the PTX ISA tables state.
struct RowCol {
  int row, col;
};
RowCol AF16(int lane, int i) {
  const int g = lane >> 2, t = lane % 4;
  const bool low = i < 2 || (i >= 4 && i < 6);
  return {low ? g : g + 8, t * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
RowCol BF16(int lane, int i) {
  const int g = lane >> 2, t = lane % 4;
  return {t * 2 + (i & 1) + (i >= 2 ? 8 : 0), g};
}
RowCol CF32(int lane, int i) {
  const int g = lane >> 2, t = lane % 4;
  return {i < 2 ? g : g + 8, t * 2 + (i & 1)};
}
RowCol ATf32(int lane, int i) {
  const int g = lane >> 2, t = lane % 4;
  return {(i == 0 || i == 2) ? g : g + 8, i < 2 ? t : t + 4};
}
RowCol BTf32(int lane, int i) {
  const int g = lane >> 2, t = lane % 4;
  return {i == 0 ? t : t + 4, g};
}
RowCol AS8(int lane, int i) {
  const int g = lane >> 2, t = lane % 4;
  const bool low = i < 4 || (i >= 8 && i < 12);
  return {low ? g : g + 8, t * 4 + (i & 3) + (i >= 8 ? 16 : 0)};
}
RowCol BS8(int lane, int i) {
  const int g = lane >> 2, t = lane % 4;
  return {t * 4 + (i & 3) + (i >= 4 ? 16 : 0), g};
}

// Registers of a warp with a lane stride wider than the fragment, placed at
// an offset, so the strided WarpRegs view is exercised.
template <typename T>
struct Regs {
  static constexpr int kStride = 8, kOffset = 2;
  std::vector<T> data = std::vector<T>(32 * kStride);
  T& at(int lane, int r) { return data[lane * kStride + kOffset + r]; }
  WarpRegs<T> view() { return WarpRegs<T>(data.data() + kOffset, kStride); }
};

struct B16Case {
  const char* name;
  uint16_t (*encode)(float);
  float (*decode)(uint16_t);
  void (*mma)(WarpRegs<float>, WarpRegs<const uint32_t>, WarpRegs<const uint32_t>,
              WarpRegs<const float>);
};

TEST(CpuMma, M16n8k16MatchesNaiveMatmul) {
  const B16Case cases[] = {
      {"f16", [](float f) { return float_to_half(f).bits; },
       [](uint16_t b) { return half_to_float(half_t{b}); }, &mma_m16n8k16_f16},
      {"bf16", [](float f) { return float_to_bfloat16(f).bits; },
       [](uint16_t b) { return bfloat16_to_float(bfloat16_t{b}); }, &mma_m16n8k16_bf16},
  };
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (const B16Case& c : cases) {
    for (int trial = 0; trial < 20; ++trial) {
      SCOPED_TRACE(testing::Message() << c.name << " trial " << trial);
      float a[16][16], b[16][8], acc[16][8];
      uint16_t abits[16][16], bbits[16][8];
      for (int m = 0; m < 16; ++m)
        for (int k = 0; k < 16; ++k) a[m][k] = c.decode(abits[m][k] = c.encode(dist(rng)));
      for (int k = 0; k < 16; ++k)
        for (int n = 0; n < 8; ++n) b[k][n] = c.decode(bbits[k][n] = c.encode(dist(rng)));
      for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 8; ++n) acc[m][n] = dist(rng);
      Regs<uint32_t> ra, rb;
      Regs<float> rc;
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < 8; ++i) {
          const RowCol p = AF16(lane, i);
          ra.at(lane, i / 2) |= static_cast<uint32_t>(abits[p.row][p.col]) << (16 * (i % 2));
        }
        for (int i = 0; i < 4; ++i) {
          const RowCol p = BF16(lane, i);
          rb.at(lane, i / 2) |= static_cast<uint32_t>(bbits[p.row][p.col]) << (16 * (i % 2));
        }
        for (int i = 0; i < 4; ++i) rc.at(lane, i) = acc[CF32(lane, i).row][CF32(lane, i).col];
      }
      c.mma(rc.view(), ra.view(), rb.view(), rc.view()); // d aliases c
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < 4; ++i) {
          const RowCol p = CF32(lane, i);
          double ref = acc[p.row][p.col];
          float in_order = acc[p.row][p.col];
          for (int k = 0; k < 16; ++k) {
            ref += static_cast<double>(a[p.row][k]) * b[k][p.col];
            in_order += a[p.row][k] * b[k][p.col];
          }
          EXPECT_EQ(rc.at(lane, i), in_order) << "lane " << lane << " reg " << i;
          EXPECT_NEAR(rc.at(lane, i), ref, 1e-5 * 64);
        }
      }
    }
  }
}

TEST(CpuMma, M16n8k8Tf32MatchesNaiveMatmulAndIgnoresLowBits) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE(trial);
    float a[16][8], b[8][8], acc[16][8];
    for (auto& row : a)
      for (float& v : row) v = dist(rng); // not rounded: the low 13 bits must be ignored
    for (auto& row : b)
      for (float& v : row) v = dist(rng);
    for (auto& row : acc)
      for (float& v : row) v = dist(rng);
    Regs<uint32_t> ra, rb;
    Regs<float> rc, rd;
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 4; ++i)
        ra.at(lane, i) = float_bits(a[ATf32(lane, i).row][ATf32(lane, i).col]);
      for (int i = 0; i < 2; ++i)
        rb.at(lane, i) = float_bits(b[BTf32(lane, i).row][BTf32(lane, i).col]);
      for (int i = 0; i < 4; ++i) rc.at(lane, i) = acc[CF32(lane, i).row][CF32(lane, i).col];
    }
    mma_m16n8k8_tf32(rd.view(), ra.view(), rb.view(), rc.view());
    auto trunc = [](float f) { return bits_float(float_bits(f) & 0xffffe000u); };
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 4; ++i) {
        const RowCol p = CF32(lane, i);
        float in_order = acc[p.row][p.col];
        for (int k = 0; k < 8; ++k) in_order += trunc(a[p.row][k]) * trunc(b[k][p.col]);
        EXPECT_EQ(rd.at(lane, i), in_order) << "lane " << lane << " reg " << i;
      }
    }
  }
}

TEST(CpuMma, M16n8k32S8MatchesNaiveMatmulAndWraps) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> s8(-128, 127);
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE(trial);
    int a[16][32], b[32][8];
    int32_t acc[16][8];
    for (auto& row : a)
      for (int& v : row) v = s8(rng);
    for (auto& row : b)
      for (int& v : row) v = s8(rng);
    for (auto& row : acc)
      for (int32_t& v : row) v = static_cast<int32_t>(rng()); // large: sums wrap
    Regs<uint32_t> ra, rb;
    Regs<int32_t> rc, rd;
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 16; ++i) {
        const RowCol p = AS8(lane, i);
        ra.at(lane, i / 4) |= static_cast<uint32_t>(a[p.row][p.col] & 0xff) << (8 * (i % 4));
      }
      for (int i = 0; i < 8; ++i) {
        const RowCol p = BS8(lane, i);
        rb.at(lane, i / 4) |= static_cast<uint32_t>(b[p.row][p.col] & 0xff) << (8 * (i % 4));
      }
      for (int i = 0; i < 4; ++i) rc.at(lane, i) = acc[CF32(lane, i).row][CF32(lane, i).col];
    }
    mma_m16n8k32_s8(rd.view(), ra.view(), rb.view(), rc.view());
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 4; ++i) {
        const RowCol p = CF32(lane, i);
        int64_t ref = acc[p.row][p.col];
        for (int k = 0; k < 32; ++k) ref += static_cast<int64_t>(a[p.row][k]) * b[k][p.col];
        EXPECT_EQ(rd.at(lane, i), static_cast<int32_t>(static_cast<uint32_t>(ref)))
            << "lane " << lane << " reg " << i;
      }
    }
  }
}

TEST(CpuMma, PlainWarpArraysBindToTheViews) {
  uint32_t a[32][4] = {}, b[32][2] = {};
  float c[32][4] = {}, d[32][4];
  // A = I-like: A[m][k] = 1 where k == m (m < 16), B[k][n] = k + n.
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) {
      const RowCol p = AF16(lane, i);
      if (p.row == p.col) a[lane][i / 2] |= 0x3c00u << (16 * (i % 2));
    }
    for (int i = 0; i < 4; ++i) {
      const RowCol p = BF16(lane, i);
      b[lane][i / 2] |= static_cast<uint32_t>(float_to_half(static_cast<float>(p.row + p.col)).bits)
                        << (16 * (i % 2));
    }
  }
  mma_m16n8k16_f16(d, a, b, c);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(d[lane][i], static_cast<float>(CF32(lane, i).row + CF32(lane, i).col));
}

} // namespace
} // namespace kiln::rt
