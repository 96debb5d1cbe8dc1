// The regression verdict (clients/cpp/regress/verdict.h) and the shared
// statistics under it (util/statistics.h), table-driven: noise around an
// equal mean passes, a 10 % slowdown fails, a significant change inside the
// threshold passes, an improvement is reported, no baseline is no verdict.
#include <cmath>
#include <random>
#include <vector>

#include "clients/cpp/regress/verdict.h"
#include "gtest/gtest.h"
#include "util/statistics.h"

namespace kiln::regress {
namespace {

// n samples around `mean` with relative spread `noise` (normal, seeded).
std::vector<double> Samples(double mean, double noise, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(mean, mean * noise);
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(d(rng));
  return out;
}

struct Case {
  const char* name;
  std::vector<double> baseline, current;
  Tolerance tolerance;
  VerdictKind want;
};

TEST(Compare, Table) {
  const Tolerance t3{0.03, 0.05};
  std::vector<Case> cases = {
      {"identical", {100, 100, 100}, {100, 100, 100}, t3, VerdictKind::kPass},
      {"noisy equal (2% noise, 5 trials)", Samples(100, 0.02, 5, 1), Samples(100, 0.02, 5, 2), t3,
       VerdictKind::kPass},
      {"very noisy equal (8% noise)", Samples(100, 0.08, 5, 3), Samples(100, 0.08, 5, 4), t3,
       VerdictKind::kPass},
      {"noisy 10% slower", Samples(100, 0.01, 5, 5), Samples(110, 0.01, 5, 6), t3,
       VerdictKind::kRegression},
      {"10% slower, exact",
       {100, 101, 99, 100, 100},
       {110, 111, 109, 110, 110},
       t3,
       VerdictKind::kRegression},
      {"significant but inside the threshold (1%)",
       {100, 100.1, 99.9, 100, 100},
       {101, 101.1, 100.9, 101, 101},
       t3,
       VerdictKind::kPass},
      {"10% slower but noise swamps it",
       {80, 120, 95, 130, 75},
       {88, 132, 105, 143, 82},
       t3,
       VerdictKind::kPass},
      {"10% faster", Samples(100, 0.01, 5, 7), Samples(90, 0.01, 5, 8), t3,
       VerdictKind::kImprovement},
      {"10% slower under a 20% threshold",
       {100, 101, 99},
       {110, 111, 109},
       {0.2, 0.05},
       VerdictKind::kPass},
      {"no baseline", {}, {100, 101}, t3, VerdictKind::kNoBaseline},
      {"one trial each: cannot test", {100}, {150}, t3, VerdictKind::kPass},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Verdict v = Compare(c.baseline, c.current, c.tolerance);
    EXPECT_EQ(VerdictName(v.kind), std::string(VerdictName(c.want)))
        << "change " << v.change << " p " << v.p_value;
  }
}

TEST(Compare, ReportsTheNumbers) {
  const Verdict v = Compare({100, 102, 98}, {110, 112, 108}, {});
  EXPECT_DOUBLE_EQ(v.baseline_median_us, 100);
  EXPECT_DOUBLE_EQ(v.current_median_us, 110);
  EXPECT_NEAR(v.change, 0.10, 1e-12);
  EXPECT_LT(v.p_value, 0.01);
  EXPECT_EQ(v.baseline_samples, 3);
  EXPECT_EQ(v.current_samples, 3);
}

// Many seeds: equal distributions rarely fail (false positives need both a
// > 3 % median shift and p < 0.05), a 10 % slowdown with 2 % noise always does.
TEST(Compare, FalseAlarmsAreRareAndSlowdownsAreCaught) {
  int false_alarms = 0, caught = 0;
  for (unsigned seed = 0; seed < 200; ++seed) {
    const std::vector<double> base = Samples(50, 0.02, 5, 1000 + seed);
    if (Compare(base, Samples(50, 0.02, 5, 5000 + seed), {}).kind == VerdictKind::kRegression) {
      ++false_alarms;
    }
    if (Compare(base, Samples(55, 0.02, 5, 9000 + seed), {}).kind == VerdictKind::kRegression) {
      ++caught;
    }
  }
  EXPECT_LE(false_alarms, 2);
  EXPECT_GE(caught, 195);
}

TEST(ParseFraction, PercentOrFraction) {
  double v = 0;
  EXPECT_TRUE(ParseFraction("3%", &v));
  EXPECT_DOUBLE_EQ(v, 0.03);
  EXPECT_TRUE(ParseFraction(" 2.5 % ", &v));
  EXPECT_DOUBLE_EQ(v, 0.025);
  EXPECT_TRUE(ParseFraction("0.05", &v));
  EXPECT_DOUBLE_EQ(v, 0.05);
  EXPECT_FALSE(ParseFraction("", &v));
  EXPECT_FALSE(ParseFraction("-3%", &v));
  EXPECT_FALSE(ParseFraction("abc", &v));
  EXPECT_FALSE(ParseFraction("0", &v));
}

TEST(Statistics, WelchMatchesAKnownValue) {
  // t = -3.967 and Welch-Satterthwaite df = 5.99 (by hand); p from a t table
  // at 6 df lies between 0.005 (t = 3.707) and 0.01 (t = 3.143).
  const std::vector<double> a = {19.8, 20.4, 19.6, 17.8, 18.5, 18.9};
  const std::vector<double> b = {28.2, 26.6, 20.1, 23.3, 25.2, 22.1};
  const util::TestResult r = util::WelchTTest(a, b);
  EXPECT_NEAR(r.statistic, -3.9667, 1e-3);
  EXPECT_NEAR(r.df, 5.9935, 1e-3);
  EXPECT_GT(r.p_value, 0.005);
  EXPECT_LT(r.p_value, 0.01);
  EXPECT_DOUBLE_EQ(util::WelchTTest({1, 1}, {1, 1}).p_value, 1);
  EXPECT_DOUBLE_EQ(util::WelchTTest({1, 1}, {2, 2}).p_value, 0);
  EXPECT_DOUBLE_EQ(util::WelchTTest({1}, {2, 3}).p_value, 1);
}

TEST(Statistics, MannWhitney) {
  // Fully separated samples of 8: U = 0, z = -3.31 with continuity, p ~ 0.00093.
  const util::TestResult r =
      util::MannWhitneyU({1, 2, 3, 4, 5, 6, 7, 8}, {9, 10, 11, 12, 13, 14, 15, 16});
  EXPECT_LT(r.statistic, 0);
  EXPECT_NEAR(r.p_value, 0.00093, 0.0002);
  EXPECT_DOUBLE_EQ(util::MannWhitneyU({3, 3}, {3, 3}).p_value, 1); // all tied
  EXPECT_GT(util::MannWhitneyU({1, 3, 5, 7}, {2, 4, 6, 8}).p_value, 0.5);
  EXPECT_NEAR(util::Median({5, 1, 3}), 3, 0);
  EXPECT_NEAR(util::Median({4, 1, 3, 2}), 2.5, 0);
  EXPECT_NEAR(util::NormalTwoSidedP(1.959964), 0.05, 1e-5);
}

} // namespace
} // namespace kiln::regress
