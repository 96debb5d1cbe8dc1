// The CPU thread-level runtime (kiln/cpu/thread_ops.h, fiber.h): per-thread
// bodies run by launch_grid as fibers, with barriers, warp collectives,
// atomics, conversions and the failures launch_grid must report instead of
// hanging. The last tests compile a kernel the way the toolchain does
// (embedded headers, -O2, both context-switch implementations) and run it.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <stdlib.h>

#include "compiler/runtime/runtime_headers.h"
#include "gtest/gtest.h"
#include "kiln/cpu/runtime.h"

namespace kiln::rt {
namespace {

struct Dim3 {
  int x = 1, y = 1, z = 1;
};

// Runs `body` on a grid; returns launch_grid's message, empty on success.
std::string RunGrid(Dim3 grid, Dim3 block, size_t smem, const std::function<void()>& body) {
  char error[512] = "untouched";
  const int rc = launch_grid(grid.x, grid.y, grid.z, block.x, block.y, block.z, smem, body, error,
                             sizeof error);
  if (rc == 0) return "";
  return error[0] ? std::string(error) : std::string("failed with an empty message");
}

// Thread index in a 1-D block.
int Tid() { return tid_x(); }

// ---- A 64x32 tile product C = A * B (A 64x32, B 32x32, f16, row-major) by
// four warps, each owning 16 rows of C: ldmatrix_x4 for A fragments,
// ldmatrix_x4_trans for B (row-major B is column-major for the mma), and
// mma_m16n8k16_f16. Small integers keep every sum exact.
TEST(CpuThreadOps, TileProductWithLdmatrixAndMmaMatchesScalarReference) {
  constexpr int M = 64, N = 32, K = 32;
  std::vector<half_t> a(M * K), b(K * N);
  std::vector<float> ref(M * N, 0.0f), c(M * N, -1.0f);
  for (int i = 0; i < M * K; ++i) a[i] = float_to_half(static_cast<float>((i * 7 + 3) % 7 - 3));
  for (int i = 0; i < K * N; ++i) b[i] = float_to_half(static_cast<float>((i * 5 + 1) % 5 - 2));
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k)
        ref[m * N + n] += half_to_float(a[m * K + k]) * half_to_float(b[k * N + n]);

  const std::string err = RunGrid({}, {128}, (M * K + K * N) * sizeof(half_t), [&] {
    const int tid = Tid();
    half_t* as = reinterpret_cast<half_t*>(dyn_smem());
    half_t* bs = as + M * K;
    // Stage A with cp.async and B with plain 16-byte copies: 8 halves each.
    for (int chunk = tid; chunk < M * K / 8; chunk += 128)
      cp_async_16(as + 8 * chunk, a.data() + 8 * chunk, 16);
    cp_async_commit();
    for (int chunk = tid; chunk < K * N / 8; chunk += 128)
      copy_16(bs + 8 * chunk, b.data() + 8 * chunk);
    cp_async_wait<0>();
    sync_threads();

    const int warp = tid / 32, lane = tid % 32;
    const int j = lane / 8, r = lane % 8; // this lane supplies row r of matrix j
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += 16) {
      uint32_t af[4];
      ldmatrix_x4(af, as + (16 * warp + r + 8 * (j & 1)) * K + k0 + 8 * (j >> 1));
      for (int n0 = 0; n0 < N; n0 += 16) {
        uint32_t bf[4];
        ldmatrix_x4_trans(bf, bs + (k0 + r + 8 * (j & 1)) * N + n0 + 8 * (j >> 1));
        mma_m16n8k16_f16(acc[n0 / 8], af, &bf[0], acc[n0 / 8]);
        mma_m16n8k16_f16(acc[n0 / 8 + 1], af, &bf[2], acc[n0 / 8 + 1]);
      }
    }
    const int g = lane / 4, t = lane % 4;
    for (int nt = 0; nt < 4; ++nt)
      for (int i = 0; i < 4; ++i)
        c[(16 * warp + g + 8 * (i >> 1)) * N + 8 * nt + 2 * t + (i & 1)] = acc[nt][i];
  });
  ASSERT_EQ(err, "");
  for (int i = 0; i < M * N; ++i) EXPECT_EQ(c[i], ref[i]) << "row " << i / N << " col " << i % N;
}

TEST(CpuThreadOps, OtherMmaAndLdmatrixShapesRunPerLane) {
  // tf32 and s8 with constant fragments: every product term is the same.
  // ldmatrix_x1/x2 read rows of lanes 0-7 / 0-15 only.
  std::vector<float> tf32(64 * 4);
  std::vector<int32_t> s8(64 * 4);
  std::vector<uint32_t> x1(64), x2(64 * 2);
  const std::string err = RunGrid({}, {64}, 256, [&] {
    const int tid = Tid();
    uint16_t* rows = reinterpret_cast<uint16_t*>(dyn_smem());
    rows[tid] = static_cast<uint16_t>(tid); // 16 rows of 8 halves
    rows[tid + 64] = static_cast<uint16_t>(tid + 64);
    sync_threads();
    const uint32_t a[4] = {float_bits(1.5f), float_bits(1.5f), float_bits(1.5f), float_bits(1.5f)};
    const uint32_t b[2] = {float_bits(2.0f), float_bits(2.0f)};
    const float cf[4] = {1, 2, 3, 4};
    mma_m16n8k8_tf32(&tf32[4 * tid], a, b, cf);
    const uint32_t a8[4] = {pack_b8x4(1, 1, 1, 1), pack_b8x4(1, 1, 1, 1), pack_b8x4(1, 1, 1, 1),
                            pack_b8x4(1, 1, 1, 1)};
    const uint32_t b8[2] = {pack_b8x4(0xff, 0xff, 0xff, 0xff), pack_b8x4(0xff, 0xff, 0xff, 0xff)};
    const int32_t ci[4] = {100, 100, 100, 100};
    mma_m16n8k32_s8(&s8[4 * tid], a8, b8, ci);
    const int lane = tid % 32;
    ldmatrix_x1(&x1[tid], rows + 8 * (lane % 8));
    ldmatrix_x2(&x2[2 * tid], rows + 8 * (lane % 16));
  });
  ASSERT_EQ(err, "");
  for (int tid = 0; tid < 64; ++tid) {
    const int lane = tid % 32;
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(tf32[4 * tid + i], 1.0f + i + 8 * 3.0f);
      EXPECT_EQ(s8[4 * tid + i], 100 - 32);
    }
    // Register 0 of lane l: row l/4, columns 2(l%4) and 2(l%4)+1 of matrix 0.
    const uint32_t lo = static_cast<uint32_t>(8 * (lane / 4) + 2 * (lane % 4));
    EXPECT_EQ(x1[tid], lo | (lo + 1) << 16) << tid;
    EXPECT_EQ(x2[2 * tid], lo | (lo + 1) << 16) << tid;
    EXPECT_EQ(x2[2 * tid + 1], (lo + 64) | (lo + 65) << 16) << tid;
  }
}

// ---- shfl_xor butterflies over several value types.
TEST(CpuThreadOps, ShflXorButterflySumsEveryType) {
  constexpr int kThreads = 64;
  std::vector<float> f(kThreads);
  std::vector<double> d(kThreads);
  std::vector<int32_t> i32(kThreads);
  std::vector<uint32_t> u32(kThreads);
  std::vector<int64_t> i64(kThreads);
  std::vector<uint16_t> h(kThreads), bf(kThreads);
  std::vector<int8_t> i8(kThreads);
  std::vector<float> own(kThreads), xor1(kThreads);
  const std::string err = RunGrid({}, {kThreads}, 0, [&] {
    const int tid = Tid();
    float vf = static_cast<float>(tid);
    double vd = 0.5 * tid;
    int32_t vi = -tid;
    uint32_t vu = 0x80000000u + static_cast<uint32_t>(tid);
    int64_t vl = (int64_t{1} << 40) * tid;
    for (int mask = 16; mask >= 1; mask /= 2) {
      float of;
      double od;
      int32_t oi;
      uint32_t ou;
      int64_t ol;
      shfl_xor(&of, vf, mask);
      shfl_xor(&od, vd, mask);
      shfl_xor(&oi, vi, mask);
      shfl_xor(&ou, vu, mask);
      shfl_xor(&ol, vl, mask);
      vf += of, vd += od, vi += oi, vu += ou, vl += ol;
    }
    f[tid] = vf, d[tid] = vd, i32[tid] = vi, u32[tid] = vu, i64[tid] = vl;
    half_t oh;
    shfl_xor(&oh, float_to_half(static_cast<float>(tid)), 5);
    h[tid] = oh.bits;
    bfloat16_t ob;
    shfl_xor(&ob, float_to_bfloat16(static_cast<float>(tid)), 3);
    bf[tid] = ob.bits;
    int8_t o8;
    shfl_xor(&o8, static_cast<int8_t>(-tid), 1);
    i8[tid] = o8;
    // shfl.sync reads bits 4:0 of the mask: 32 is the own lane, 33 is lane ^ 1.
    float o32, o33;
    shfl_xor(&o32, static_cast<float>(tid), 32);
    shfl_xor(&o33, static_cast<float>(tid), 33);
    own[tid] = o32;
    xor1[tid] = o33;
  });
  ASSERT_EQ(err, "");
  for (int tid = 0; tid < kThreads; ++tid) {
    const int base = tid / 32 * 32;
    int64_t sum = 0;
    for (int l = base; l < base + 32; ++l) sum += l;
    EXPECT_EQ(f[tid], static_cast<float>(sum));
    EXPECT_EQ(d[tid], 0.5 * static_cast<double>(sum));
    EXPECT_EQ(i32[tid], -sum);
    EXPECT_EQ(u32[tid], static_cast<uint32_t>(sum)); // 32 * 2^31 wraps away
    EXPECT_EQ(i64[tid], (int64_t{1} << 40) * sum);
    EXPECT_EQ(h[tid], float_to_half(static_cast<float>(tid ^ 5)).bits);
    EXPECT_EQ(bf[tid], float_to_bfloat16(static_cast<float>(tid ^ 3)).bits);
    EXPECT_EQ(i8[tid], static_cast<int8_t>(-(tid ^ 1)));
    EXPECT_EQ(own[tid], static_cast<float>(tid));
    EXPECT_EQ(xor1[tid], static_cast<float>(tid ^ 1));
  }
}

// ---- Barriers with a shared-memory exchange, in a 3-D block.
TEST(CpuThreadOps, SyncThreadsOrdersSharedMemoryExchange) {
  constexpr int kThreads = 16 * 4 * 2, kRounds = 5;
  std::vector<int> got(kThreads, 0);
  std::vector<int> zero_at_start(kThreads, 0), aligned(kThreads, 0);
  const std::string err = RunGrid({}, {16, 4, 2}, kThreads * sizeof(int) + 3, [&] {
    const int tid = tid_x() + 16 * (tid_y() + 4 * tid_z());
    int* smem = reinterpret_cast<int*>(dyn_smem());
    aligned[tid] = reinterpret_cast<uintptr_t>(smem) % 128 == 0;
    zero_at_start[tid] = smem[tid] == 0;
    sync_threads();
    int sum = 0;
    for (int r = 0; r < kRounds; ++r) {
      smem[tid] = tid * 100 + r;
      sync_threads();
      sum += smem[(tid + r + 1) % kThreads]; // written by another thread
      sync_threads();
    }
    got[tid] = sum;
  });
  ASSERT_EQ(err, "");
  for (int tid = 0; tid < kThreads; ++tid) {
    int want = 0;
    for (int r = 0; r < kRounds; ++r) want += (tid + r + 1) % kThreads * 100 + r;
    EXPECT_EQ(got[tid], want) << tid;
    EXPECT_TRUE(zero_at_start[tid]);
    EXPECT_TRUE(aligned[tid]);
  }
}

// ---- Blocks see their own blockIdx, the grid's gridDim, and fresh shared
// memory.
TEST(CpuThreadOps, EveryBlockAndThreadRunsOnceWithItsIndices) {
  const Dim3 grid{3, 2, 2}, block{4, 2, 2};
  const int threads = 16, blocks = 12;
  std::vector<int> seen(blocks * threads, 0);
  std::vector<int> smem_was_zero(blocks, 1);
  const std::string err = RunGrid(grid, block, 64, [&] {
    const int b = bid_x() + 3 * (bid_y() + 2 * bid_z());
    const int t = tid_x() + 4 * (tid_y() + 2 * tid_z());
    EXPECT_EQ(nbid_x(), 3);
    EXPECT_EQ(nbid_y(), 2);
    EXPECT_EQ(nbid_z(), 2);
    int* flag = reinterpret_cast<int*>(dyn_smem());
    if (t == 0 && *flag != 0) smem_was_zero[b] = 0;
    sync_threads();
    if (t == 0) *flag = 1; // must not leak into the next block
    ++seen[b * threads + t];
    EXPECT_EQ(lane_id(), static_cast<uint32_t>(t));
  });
  ASSERT_EQ(err, "");
  for (int i = 0; i < blocks * threads; ++i) EXPECT_EQ(seen[i], 1) << i;
  for (int b = 0; b < blocks; ++b) EXPECT_TRUE(smem_was_zero[b]) << b;
}

// ---- Atomics from every thread of several blocks, and from OS threads.
TEST(CpuThreadOps, AtomicsAccumulateAcrossBlocks) {
  int32_t count = 0, imax = std::numeric_limits<int32_t>::min(), imin = 0;
  uint32_t ucount = 0;
  int64_t big = 0;
  float fsum = 0, fmax = -1e30f, fmin = 1e30f;
  double dsum = 0;
  half_t hsum{0};
  bfloat16_t bmax = float_to_bfloat16(-100.0f);
  const std::string err = RunGrid({4, 3}, {64}, 0, [&] {
    const int g = Tid() + 64 * (bid_x() + 4 * bid_y()); // 0..767
    atomic_add(&count, 1);
    atomic_add(&ucount, 2u);
    atomic_add(&big, int64_t{1} << 40);
    atomic_add(&fsum, 0.5f);
    atomic_add(&dsum, 0.25);
    atomic_add(&hsum, float_to_half(1.0f));
    atomic_max(&imax, (g * 37) % 701);
    atomic_min(&imin, -((g * 11) % 503));
    atomic_max(&fmax, static_cast<float>(g) * 0.5f);
    atomic_min(&fmin, static_cast<float>(g) - 3.0f);
    atomic_max(&bmax, float_to_bfloat16(static_cast<float>(g % 64)));
  });
  ASSERT_EQ(err, "");
  EXPECT_EQ(count, 768);
  EXPECT_EQ(ucount, 1536u);
  EXPECT_EQ(big, int64_t{768} << 40);
  EXPECT_EQ(fsum, 384.0f);
  EXPECT_EQ(dsum, 192.0);
  EXPECT_EQ(half_to_float(hsum), 768.0f);
  EXPECT_EQ(imax, 700);
  EXPECT_EQ(imin, -502);
  EXPECT_EQ(fmax, 383.5f);
  EXPECT_EQ(fmin, -3.0f);
  EXPECT_EQ(bfloat16_to_float(bmax), 63.0f);
}

TEST(CpuThreadOps, AtomicsAreAtomicAcrossOsThreads) {
  constexpr int kThreads = 4, kIters = 100000;
  int32_t count = 0;
  float fsum = 0;
  int64_t mx = 0;
  half_t hsum{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kThreads; ++w) {
    workers.emplace_back([&, w] {
      for (int i = 0; i < kIters; ++i) {
        atomic_add(&count, 1);
        atomic_add(&fsum, 1.0f); // exact below 2^24
        atomic_max(&mx, int64_t{i} * kThreads + w);
        if (i < 256) atomic_add(&hsum, float_to_half(1.0f)); // exact below 2048
      }
    });
  }
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(count, kThreads * kIters);
  EXPECT_EQ(fsum, static_cast<float>(kThreads * kIters));
  EXPECT_EQ(mx, int64_t{kIters - 1} * kThreads + kThreads - 1);
  EXPECT_EQ(half_to_float(hsum), 1024.0f);
}

// Split-K's ticket: of `parts` arrivals at a counter exactly one, the last,
// sees flag 1, and it leaves the counter at 0, so the next round (the next
// launch on the same workspace, which starts after this one ended) works the
// same; also with a round's arrivals on several OS threads at once.
TEST(CpuThreadOps, SplitkTicketFlagsTheLastArrivalAndResetsTheCounter) {
  int counter = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<int> flags(5, -1);
    for (int part = 0; part < 5; ++part) splitk_ticket(&flags[part], &counter, 5);
    EXPECT_EQ(flags, (std::vector<int>{0, 0, 0, 0, 1})) << "round " << round;
    EXPECT_EQ(counter, 0);
  }
  constexpr int kTiles = 64, kParts = 4, kRounds = 20;
  std::vector<int> counters(kTiles, 0);
  std::vector<std::atomic<int>> lasts(kTiles);
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::thread> parts;
    for (int w = 0; w < kParts; ++w) {
      parts.emplace_back([&] {
        for (int t = 0; t < kTiles; ++t) {
          int flag = -1;
          splitk_ticket(&flag, &counters[t], kParts);
          if (flag == 1) lasts[t].fetch_add(1);
        }
      });
    }
    for (std::thread& t : parts) t.join();
  }
  for (int t = 0; t < kTiles; ++t) {
    EXPECT_EQ(lasts[t].load(), kRounds) << "tile " << t; // one last arrival a round
    EXPECT_EQ(counters[t], 0) << "tile " << t;
  }
}

// ---- Partial warps: a 48-thread block has warp 1 with lanes 0-15.
TEST(CpuThreadOps, PartialWarpBarriersAndShufflesWork) {
  std::vector<int> sum(48);
  std::vector<uint32_t> x2(48 * 2);
  const std::string err = RunGrid({}, {48}, 512, [&] {
    const int tid = Tid();
    uint16_t* rows = reinterpret_cast<uint16_t*>(dyn_smem());
    for (int i = 0; i < 4; ++i) rows[4 * tid + i] = static_cast<uint16_t>(4 * tid + i);
    sync_threads();
    int v = tid;
    for (int mask = 16; mask >= 1; mask /= 2) {
      int o;
      shfl_xor(&o, v, mask); // in warp 1, lane ^ 16 is missing: own value
      v += o;
    }
    sum[tid] = v;
    ldmatrix_x2(&x2[2 * tid], rows + 8 * (tid % 16)); // needs lanes 0-15 only
  });
  ASSERT_EQ(err, "");
  for (int tid = 0; tid < 32; ++tid) EXPECT_EQ(sum[tid], 496);
  int warp1 = 0; // lanes 32..47; the mask-16 step doubles each value
  for (int l = 32; l < 48; ++l) warp1 += 2 * l;
  for (int tid = 32; tid < 48; ++tid) {
    EXPECT_EQ(sum[tid], warp1) << tid;
    const int lane = tid % 32;
    const uint32_t lo = static_cast<uint32_t>(8 * (lane / 4) + 2 * (lane % 4));
    EXPECT_EQ(x2[2 * tid], lo | (lo + 1) << 16) << tid;
  }
}

// ---- Failures are reported, not hung on.
TEST(CpuThreadOps, ReportsBarriersThatCannotComplete) {
  struct Case {
    const char* name;
    Dim3 grid, block;
    std::function<void()> body;
    std::string want;
  };
  const Case cases[] = {
      {"exited threads",
       {},
       {128},
       [] {
         if (Tid() >= 96) return;
         sync_threads();
       },
       "block (0,0,0): sync_threads reached by 96 of 128 threads; 32 exited without reaching it"},
      {"second block",
       {3},
       {64},
       [] {
         if (bid_x() == 1 && Tid() == 5) return;
         sync_threads();
       },
       "block (1,0,0): sync_threads reached by 63 of 64 threads; 1 exited without reaching it"},
      {"barrier against warp collective",
       {},
       {128},
       [] {
         if (Tid() < 16) {
           float o;
           shfl_xor(&o, 1.0f, 1);
         }
         sync_threads();
       },
       "block (0,0,0): sync_threads reached by 112 of 128 threads; 16 wait in a warp collective "
       "(shfl_xor(32-bit))"},
      {"warp collective with exited lanes",
       {},
       {64},
       [] {
         if (Tid() >= 32 && Tid() < 48) {
           float o;
           shfl_xor(&o, 1.0f, 1);
         }
       },
       "block (0,0,0): warp 1: shfl_xor(32-bit) reached by 16 of 32 lanes; the others exited"},
      {"different collectives in one warp",
       {},
       {32},
       [] {
         uint32_t r[1];
         alignas(16) static const uint16_t row[8] = {};
         if (Tid() % 2 == 0) {
           float o;
           shfl_xor(&o, 1.0f, 1);
         } else {
           ldmatrix_x1(r, row);
         }
       },
       "block (0,0,0): warp 0: lane 1 reached ldmatrix_x1 while 1 lane(s) of its warp wait in "
       "shfl_xor(32-bit)"},
      {"mma in a partial warp",
       {},
       {48},
       [] {
         const uint32_t a[4] = {}, b[2] = {};
         float d[4] = {};
         if (Tid() >= 32) mma_m16n8k16_f16(d, a, b, d);
       },
       "block (0,0,0): warp 1: mma_m16n8k16_f16 needs 32 lanes, but this partial warp has 16"},
      {"ldmatrix_x4 in a partial warp",
       {},
       {40},
       [] {
         uint32_t r[4];
         alignas(16) static const uint16_t row[8] = {};
         if (Tid() >= 32) ldmatrix_x4(r, row);
       },
       "block (0,0,0): warp 1: ldmatrix_x4 reads the rows of lanes 0-31, but this partial warp "
       "has 8"},
      {"exception",
       {},
       {32},
       [] {
         if (Tid() == 3) throw 1;
       },
       "block (0,0,0): thread (3,0,0) threw an exception"},
      {"too many threads",
       {},
       {32, 32, 2},
       [] {},
       "block (32,32,2) has 2048 threads, more than 1024"},
      {"bad grid", {-1}, {32}, [] {}, "invalid launch: grid (-1,1,1), block (32,1,1)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(RunGrid(c.grid, c.block, 0, c.body), c.want);
  }
}

TEST(CpuThreadOps, StopsAtTheFirstFailedBlockAndTruncatesTheMessage) {
  int blocks_run = 0;
  char error[16];
  const auto body = [&] {
    if (Tid() == 0) ++blocks_run;
    if (bid_x() == 1 && Tid() == 0) return;
    sync_threads();
  };
  EXPECT_NE(launch_grid(4, 1, 1, 32, 1, 1, 0, body, error, sizeof error), 0);
  EXPECT_EQ(blocks_run, 2);
  EXPECT_EQ(std::string(error), "block (1,0,0): "); // 15 characters and the NUL
  // An empty grid runs nothing and succeeds.
  EXPECT_EQ(launch_grid(0, 1, 1, 32, 1, 1, 0, body, error, sizeof error), 0);
  EXPECT_EQ(blocks_run, 2);
}

TEST(CpuThreadOps, OutsideLaunchGridIndicesAreZeroAndBarriersNoOps) {
  EXPECT_EQ(tid_x(), 0);
  EXPECT_EQ(bid_z(), 0);
  EXPECT_EQ(nbid_y(), 1);
  EXPECT_EQ(dyn_smem(), nullptr);
  sync_threads();
  EXPECT_DEATH(
      {
        float o;
        shfl_xor(&o, 1.0f, 1);
      },
      "outside launch_grid");
}

__attribute__((noinline)) int Recurse(int depth) {
  volatile char frame[512];
  frame[0] = static_cast<char>(depth);
  if (depth == 0) return frame[0];
  const int r = Recurse(depth - 1);
  return r + frame[0]; // not a tail call
}

TEST(CpuThreadOps, StackOverflowHitsTheGuardPage) {
  EXPECT_DEATH(RunGrid({}, {32}, 0, [] { Recurse(1000); }), "");
  EXPECT_EQ(RunGrid({}, {32}, 0, [] { Recurse(40); }), ""); // ~20 KiB is fine
}

// ---- Math and conversions.
TEST(CpuThreadOps, MathFollowsTheDocumentedSemantics) {
  EXPECT_EQ(round(2.5f), 2.0f); // half to even
  EXPECT_EQ(round(3.5), 4.0);
  EXPECT_EQ(round(-0.5f), -0.0f);
  EXPECT_EQ(trunc(-1.7f), -1.0f);
  EXPECT_EQ(floor(-1.5), -2.0);
  EXPECT_EQ(ceil(1.25f), 2.0f);
  EXPECT_EQ(abs(-3.0f), 3.0f);
  EXPECT_EQ(abs(std::numeric_limits<int>::min()), std::numeric_limits<int>::min());
  EXPECT_EQ(min(1.0f, std::nanf("")), 1.0f); // NaN loses
  EXPECT_EQ(max(std::nan(""), -2.0), -2.0);
  EXPECT_EQ(min(int64_t{-5}, int64_t{3}), -5);
  EXPECT_EQ(max(7u, 9u), 9u);
  EXPECT_FLOAT_EQ(sigmoid(0.0f), 0.5f);
  EXPECT_DOUBLE_EQ(sigmoid(std::log(3.0)), 0.75);
  EXPECT_FLOAT_EQ(rsqrt(4.0f), 0.5f);
  EXPECT_FLOAT_EQ(exp2(10.0f), 1024.0f);
  EXPECT_FLOAT_EQ(log2(8.0f), 3.0f);
  EXPECT_FLOAT_EQ(pow(2.0f, 0.5f), std::sqrt(2.0f));
  EXPECT_NEAR(tanh(1.0), 0.7615941559557649, 1e-15);
  EXPECT_NEAR(sin(1.0f) * sin(1.0f) + cos(1.0f) * cos(1.0f), 1.0f, 1e-6);
  EXPECT_NEAR(exp(1.0), 2.718281828459045, 1e-15);
  EXPECT_NEAR(log(2.0f), 0.6931472f, 1e-7);
  EXPECT_EQ(sqrt(2.25), 1.5);
}

TEST(CpuThreadOps, ConversionsSaturateRoundAndGoThroughFloat) {
  const float nan = std::nanf("");
  EXPECT_EQ(cvt<int32_t>(3.9f), 3);
  EXPECT_EQ(cvt<int32_t>(-3.9f), -3);
  EXPECT_EQ(cvt<int32_t>(3e9f), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(cvt<int32_t>(-3e9), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(cvt<int32_t>(nan), 0);
  EXPECT_EQ(cvt<uint32_t>(-5.0f), 0u);
  EXPECT_EQ(cvt<uint8_t>(300.0f), 255);
  EXPECT_EQ(cvt<int8_t>(-300.0), -128);
  EXPECT_EQ(cvt<int64_t>(1e30f), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(cvt<uint64_t>(1.8e19), 18000000000000000000ull);
  EXPECT_EQ(cvt<uint64_t>(2e19), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(cvt<int16_t>(float_to_half(-1000.5f)), -1000);
  EXPECT_EQ(cvt<uint8_t>(int32_t{300}), 44); // integers wrap
  EXPECT_EQ(cvt<int32_t>(uint32_t{0xffffffffu}), -1);
  EXPECT_EQ(cvt<bool>(0.25f), true);
  EXPECT_EQ(cvt<bool>(int64_t{0}), false);
  EXPECT_EQ(cvt<bool>(float_to_half(0.0f)), false);
  EXPECT_EQ(cvt<float>(true), 1.0f);
  EXPECT_EQ(cvt<half_t>(1.0f).bits, 0x3c00);
  EXPECT_EQ(cvt<half_t>(int32_t{70000}).bits, 0x7c00); // overflows to inf
  EXPECT_EQ(cvt<half_t>(2049.0).bits, float_to_half(2048.0f).bits);
  EXPECT_EQ(cvt<bfloat16_t>(float_to_half(1.5f)).bits, float_to_bfloat16(1.5f).bits);
  EXPECT_EQ(cvt<fp8_e4m3_t>(1000.0f).bits, 0x7e); // saturates to 448
  EXPECT_EQ(cvt<float>(cvt<fp8_e5m2_t>(-3.0f)), -3.0f);
  EXPECT_EQ(cvt<half_t>(half_t{0x7d01}).bits, 0x7d01); // same type: bits unchanged
  EXPECT_EQ(cvt<double>(bfloat16_t{0x3f80}), 1.0);
  EXPECT_EQ(cvt<uint16_t>(fp8_e4m3_t{0x7e}), 448);
}

// ---- Built the way the toolchain builds kernels: embedded headers only,
// optimized, as a program of its own; with the assembly context switch and
// with the ucontext fallback, with each host compiler present.
constexpr char kProgram[] = R"cc(
#include <cstdio>
#include "kiln/cpu/runtime.h"
namespace rt = kiln::rt;
int main() {
  float out[128];
  char error[256];
  const int rc = rt::launch_grid(2, 1, 1, 128, 1, 1, 128 * sizeof(float), [&] {
    const int t = rt::tid_x();
    float* s = reinterpret_cast<float*>(rt::dyn_smem());
    s[t] = static_cast<float>(t + rt::bid_x());
    rt::sync_threads();
    float v = s[127 - t];
    for (int m = 16; m >= 1; m /= 2) {
      float o;
      rt::shfl_xor(&o, v, m);
      v = rt::max(v, o);
    }
    rt::sync_threads();
    if (rt::bid_x() == 1) out[t] = v;
  }, error, sizeof error);
  if (rc != 0) { std::printf("error: %s\n", error); return 1; }
  for (int t = 0; t < 128; ++t) {
    const float want = static_cast<float>(128 - t / 32 * 32);
    if (out[t] != want) { std::printf("thread %d: %g, want %g\n", t, out[t], want); return 1; }
  }
  std::printf("ok\n");
  return 0;
}
)cc";

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CpuThreadOps, GeneratedStyleProgramRunsWithEveryContextSwitch) {
  namespace fs = std::filesystem;
  std::string templ = (fs::temp_directory_path() / "kiln_fiber_XXXXXX").string();
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  const fs::path dir(templ);
  for (const runtime::EmbeddedHeader& h : runtime::CpuRuntimeHeaders()) {
    const fs::path p = dir / "include" / std::string(h.name);
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << h.content;
  }
  std::ofstream(dir / "main.cc") << kProgram;
  struct Variant {
    const char* compiler;
    const char* flags;
  };
  int ran = 0;
  for (const Variant& v : {Variant{"g++", "-O2"}, Variant{"clang++", "-O2"},
                           Variant{"g++", "-O1 -DKILN_CPU_FIBER_UCONTEXT"},
                           Variant{"g++", "-O1 -fsanitize=address,undefined"}}) {
    SCOPED_TRACE(testing::Message() << v.compiler << " " << v.flags);
    if (std::system((std::string("command -v ") + v.compiler + " > /dev/null 2>&1").c_str()) != 0)
      continue;
    const fs::path exe = dir / "main";
    const fs::path log = dir / "log";
    const std::string build = std::string("timeout 300 ") + v.compiler + " -std=c++17 " + v.flags +
                              " -Wall -Wextra -Werror -I " + (dir / "include").string() + " " +
                              (dir / "main.cc").string() + " -o " + exe.string() + " > " +
                              log.string() + " 2>&1";
    ASSERT_EQ(std::system(build.c_str()), 0) << ReadFile(log);
    ASSERT_EQ(std::system(("timeout 60 " + exe.string() + " > " + log.string() + " 2>&1").c_str()),
              0)
        << ReadFile(log);
    EXPECT_EQ(ReadFile(log), "ok\n");
    ++ran;
  }
  EXPECT_GT(ran, 0);
  fs::remove_all(dir);
}

} // namespace
} // namespace kiln::rt
