// Live ranges of shared buffers and their placement with reuse
// (compiler/passes/shared_liveness.h): what verify-resources counts and pass
// shared-placement lays out.
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/text_parser.h"
#include "compiler/passes/shared_liveness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

SharedSlot Slot(const std::string& name, int64_t bytes, int64_t align, int64_t first,
                int64_t last) {
  SharedSlot s;
  s.name = name;
  s.bytes = bytes;
  s.align = align;
  s.live = {first, last};
  return s;
}

TEST(SharedLivenessTest, SequentialAlignsEachOffset) {
  const SharedLayout l = PlaceSequential(
      {Slot("a", 100, 128, 0, 0), Slot("b", 50, 1024, 0, 0), Slot("c", 8, 1, 0, 0)});
  EXPECT_THAT(l.offsets, ElementsAre(0, 1024, 1074));
  EXPECT_EQ(l.total, 1082);
}

TEST(SharedLivenessTest, DisjointLifetimesShareBytes) {
  // a in phase 1, b in phase 2, c in both: a and b share, c has its own.
  const std::vector<SharedSlot> slots = {Slot("c", 64, 128, 0, 5), Slot("a", 4096, 128, 1, 2),
                                         Slot("b", 3000, 128, 3, 5)};
  const SharedLayout l = PlaceByLiveness(slots);
  EXPECT_THAT(l.offsets, ElementsAre(4096, 0, 0));
  EXPECT_EQ(l.total, 4160);
  EXPECT_EQ(PlaceSequential(slots).total, 128 + 4096 + 3000);
  EXPECT_THAT(SharedReuses(slots, l), ElementsAre(Pair(1, 2)));
}

TEST(SharedLivenessTest, NoReuseKeepsTheSequentialPlacement) {
  const std::vector<SharedSlot> slots = {Slot("a", 100, 128, 0, 3), Slot("b", 100, 128, 1, 2)};
  const SharedLayout l = PlaceByLiveness(slots);
  EXPECT_THAT(l.offsets, ElementsAre(0, 128));
  EXPECT_TRUE(SharedReuses(slots, l).empty());
}

TEST(SharedLivenessTest, UnusedBuffersOverlapNothing) {
  const std::vector<SharedSlot> slots = {Slot("a", 1024, 128, 0, 3),
                                         Slot("unused", 512, 128, 1, 0)};
  const SharedLayout l = PlaceByLiveness(slots);
  EXPECT_THAT(l.offsets, ElementsAre(0, 0));
  EXPECT_EQ(l.total, 1024);
  EXPECT_TRUE(SharedReuses(slots, l).empty()); // nothing touches the unused one
}

// Random slots: buffers live at the same time never share a byte, offsets
// keep their alignment, and reuse never costs more than no reuse.
TEST(SharedLivenessTest, RandomPlacementsAreSound) {
  std::mt19937 rng(20261206);
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE(round);
    std::vector<SharedSlot> slots;
    const int n = 1 + static_cast<int>(rng() % 12u);
    for (int i = 0; i < n; ++i) {
      const auto draw = [&](uint32_t n) { return static_cast<int64_t>(rng() % n); };
      const int64_t first = draw(10);
      const int64_t last = first + draw(6) - (draw(8) == 0 ? 7 : 0); // some never used
      const int64_t align = int64_t{1} << draw(11);
      slots.push_back(Slot(std::to_string(i), 1 + draw(5000), align, first, last));
    }
    const SharedLayout l = PlaceByLiveness(slots);
    ASSERT_EQ(l.offsets.size(), slots.size());
    EXPECT_LE(l.total, PlaceSequential(slots).total);
    for (size_t a = 0; a < slots.size(); ++a) {
      EXPECT_EQ(l.offsets[a] % slots[a].align, 0);
      EXPECT_LE(l.offsets[a] + slots[a].bytes, l.total);
      for (size_t b = a + 1; b < slots.size(); ++b) {
        if (!slots[a].live.Overlaps(slots[b].live)) continue;
        const bool apart = l.offsets[a] + slots[a].bytes <= l.offsets[b] ||
                           l.offsets[b] + slots[b].bytes <= l.offsets[a];
        EXPECT_TRUE(apart) << a << " and " << b << " are live together and share bytes";
      }
    }
    for (const auto& [earlier, later] : SharedReuses(slots, l)) {
      EXPECT_LT(slots[earlier].live.last, slots[later].live.first);
    }
  }
}

// Positions: loops and non-uniform ifs are one position each; a uniform if
// is numbered inside; T.annotate_layout and the alloc itself do not count.
TEST(SharedLivenessTest, LiveRangesFollowTheRules) {
  constexpr char kText[] = R"(program @p {
  param X: global float32[256]
  kernel grid(4) threads(128) as (bx) {
    alloc a: shared.dyn float32[256]
    alloc b: shared.dyn float32[256]
    alloc c: shared.dyn float32[256]
    alloc d: shared.dyn float32[256]
    alloc unused: shared.dyn float32[256]
    annotate_layout b swizzled
    a[0] = X[0]
    for k in serial(4) {
      X[k] = a[k]
      b[k] = X[k]
    }
    if bx == 0 {
      c[0] = b[0]
    } else {
      d[0] = X[1]
    }
    if thread_idx(0) < 64 {
      X[2] = c[0]
    } else {
      X[3] = d[0]
    }
  }
}
)";
  absl::StatusOr<ir::Program> p = ir::ParseProgramText(kText, "t.kir");
  ASSERT_TRUE(p.ok()) << p.status();
  const std::map<std::string, LiveRange> live =
      SharedLiveRanges(*p, {"a", "b", "c", "d", "unused"});
  // Units: 0-4 allocs, 5 annotate, 6 a[0] =, 7 the loop, 8 then, 9 else,
  // 10 the thread-dependent if.
  EXPECT_EQ(live.at("a").first, 6);
  EXPECT_EQ(live.at("a").last, 7);
  EXPECT_EQ(live.at("b").first, 7); // not 5: a layout is not an access
  EXPECT_EQ(live.at("b").last, 8);
  EXPECT_EQ(live.at("c").first, 8);
  EXPECT_EQ(live.at("c").last, 10);
  EXPECT_EQ(live.at("d").first, 9);
  EXPECT_EQ(live.at("d").last, 10);
  EXPECT_TRUE(live.at("unused").empty());
  EXPECT_EQ(LiveUnits(*p).size(), 11u);
}

TEST(SharedLivenessTest, InsertsBeforeUnitsInTheirOwnList) {
  constexpr char kText[] = R"(program @p {
  param X: global float32[256]
  kernel grid(4) threads(128) as (bx) {
    X[0] = 1.0
    if bx == 0 {
      X[1] = 2.0
      X[2] = 3.0
    }
    X[3] = 4.0
  }
}
)";
  absl::StatusOr<ir::Program> p = ir::ParseProgramText(kText, "t.kir");
  ASSERT_TRUE(p.ok()) << p.status();
  ir::Stmt sync;
  sync.kind = ir::StmtKind::kCall;
  sync.name = "sync_threads";
  InsertBeforeUnits(*p, {0, 2, 3}, {sync});
  const std::vector<ir::Stmt>& body = p->kernel.body;
  ASSERT_EQ(body.size(), 5u);
  EXPECT_EQ(body[0].name, "sync_threads");
  EXPECT_EQ(body[2].kind, ir::StmtKind::kIf);
  ASSERT_EQ(body[2].body.size(), 3u);
  EXPECT_EQ(body[2].body[1].name, "sync_threads");
  EXPECT_EQ(body[3].name, "sync_threads");
  EXPECT_EQ(body[4].kind, ir::StmtKind::kStore);
}

} // namespace
} // namespace kiln::passes
