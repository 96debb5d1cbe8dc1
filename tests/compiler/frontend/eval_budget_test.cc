// The compile-time evaluation budget (compiler/frontend/eval_budget.h):
// every operation whose cost grows with its operands is charged, so each
// unbounded shape below ends with a located budget error in well under a
// second instead of running for hours (or overflowing the stack).
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "compiler/frontend/eval_budget.h"
#include "compiler/frontend/frontend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::frontend {
namespace {

using ::testing::HasSubstr;

// A kernel whose entry runs `body` (4-space indented lines) first.
std::string Program(const std::string& body) {
  return absl::StrCat(R"(import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
)",
                      body, R"(
    with T.Kernel(1, threads=32) as bx:
        A[bx] = 0
)");
}

absl::StatusOr<ir::Program> Evaluate(const std::string& body, EvalLimits limits = {}) {
  FrontendOptions o;
  o.file_name = "t.py";
  o.bindings.emplace_back("N", ParseBindingText("64"));
  o.limits = limits;
  return CompileSource(Program(body), o);
}

std::string Repeat(const std::string& line, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += line;
  return out;
}

struct Shape {
  const char* name;
  std::string body;
  std::string where; // "t.py:line:col" of the operation that runs out
  std::string what = "2000000 steps";
};

// Each of these runs for hours (or forever) in CPython.
TEST(EvalBudgetTest, EveryUnboundedShapeEndsWithALocatedBudgetError) {
  const std::vector<Shape> shapes = {
      {"equality of two doubling tuples (2^64 items)",
       "    a = 0\n    b = 0\n    for _ in range(64):\n        a = (a, a)\n"
       "        b = (b, b)\n    assert a == b\n",
       "t.py:13:12"},
      {"inequality of doubling lists",
       "    a = [0]\n    b = [0]\n    for _ in range(64):\n        a = [a, a]\n"
       "        b = [b, b]\n    c = a != b\n",
       "t.py:13:9"},
      {"'in' over doubling tuples",
       "    a = 0\n    b = 0\n    for _ in range(64):\n        a = (a, a)\n"
       "        b = (b, b)\n    c = a in [1, 2, b]\n",
       "t.py:13:9"},
      {"a doubling tuple as a dict key",
       "    a = 0\n    b = 0\n    for _ in range(64):\n        a = (a, a)\n"
       "        b = (b, b)\n    d = {a: 1}\n    c = d[b]\n",
       "t.py:14:9"},
      {"list repetition in a loop", "    for _ in range(100000):\n        x = [0] * 65536\n",
       "t.py:9:13"},
      {"string repetition in a loop", "    for _ in range(1000000):\n        x = 'ab' * 32768\n",
       ""},
      {"quadratic substring search",
       "    p = 'a' * 30000 + 'b'\n    s = 'a' * 65000\n    for _ in range(1000):\n"
       "        c = p in s\n",
       "t.py:11:13"},
      {"concatenation in a loop",
       "    x = [0] * 60000\n    for _ in range(100000):\n        y = x + [1]\n", "t.py:10:13"},
      {"sorting a long list", "    x = sorted(list(range(1000000)))\n", ""},
      {"nested loops over long ranges",
       "    for i in range(1000000):\n        for j in range(1000000):\n            k = 1\n", ""},
      {"dict lookups that scan",
       "    d = {}\n    for i in range(1500):\n        d[i] = i\n"
       "    for i in range(1500):\n        for j in range(1500):\n            x = d.get(j)\n",
       ""},
      {"a 1,024-node expression stored by an inlined function 2^40 times",
       "    def f(n, x):\n        if n > 0:\n            f(n - 1, x)\n            f(n - 1, x)\n"
       "        else:\n            A[0] = x\n"
       "    with T.Kernel(1, threads=32) as bx:\n        y = A[1]\n" +
           Repeat("        y = y + y\n", 9) + "        f(40, y)\n",
       "t.py:13:13", "268435456 bytes"},
      // Found by frontend_structured_fuzzer: one statement, but a flat node
      // as long as the source; every expression node is a step.
      {"a 20,000-link comparison chain in a loop",
       "    x = 0\n    for _ in range(1000000):\n        x = x" + Repeat(" == x", 20000) + "\n",
       "t.py:10"},
      {"exponential recursion",
       "    def f(n):\n        return 0 if n == 0 else f(n - 1) + f(n - 1)\n    x = f(25)\n", ""},
  };
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(shape.name);
    const absl::Time t0 = absl::Now();
    absl::StatusOr<ir::Program> p = Evaluate(shape.body);
    const absl::Duration took = absl::Now() - t0;
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted) << p.status();
    EXPECT_THAT(p.status().message(),
                HasSubstr("compile-time evaluation exceeded its budget of " + shape.what));
    EXPECT_THAT(p.status().message(), HasSubstr(shape.where.empty() ? "t.py:" : shape.where + ":"));
    // Default budget, RelWithDebInfo: tens of milliseconds; the bound is
    // generous for sanitizer builds and a loaded machine.
    EXPECT_LT(took, absl::Seconds(5));
    std::printf("%-50s %s\n", shape.name, absl::FormatDuration(took).c_str());
  }
}

TEST(EvalBudgetTest, SharedValuesCompareEqualWithoutAWalk) {
  // One object compared with itself: Python's identity rule, no walk.
  absl::StatusOr<ir::Program> p =
      Evaluate("    a = 0\n    for _ in range(64):\n        a = (a, a)\n    assert a == a\n"
               "    assert a in [a]\n    d = {a: 1}\n    assert d[a] == 1\n");
  EXPECT_TRUE(p.ok()) << p.status();
}

TEST(EvalBudgetTest, SmallStructuresStillCompare) {
  absl::StatusOr<ir::Program> p =
      Evaluate("    a = ((1, 2), [3, 'x'])\n    b = ((1, 2), [3, 'x'])\n    assert a == b\n"
               "    assert (1, 2) in [a[0]]\n    assert a != ((1, 2), [3, 'y'])\n"
               "    assert 'bc' in 'abcd'\n    assert sorted([3, 1, 2]) == [1, 2, 3]\n"
               "    assert [0] * 3 + [1] == [0, 0, 0, 1]\n");
  EXPECT_TRUE(p.ok()) << p.status();
}

TEST(EvalBudgetTest, DeepListIsFreedWithoutRecursionAndNotCompared) {
  // 300,000 levels: freeing them recursively overflows an 8 MiB stack.
  absl::StatusOr<ir::Program> p =
      Evaluate("    l = []\n    for _ in range(300000):\n        l = [l]\n");
  EXPECT_TRUE(p.ok()) << p.status();
  p = Evaluate(
      "    l = []\n    m = []\n    for _ in range(1000):\n        l = [l]\n        m = [m]\n"
      "    c = l == m\n");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("t.py:13:9: values nested more than 256 deep cannot be compared"));
}

TEST(EvalBudgetTest, BytesAreBudgeted) {
  EvalLimits limits;
  limits.max_bytes = 1 << 20;
  absl::StatusOr<ir::Program> p = Evaluate("    x = [0] * 20000\n", limits);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(p.status().message(),
              HasSubstr("t.py:8:9: compile-time evaluation exceeded its budget of 1048576 bytes"));
  EXPECT_TRUE(Evaluate("    x = [0] * 2000\n", limits).ok());
}

TEST(EvalBudgetTest, WallTimeIsBudgeted) {
  EvalLimits limits;
  limits.max_steps = int64_t{1} << 50;
  limits.max_bytes = int64_t{1} << 50;
  limits.max_seconds = 0.2;
  const absl::Time t0 = absl::Now();
  absl::StatusOr<ir::Program> p = Evaluate(
      "    for i in range(1000000):\n        for j in range(1000000):\n            k = 1\n",
      limits);
  ASSERT_FALSE(p.ok());
  EXPECT_LT(absl::Now() - t0, absl::Seconds(2));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(p.status().message(), HasSubstr("exceeded its budget of 0.2 s of wall time"))
      << p.status();
}

TEST(EvalBudgetTest, DeadlineAndCancellation) {
  const std::string forever =
      "    for i in range(1000000):\n        for j in range(1000000):\n            k = 1\n";
  EvalLimits limits;
  limits.max_steps = int64_t{1} << 50;
  limits.max_bytes = int64_t{1} << 50;
  limits.deadline = absl::Now() + absl::Milliseconds(100);
  absl::StatusOr<ir::Program> p = Evaluate(forever, limits);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(p.status().message(), HasSubstr("before the request's deadline"));

  std::atomic<bool> cancelled{true};
  limits.deadline = absl::InfiniteFuture();
  limits.cancelled = &cancelled;
  p = Evaluate(forever, limits);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(p.status().message(), HasSubstr("compile-time evaluation was cancelled"));
}

TEST(EvalBudgetTest, ChargesAreStickyAndCounted) {
  EvalLimits limits;
  limits.max_steps = 10;
  EvalBudget budget(limits, "f.py");
  EXPECT_TRUE(budget.Charge({1, 2}, 10).ok());
  absl::Status s = budget.Charge({3, 4}, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(),
              HasSubstr("f.py:3:4: compile-time evaluation exceeded its budget of 10"));
  EXPECT_EQ(budget.Charge({5, 6}, 0), s); // the first failure, where it happened
  EXPECT_EQ(budget.steps(), 11);
}

// An empty sequence repeated 2**31 - 1 times is empty, answered at once, not
// after 2**31 iterations that each add nothing and charge nothing (found by
// frontend_structured_fuzzer: `block_M *= [...]` with block_M = 2**31 - 1).
TEST(EvalBudgetTest, EmptySequenceTimesAHugeCountIsEmptyAtOnce) {
  const absl::Time start = absl::Now();
  for (const char* body : {"    x = [] * (2**31 - 1)\n    assert x == []\n",
                           "    x = (2**31 - 1) * ()\n    assert x == ()\n",
                           "    x = '' * (2**31 - 1)\n    assert x == ''\n",
                           "    x = 2**31 - 1\n    x *= []\n    assert len(x) == 0\n"}) {
    SCOPED_TRACE(body);
    auto p = Evaluate(body);
    EXPECT_TRUE(p.ok()) << p.status();
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

} // namespace
} // namespace kiln::frontend
