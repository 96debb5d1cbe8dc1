// The CPU twin of Hopper's asynchronous data movement (kiln/cpu/tma.h):
// mbarrier phases and parity waits, TMA boxes with out-of-bounds zeros and
// the swizzle on address bits, named barriers, a producer/consumer ring like
// the one warp_specialize.cc emits, and the misuses launch_grid must report
// instead of hanging.
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kiln/cpu/runtime.h"

namespace kiln::rt {
namespace {

std::string RunBlock(int threads, size_t smem, const std::function<void()>& body) {
  char error[512] = "untouched";
  const int rc = launch_grid(1, 1, 1, threads, 1, 1, smem, body, error, sizeof error);
  if (rc == 0) return "";
  return error[0] ? std::string(error) : std::string("failed with an empty message");
}

uint64_t* Bar(int i) { return reinterpret_cast<uint64_t*>(dyn_smem()) + i; }

TEST(CpuTma, AFreshBarrierPassesParityOneAndCompletesPhaseZeroAfterCountArrivals) {
  std::vector<int> order;
  const std::string err = RunBlock(64, 64, [&] {
    const int tid = tid_x();
    if (tid == 0) mbarrier_init(Bar(0), 2);
    sync_threads();
    mbarrier_wait(Bar(0), 1); // the phase before the first counts as completed
    // Parity names a phase only within two phases of the current one: once
    // phase 0 completed, wait(1) would be a wait for phase 1.
    sync_threads();
    if (tid == 5) {
      order.push_back(1);
      mbarrier_arrive(Bar(0));
    }
    if (tid == 40) {
      order.push_back(2);
      mbarrier_arrive(Bar(0));
    }
    mbarrier_wait(Bar(0), 0); // returns only once both arrived
    if (tid == 0) order.push_back(3);
  });
  ASSERT_EQ(err, "");
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(CpuTma, ExpectedBytesHoldThePhaseUntilTheyArrive) {
  const std::string err = RunBlock(32, 64, [&] {
    if (tid_x() != 0) return;
    mbarrier_init(Bar(0), 1);
    mbarrier_arrive_expect_tx(Bar(0), 64);
    // The arrival alone does not complete the phase: 64 bytes are pending.
    uint64_t raw;
    std::memcpy(&raw, Bar(0), sizeof raw);
    EXPECT_EQ((raw >> 22) & 1, 0u);
    EXPECT_EQ(static_cast<int32_t>(raw >> 32), 64);
  });
  EXPECT_EQ(err, "");
}

TEST(CpuTma, WaitingForAPhaseThatNeverCompletesIsReportedNotHung) {
  const std::string err = RunBlock(64, 64, [&] {
    if (tid_x() == 0) mbarrier_init(Bar(0), 3);
    sync_threads();
    if (tid_x() == 1) mbarrier_arrive(Bar(0));
    mbarrier_wait(Bar(0), 0);
  });
  EXPECT_NE(err.find("wait for an mbarrier phase that never completes"), std::string::npos) << err;
}

TEST(CpuTma, UsingAnUninitializedBarrierFailsTheBlock) {
  const std::string err = RunBlock(32, 64, [&] { mbarrier_arrive(Bar(1)); });
  EXPECT_NE(err.find("uninitialized mbarrier"), std::string::npos) << err;
}

TEST(CpuTma, MoreArrivalsThanTheCountFailTheBlock) {
  const std::string err = RunBlock(32, 64, [&] {
    if (tid_x() != 0) return;
    mbarrier_init(Bar(0), 1);
    mbarrier_arrive_expect_tx(Bar(0), 16); // phase 0 waits for 16 bytes
    mbarrier_arrive(Bar(0));
  });
  EXPECT_NE(err.find("more arrivals"), std::string::npos) << err;
}

// A 2-d box with the 128-byte swizzle: 16-bit elements, a 10 x 100 tensor,
// box (8 rows, 64 columns) at (row 4, column 48): rows 10+ and columns 100+
// are outside and must read as zero; chunk c of box row r lands at chunk
// c ^ (r % 8) of its 128-byte row.
TEST(CpuTma, ABoxLandsSwizzledWithZerosOutsideTheTensor) {
  constexpr int kRows = 10, kCols = 100;
  std::vector<uint16_t> g(kRows * kCols);
  for (int i = 0; i < kRows * kCols; ++i) g[i] = static_cast<uint16_t>(i + 1);
  std::vector<uint16_t> tile(8 * 64, 0xffff);
  const std::string err = RunBlock(32, 2048, [&] {
    if (tid_x() != 0) return;
    const TmaDesc m = make_tma_desc(g.data(), 2, 128, 2, kCols, kRows, 1, 1, 1, 64, 8, 1, 1, 1);
    uint16_t* dst = reinterpret_cast<uint16_t*>(dyn_smem() + 1024);
    mbarrier_init(Bar(0), 1);
    mbarrier_arrive_expect_tx(Bar(0), 8 * 64 * 2);
    tma_load_2d(dst, Bar(0), m, 48, 4);
    mbarrier_wait(Bar(0), 0);
    std::memcpy(tile.data(), dst, tile.size() * 2);
  });
  ASSERT_EQ(err, "");
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 64; ++c) {
      const int gr = 4 + r, gc = 48 + c;
      const uint16_t want = gr < kRows && gc < kCols ? g[gr * kCols + gc] : 0;
      const int stored = r * 64 + (((c / 8) ^ (r % 8)) * 8) + c % 8;
      ASSERT_EQ(tile[stored], want) << "row " << r << " col " << c;
    }
  }
}

TEST(CpuTma, AMisalignedDestinationOrAWideBoxFailsTheBlock) {
  std::vector<uint16_t> g(64 * 64, 1);
  std::string err = RunBlock(32, 4096, [&] {
    if (tid_x() != 0) return;
    const TmaDesc m = make_tma_desc(g.data(), 2, 128, 2, 64, 64, 1, 1, 1, 64, 8, 1, 1, 1);
    mbarrier_init(Bar(0), 1);
    tma_load_2d(dyn_smem() + 1024 + 64, Bar(0), m, 0, 0);
  });
  EXPECT_NE(err.find("not 128-byte aligned"), std::string::npos) << err;
  err = RunBlock(32, 4096, [&] {
    if (tid_x() != 0) return;
    const TmaDesc m = make_tma_desc(g.data(), 2, 64, 2, 64, 64, 1, 1, 1, 64, 8, 1, 1, 1);
    mbarrier_init(Bar(0), 1);
    tma_load_2d(dyn_smem() + 1024, Bar(0), m, 0, 0);
  });
  EXPECT_NE(err.find("wider than its swizzle"), std::string::npos) << err;
}

// The ring warp_specialize.cc builds: thread 64 (the producer) loads tile
// ko of a 1-d tensor into stage ko % 2 after the consumers released it; the
// 64 consumers sum each tile and release it, one arrival per warp.
TEST(CpuTma, AProducerConsumerRingDeliversEveryTileOnce) {
  constexpr int kTiles = 7, kTile = 64, kStages = 2;
  std::vector<float> x(kTiles * kTile);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13);
  std::vector<float> sums(64, 0.0f);
  const std::string err = RunBlock(96, 1024 + kStages * kTile * 4, [&] {
    const int tid = tid_x();
    uint64_t* full = Bar(0);
    uint64_t* empty = Bar(kStages);
    float* stage0 = reinterpret_cast<float*>(dyn_smem() + 1024);
    if (tid == 0) {
      for (int s = 0; s < kStages; ++s) {
        mbarrier_init(full + s, 1);
        mbarrier_init(empty + s, 2);
      }
      fence_barrier_init();
    }
    sync_threads();
    if (tid >= 64) {
      if (tid != 64) return;
      const TmaDesc m =
          make_tma_desc(x.data(), 4, 0, 1, kTiles * kTile, 1, 1, 1, 1, kTile, 1, 1, 1, 1);
      for (int ko = 0; ko < kTiles; ++ko) {
        const int s = ko % kStages;
        mbarrier_wait(empty + s, (ko / kStages + 1) % 2);
        mbarrier_arrive_expect_tx(full + s, kTile * 4);
        tma_load_1d(stage0 + s * kTile, full + s, m, ko * kTile);
      }
      return;
    }
    for (int ko = 0; ko < kTiles; ++ko) {
      const int s = ko % kStages;
      mbarrier_wait(full + s, (ko / kStages) % 2);
      sums[tid] += stage0[s * kTile + tid];
      named_barrier_sync(1, 64); // both warps read before either releases
      if (tid % 32 == 0) mbarrier_arrive(empty + s);
    }
  });
  ASSERT_EQ(err, "");
  for (int t = 0; t < 64; ++t) {
    float want = 0;
    for (int ko = 0; ko < kTiles; ++ko) want += x[ko * kTile + t];
    EXPECT_EQ(sums[t], want) << "thread " << t;
  }
}

TEST(CpuTma, NamedBarriersCountTheirOwnThreadsAndReportMisuse) {
  int passed = 0;
  std::string err = RunBlock(128, 0, [&] {
    if (tid_x() >= 64) return; // the others exit: bar.sync 1, 64 does not wait for them
    named_barrier_sync(1, 64);
    ++passed;
  });
  EXPECT_EQ(err, "");
  EXPECT_EQ(passed, 64);
  err = RunBlock(128, 0, [&] { named_barrier_sync(2, tid_x() < 32 ? 64 : 96); });
  EXPECT_NE(err.find("bar.sync 2 with"), std::string::npos) << err;
  err = RunBlock(64, 0, [&] {
    if (tid_x() < 32) named_barrier_sync(3, 64);
  });
  EXPECT_NE(err.find("bar.sync 3 reached by 32 of its 64 threads"), std::string::npos) << err;
}

// TileLang's T.tma_copy: one thread expects the bytes without arriving,
// every thread of the producer warpgroup arrives, and the phase completes
// only once the count of arrivals and the bytes are both in.
TEST(CpuTma, ExpectTxAddsBytesWithoutAnArrival) {
  std::vector<int> order;
  const std::string err = RunBlock(64, 64, [&] {
    const int tid = tid_x();
    if (tid == 0) mbarrier_init(Bar(0), 32);
    sync_threads();
    if (tid < 32) {
      if (tid == 0) mbarrier_expect_tx(Bar(0), 16);
      mbarrier_arrive(Bar(0));
      if (tid == 31) {
        // Every arrival is in, the bytes are not: the phase is still open.
        uint64_t raw;
        std::memcpy(&raw, Bar(0), sizeof raw);
        EXPECT_EQ((raw >> 22) & 1, 0u);
        EXPECT_EQ(static_cast<int32_t>(raw >> 32), 16);
        order.push_back(1);
        detail::MbarCompleteTx(Bar(0), 16); // what a TMA load's completion does
      }
    } else {
      mbarrier_wait(Bar(0), 0);
      if (tid == 32) order.push_back(2);
    }
  });
  ASSERT_EQ(err, "");
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

} // namespace
} // namespace kiln::rt
