#include <string>

#include "compiler/passes/target.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

TEST(TargetTest, ParsesSupportedTargets) {
  struct Case {
    std::string text;
    Target::Kind kind;
    int sm;
    int64_t smem_optin;
    int warp;
  };
  const Case cases[] = {
      {"cpu", Target::Kind::kCpu, 0, 232448, 32},
      {"cuda:sm_80", Target::Kind::kCuda, 80, 166912, 32},
      {"cuda:sm_86", Target::Kind::kCuda, 86, 101376, 32},
      {"cuda:sm_89", Target::Kind::kCuda, 89, 101376, 32},
      {"cuda:sm_90", Target::Kind::kCuda, 90, 232448, 32},
      {"cuda:sm_90a", Target::Kind::kCuda, 90, 232448, 32},
      {"hip:gfx942", Target::Kind::kHip, 0, 65536, 64},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto t = ParseTarget(c.text);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->kind, c.kind);
    EXPECT_EQ(t->sm_version, c.sm);
    EXPECT_EQ(t->shared_bytes_optin, c.smem_optin);
    EXPECT_EQ(t->warp_size, c.warp);
  }
}

TEST(TargetTest, RejectsUnknownTargetsListingTheKnownOnes) {
  for (const char* bad : {"", "cuda", "cuda:", "cuda:sm_70", "CUDA:sm_80", "hip:gfx1100", "gpu"}) {
    SCOPED_TRACE(bad);
    auto t = ParseTarget(bad);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(t.status().message()),
                ::testing::HasSubstr("supported: cpu, cuda:sm_80"));
  }
}

} // namespace
} // namespace kiln::passes
