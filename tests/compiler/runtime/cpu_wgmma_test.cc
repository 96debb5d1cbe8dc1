// The CPU twin of Hopper's warpgroup MMA (kiln/cpu/wgmma.h and the per-lane
// wrappers of kiln/cpu/thread_ops.h): operand addressing for 1- and 2-byte
// elements, whole m64nNkK products of one warpgroup against a float
// reference, with operands laid out in shared memory as a swizzled TMA load
// writes them (fp8 e4m3/e5m2 with K = 32, f16/bf16 with K = 16), and the
// descriptors the emulation must refuse.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kiln/cpu/runtime.h"

namespace kiln::rt {
namespace {

// Runs `body` on one block of `threads`; returns launch_grid's message,
// empty on success.
std::string RunBlock(int threads, size_t smem, const std::function<void()>& body) {
  char error[512] = "untouched";
  const int rc = launch_grid(1, 1, 1, threads, 1, 1, smem, body, error, sizeof error);
  if (rc == 0) return "";
  return error[0] ? std::string(error) : std::string("failed with an empty message");
}

// The swizzle of a `swizzle_bytes` (128/64/32) mode on a byte address in a
// 1024-byte aligned window: the 16-byte chunk bits (4..) XORed with the bits
// from 7 up, as many as the mode has chunks to permute.
uint32_t Swizzled(uint32_t address, int swizzle_bytes) {
  const uint32_t mask = static_cast<uint32_t>(swizzle_bytes / 16 - 1);
  return address ^ (((address >> 7) & mask) << 4);
}

// A byte of an fp8 element and a 16-bit element hold the same bytes of
// shared memory: K-major, fp8 (mn, k) is byte k % 2 of 16-bit (mn, k / 2);
// MN-major, byte mn % 2 of 16-bit (mn / 2, k). Every swizzle mode, with
// offsets that are not multiples of the swizzle width.
TEST(CpuWgmma, OneByteElementsAreTheBytesOfTwoByteElements) {
  for (int mode = 1; mode <= 3; ++mode) {
    SCOPED_TRACE(mode);
    SmemDesc d;
    d.start = 2048 + 32;
    d.lbo = 4096;
    d.sbo = 1024;
    d.swizzle = mode;
    for (int mn = 0; mn < 256; ++mn) {
      for (int k = 0; k < 32; ++k) {
        ASSERT_EQ(wgmma_operand_offset(d, false, mn, k, 1),
                  wgmma_operand_offset(d, false, mn, k / 2, 2) + static_cast<uint32_t>(k % 2))
            << "K-major mn " << mn << " k " << k;
        ASSERT_EQ(wgmma_operand_offset(d, true, mn, k, 1),
                  wgmma_operand_offset(d, true, mn / 2, k, 2) + static_cast<uint32_t>(mn % 2))
            << "MN-major mn " << mn << " k " << k;
      }
    }
  }
  // One K-major fp8 element by hand: 128-byte swizzle, SBO 1024, the K slice
  // at byte 64 of the row. Row 13 = 8 + 5 lies at 1024 + 5 * 128; byte 64 +
  // 20 = 84 is chunk 5, which row 5 of the 8-row pattern moves to chunk 0.
  SmemDesc d;
  d.start = 64;
  d.sbo = 1024;
  d.swizzle = 1;
  EXPECT_EQ(wgmma_operand_offset(d, false, 13, 20, 1), 1024u + 5 * 128 + 0 * 16 + 4);
  EXPECT_EQ(wgmma_k<fp8_e4m3_t>, 32);
  EXPECT_EQ(wgmma_k<fp8_e5m2_t>, 32);
  EXPECT_EQ(wgmma_k<half_t>, 16);
  EXPECT_EQ(wgmma_k<bfloat16_t>, 16);
}

// One warpgroup's m64nN product over a whole swizzle row of K: A is 64 rows
// and B N rows (B stored N x K) of `kSwz` bytes each, K-major, in the layout
// a TMA load with that swizzle writes (A at offset 0, B after it). The row
// holds kSwz / 32 instruction K slices; `wgmma` is called once per slice
// with A and B advanced by 32 bytes, accumulating onto random C. Each
// thread's N/2 accumulators must equal the reference in the D-fragment
// layout, within float rounding of the summed terms.
template <typename T, int N, int kSwz>
void ExpectWarpgroupProduct(const std::function<void(void*, const void*, const void*)>& wgmma,
                            uint32_t seed) {
  constexpr int kBytes = static_cast<int>(sizeof(T));
  constexpr int kRowElems = kSwz / kBytes; // K of the whole row
  constexpr int kSlices = kSwz / 32;
  constexpr int kBOffset = 64 * kSwz;
  const size_t smem = static_cast<size_t>(64 + N) * kSwz;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<T> a(64 * kRowElems), b(N * kRowElems);
  for (auto* v : {&a, &b}) {
    for (size_t i = 0; i < v->size(); ++i) {
      // Every 7th value tiny: subnormal in e4m3 and e5m2.
      (*v)[i] = cvt<T>(i % 7 == 3 ? dist(rng) * 0.001f : dist(rng));
    }
  }
  std::vector<unsigned char> image(smem, 0);
  auto place = [&](const std::vector<T>& m, int rows, uint32_t base) {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < kRowElems; ++c)
        std::memcpy(&image[Swizzled(base + static_cast<uint32_t>(r * kSwz + c * kBytes), kSwz)],
                    &m[r * kRowElems + c], kBytes);
  };
  place(a, 64, 0);
  place(b, N, kBOffset);
  std::vector<float> c(128 * (N / 2)), d(128 * (N / 2), -1.0f);
  for (float& v : c) v = dist(rng);

  const std::string err = RunBlock(128, smem, [&] {
    const int tid = tid_x();
    unsigned char* s = dyn_smem();
    for (size_t i = static_cast<size_t>(tid); i < smem; i += 128) s[i] = image[i];
    sync_threads();
    float acc[N / 2];
    for (int i = 0; i < N / 2; ++i) acc[i] = c[tid * (N / 2) + i];
    wgmma_fence();
    for (int ks = 0; ks < kSlices; ++ks) wgmma(acc, s + 32 * ks, s + kBOffset + 32 * ks);
    wgmma_commit();
    wgmma_wait<0>();
    for (int i = 0; i < N / 2; ++i) d[tid * (N / 2) + i] = acc[i];
  });
  ASSERT_EQ(err, "");
  int failures = 0;
  for (int tid = 0; tid < 128; ++tid) {
    const int w = tid / 32, g = (tid % 32) / 4, t = tid % 4;
    for (int reg = 0; reg < N / 2; ++reg) {
      const int j = reg / 4, r = reg % 4;
      const int row = 16 * w + g + 8 * (r / 2), col = 8 * j + 2 * t + r % 2;
      const float cv = c[tid * (N / 2) + reg];
      double sum = cv, scale = std::fabs(cv);
      for (int k = 0; k < kRowElems; ++k) {
        const double p = static_cast<double>(cvt<float>(a[row * kRowElems + k])) *
                         static_cast<double>(cvt<float>(b[col * kRowElems + k]));
        sum += p;
        scale += std::fabs(p);
      }
      const float got = d[tid * (N / 2) + reg];
      if (std::fabs(got - sum) > 1e-5 * scale && ++failures <= 10) {
        ADD_FAILURE() << "D(" << row << ", " << col << ") = " << got << ", expected " << sum
                      << " (thread " << tid << " register " << reg << ")";
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

// <kTransA, kTransB, kLboA, kSboA, kSwzA, kLboB, kSboB, kSwzB>: K-major,
// SBO = 8 rows of the swizzle width, modes 1 (128 B), 2 (64 B), 3 (32 B).
TEST(CpuWgmma, Fp8E4m3ProductsMatchTheReference) {
  SCOPED_TRACE("e4m3 m64n64k32, 128-byte swizzle (K slices at bytes 0, 32, 64, 96)");
  ExpectWarpgroupProduct<fp8_e4m3_t, 64, 128>(
      [](void* d, const void* a, const void* b) {
        wgmma_m64n64k32_e4m3<0, 0, 16, 1024, 1, 16, 1024, 1>(d, a, b);
      },
      1);
  SCOPED_TRACE("e4m3 m64n256k32, 64-byte swizzle");
  ExpectWarpgroupProduct<fp8_e4m3_t, 256, 64>(
      [](void* d, const void* a, const void* b) {
        wgmma_m64n256k32_e4m3<0, 0, 16, 512, 2, 16, 512, 2>(d, a, b);
      },
      2);
}

TEST(CpuWgmma, Fp8E5m2ProductsMatchTheReference) {
  SCOPED_TRACE("e5m2 m64n8k32, 128-byte swizzle");
  ExpectWarpgroupProduct<fp8_e5m2_t, 8, 128>(
      [](void* d, const void* a, const void* b) {
        wgmma_m64n8k32_e5m2<0, 0, 16, 1024, 1, 16, 1024, 1>(d, a, b);
      },
      3);
  SCOPED_TRACE("e5m2 m64n128k32, 32-byte swizzle");
  ExpectWarpgroupProduct<fp8_e5m2_t, 128, 32>(
      [](void* d, const void* a, const void* b) {
        wgmma_m64n128k32_e5m2<0, 0, 16, 256, 3, 16, 256, 3>(d, a, b);
      },
      4);
}

// The 16-bit forms through the same element-type plumbing: K = 16, so the
// 128-byte row holds four K slices of 16 elements.
TEST(CpuWgmma, SixteenBitProductsMatchTheReference) {
  SCOPED_TRACE("f16 m64n32k16, 128-byte swizzle");
  ExpectWarpgroupProduct<half_t, 32, 128>(
      [](void* d, const void* a, const void* b) {
        wgmma_m64n32k16_f16<0, 0, 16, 1024, 1, 16, 1024, 1>(d, a, b);
      },
      5);
  SCOPED_TRACE("bf16 m64n16k16, 64-byte swizzle");
  ExpectWarpgroupProduct<bfloat16_t, 16, 64>(
      [](void* d, const void* a, const void* b) {
        wgmma_m64n16k16_bf16<0, 0, 16, 512, 2, 16, 512, 2>(d, a, b);
      },
      6);
}

// A descriptor that reads past the block's shared memory, or has no swizzle
// mode, fails the block with a message instead of reading out of bounds.
TEST(CpuWgmma, Fp8DescriptorsOutsideTheWindowFailTheBlock) {
  constexpr size_t kSmem = 4096; // A's 64 rows of 32 bytes, then 2 KiB
  std::string err = RunBlock(128, kSmem, [] {
    float acc[32] = {};
    unsigned char* s = dyn_smem();
    // B's 64 rows of 32 bytes from byte 3072 end at 5120.
    wgmma_m64n64k32_e4m3<0, 0, 16, 256, 3, 16, 256, 3>(acc, s, s + 3072);
  });
  EXPECT_NE(err.find("wgmma_m64n64k32_e4m3"), std::string::npos) << err;
  EXPECT_NE(err.find("reads outside the 4096 bytes of shared memory"), std::string::npos) << err;

  err = RunBlock(128, kSmem, [] {
    float acc[4] = {};
    unsigned char* s = dyn_smem();
    wgmma_m64n8k32_e5m2<0, 0, 16, 256, 0, 16, 256, 3>(acc, s, s + 2048);
  });
  EXPECT_NE(err.find("wgmma_m64n8k32_e5m2: a descriptor has no swizzle mode"), std::string::npos)
      << err;

  // The same call inside the window runs.
  EXPECT_EQ(RunBlock(128, kSmem,
                     [] {
                       float acc[32] = {};
                       unsigned char* s = dyn_smem();
                       wgmma_m64n64k32_e4m3<0, 0, 16, 256, 3, 16, 256, 3>(acc, s, s + 2048);
                     }),
            "");
}

} // namespace
} // namespace kiln::rt
