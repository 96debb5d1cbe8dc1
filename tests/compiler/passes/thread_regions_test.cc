// Pass "thread-regions" (compiler/passes/thread_regions.cc): which if-chains
// on the thread index become T.ws regions, and which stay ordinary ifs.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A kernel of THREADS threads whose body is BRANCHES (indented for the
// kernel), around a fragment used in the branches.
std::string Source(int threads, const std::string& branches) {
  return absl::StrCat(R"(import tilelang.language as T


@T.prim_func
def main(A: T.Tensor((64, 64), T.float32), B: T.Tensor((64, 64), T.float32)):
    with T.Kernel(1, threads=)",
                      threads, R"() as bx:
        f = T.alloc_fragment((64, 64), T.float32)
        tx = T.get_thread_binding()
)",
                      branches);
}

// The program after the pass, printed.
std::string After(const std::string& source, const std::string& target = "cuda:sm_90") {
  absl::StatusOr<ir::Program> p = frontend::CompileSource(source, frontend::FrontendOptions{});
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return "";
  PassContext ctx;
  ctx.target = target;
  const absl::Status st = RunPasses(*p, {"verify", "simplify", "thread-regions"}, ctx);
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_TRUE(ir::Verify(*p).ok()) << ir::Verify(*p);
  return ir::PrintProgram(*p);
}

constexpr char kCopyIn[] = "T.copy(A, f)\n";
constexpr char kCopyOut[] = "T.copy(f, B)\n";

TEST(ThreadRegions, IfElseOnWarpGroupsBecomesTwoRegions) {
  const std::string text =
      After(Source(256, absl::StrCat("        if tx < 128:\n            ", kCopyIn,
                                     "        else:\n            ", kCopyOut)));
  EXPECT_THAT(text, HasSubstr("ws(0) {"));
  EXPECT_THAT(text, HasSubstr("ws(1) {"));
  EXPECT_THAT(text, Not(HasSubstr("if ")));
}

TEST(ThreadRegions, ElifChainsAndFlippedComparisons) {
  // 384 threads: [0,128), [128,256), [256,384); `128 <= tx` is `tx >= 128`.
  const std::string text =
      After(Source(384, absl::StrCat("        if tx < 128:\n            ", kCopyIn,
                                     "        elif 128 <= tx and tx < 256:\n            ", kCopyOut,
                                     "        else:\n            ", kCopyIn)));
  EXPECT_THAT(text, HasSubstr("ws(0) {"));
  EXPECT_THAT(text, HasSubstr("ws(1) {"));
  EXPECT_THAT(text, HasSubstr("ws(2) {"));
  // `tx >= 128` over 384 threads: one region of two warpgroups, then the
  // else branch on the first.
  const std::string upper =
      After(Source(384, absl::StrCat("        if tx >= 128:\n            ", kCopyIn,
                                     "        else:\n            ", kCopyOut)));
  EXPECT_THAT(upper, HasSubstr("ws(1, 2) {"));
  EXPECT_THAT(upper, HasSubstr("ws(0) {"));
  // No else: one region.
  const std::string lone =
      After(Source(256, absl::StrCat("        if tx <= 127:\n            ", kCopyIn)));
  EXPECT_THAT(lone, HasSubstr("ws(0) {"));
  EXPECT_THAT(lone, Not(HasSubstr("ws(1)")));
}

TEST(ThreadRegions, WhatDoesNotQualifyStaysAnIf) {
  const std::string copy_branches =
      absl::StrCat("            ", kCopyIn, "        else:\n            ", kCopyOut);
  struct Case {
    const char* what;
    std::string source;
    std::string target = "cuda:sm_90";
  };
  const Case cases[] = {
      {"not whole warpgroups", Source(256, absl::StrCat("        if tx < 64:\n", copy_branches))},
      {"a middle range leaves the else in two pieces",
       Source(384, absl::StrCat("        if tx >= 128 and tx < 256:\n", copy_branches))},
      {"not the thread index", Source(256, absl::StrCat("        if bx < 128:\n", copy_branches))},
      {"scalar code only", Source(256, "        if tx < 128:\n            B[0, tx] = 1.0\n"
                                       "        else:\n            B[1, tx - 128] = 2.0\n")},
      {"a target without mbarriers",
       Source(256, absl::StrCat("        if tx < 128:\n", copy_branches)), "cuda:sm_80"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string text = After(c.source, c.target);
    EXPECT_THAT(text, Not(HasSubstr("ws(")));
    EXPECT_THAT(text, HasSubstr("if "));
  }
  // The same qualifying chain does become regions on the CPU target.
  EXPECT_THAT(After(Source(256, absl::StrCat("        if tx < 128:\n", copy_branches)), "cpu"),
              HasSubstr("ws(1) {"));
}

} // namespace
} // namespace kiln::passes
