// Latency summaries and the regression verdict (server/latency_stats.h):
// quantiles, Student's t p-values against known values, and verdicts on a
// stable history, a real slowdown, noise, an improvement and no history.
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "server/latency_stats.h"

namespace kiln::server {
namespace {

namespace pb = kiln::v1;

TEST(Summarize, QuantilesMeanAndSampleStddev) {
  pb::LatencyDistribution d = Summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(d.samples_us_size(), 5);
  EXPECT_EQ(d.samples_us(0), 5); // order kept
  EXPECT_DOUBLE_EQ(d.min_us(), 1);
  EXPECT_DOUBLE_EQ(d.max_us(), 5);
  EXPECT_DOUBLE_EQ(d.median_us(), 3);
  EXPECT_DOUBLE_EQ(d.mean_us(), 3);
  EXPECT_DOUBLE_EQ(d.p10_us(), 1.4);
  EXPECT_DOUBLE_EQ(d.p90_us(), 4.6);
  EXPECT_NEAR(d.stddev_us(), std::sqrt(2.5), 1e-12);
  EXPECT_DOUBLE_EQ(Summarize({}).median_us(), 0);
  EXPECT_DOUBLE_EQ(Summarize({7}).stddev_us(), 0);
}

TEST(StudentTwoSidedP, MatchesTables) {
  EXPECT_NEAR(StudentTwoSidedP(0, 10), 1.0, 1e-12);
  EXPECT_NEAR(StudentTwoSidedP(2.228, 10), 0.05, 5e-4);  // t_{0.975,10}
  EXPECT_NEAR(StudentTwoSidedP(-2.228, 10), 0.05, 5e-4); // symmetric
  EXPECT_NEAR(StudentTwoSidedP(12.706, 1), 0.05, 5e-4);
  EXPECT_NEAR(StudentTwoSidedP(1.96, 1e6), 0.05, 5e-4); // the normal limit
  EXPECT_NEAR(StudentTwoSidedP(3.169, 10), 0.01, 2e-4);
  EXPECT_LT(StudentTwoSidedP(40, 4), 1e-5);
}

cache::Measurement PastRun(double median, double stddev = 1, int n = 20) {
  cache::Measurement m;
  m.latency.median_us = median;
  m.latency.mean_us = median;
  m.latency.stddev_us = stddev;
  m.latency.samples = n;
  return m;
}

// n samples around `median` with a small spread.
pb::LatencyDistribution Current(double median, double spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, spread);
  std::vector<double> s;
  for (int i = 0; i < 20; ++i) s.push_back(median + noise(rng));
  return Summarize(s);
}

TEST(CompareWithHistory, NoHistoryIsNoBaseline) {
  RegressionOutcome o = CompareWithHistory(Current(100, 1, 1), {}, {});
  EXPECT_EQ(o.verdict, pb::BenchmarkResponse::VERDICT_NO_BASELINE);
  EXPECT_EQ(o.baseline_runs, 0);
}

TEST(CompareWithHistory, StableRunPassesRealSlowdownRegresses) {
  const std::vector<cache::Measurement> history = {PastRun(100.4), PastRun(99.6), PastRun(100.1),
                                                   PastRun(99.8), PastRun(100.2)};
  RegressionOutcome same = CompareWithHistory(Current(100, 0.5, 2), history, {});
  EXPECT_EQ(same.verdict, pb::BenchmarkResponse::VERDICT_PASS);
  EXPECT_EQ(same.baseline_runs, 5);
  EXPECT_NEAR(same.baseline_median_us, 100.1, 1e-9);

  RegressionOutcome slow = CompareWithHistory(Current(120, 0.5, 3), history, {});
  EXPECT_EQ(slow.verdict, pb::BenchmarkResponse::VERDICT_REGRESSION);
  EXPECT_GT(slow.relative_change, 0.15);
  EXPECT_LT(slow.p_value, 0.01);

  RegressionOutcome fast = CompareWithHistory(Current(80, 0.5, 4), history, {});
  EXPECT_EQ(fast.verdict, pb::BenchmarkResponse::VERDICT_IMPROVEMENT);
}

TEST(CompareWithHistory, SlowdownWithinTheMachinesRunToRunNoiseIsNotARegression) {
  // Past runs scatter by +-10 %: a run 8 % slower than their median is not
  // significant, even though it is past a 5 % threshold.
  const std::vector<cache::Measurement> noisy = {PastRun(90), PastRun(110), PastRun(95),
                                                 PastRun(108), PastRun(100)};
  RegressionOutcome o = CompareWithHistory(Current(108, 0.5, 5), noisy, {});
  EXPECT_GT(o.relative_change, 0.05);
  EXPECT_GT(o.p_value, 0.05);
  EXPECT_EQ(o.verdict, pb::BenchmarkResponse::VERDICT_PASS);
}

TEST(CompareWithHistory, SmallSignificantChangeUnderTheThresholdPasses) {
  const std::vector<cache::Measurement> history = {PastRun(100.01), PastRun(99.99), PastRun(100.0)};
  pb::RegressionPolicy policy;
  policy.set_max_slowdown(0.10);
  RegressionOutcome o = CompareWithHistory(Current(104, 0.1, 6), history, policy);
  EXPECT_LT(o.p_value, 0.05);
  EXPECT_EQ(o.verdict, pb::BenchmarkResponse::VERDICT_PASS);
}

TEST(CompareWithHistory, OnePastRunUsesWelchOnTheSamples) {
  RegressionOutcome same = CompareWithHistory(Current(100, 1, 7), {PastRun(100, 1, 20)}, {});
  EXPECT_EQ(same.verdict, pb::BenchmarkResponse::VERDICT_PASS);
  RegressionOutcome slow = CompareWithHistory(Current(110, 1, 8), {PastRun(100, 1, 20)}, {});
  EXPECT_EQ(slow.verdict, pb::BenchmarkResponse::VERDICT_REGRESSION);
}

TEST(CompareWithHistory, FailedRunsAreNotPartOfTheBaselineAndOnlyTheLastNCount) {
  cache::Measurement failed = PastRun(1);
  failed.failure = "crash";
  pb::RegressionPolicy policy;
  policy.set_baseline_runs(2);
  RegressionOutcome o = CompareWithHistory(
      Current(100, 1, 9), {failed, PastRun(100), PastRun(101), PastRun(500)}, policy);
  EXPECT_EQ(o.baseline_runs, 2);
  EXPECT_NEAR(o.baseline_median_us, 100.5, 1e-9);
}

} // namespace
} // namespace kiln::server
