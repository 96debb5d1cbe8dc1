// Summaries of measured kernel latencies and the regression verdict of a
// benchmark against its history.
//
// Verdict. The baseline is the last `baseline_runs` successful runs of the
// same history series on the same device model. With two or more, each past
// run's median is one observation, so the test sees the run-to-run noise of
// the machine (clocks, neighbours) and not only the spread inside one run:
// the new median is compared with the baseline medians by a t statistic for
// one new observation, t = (x - mean) / (s * sqrt(1 + 1/k)), k - 1 degrees
// of freedom. With one past run, Welch's test on the two runs' samples
// (mean, standard deviation, count) stands in. The change is relative to the
// baseline's median of medians; the verdict is REGRESSION when the new run
// is slower by more than `max_slowdown` and p < `significance`,
// IMPROVEMENT for the same the other way, PASS otherwise, NO_BASELINE with
// no history. Defaults: 5 runs, 5 %, 0.05.
//
// Thread-safe (pure functions).
#pragma once

#include <vector>

#include "cache/records.h"
#include "kiln/v1/service.pb.h"

namespace kiln::server {

// min/max/mean/median/p10/p90/stddev (sample, n - 1) of `samples_us`; the
// samples are kept in the order given. Empty input: all zero.
kiln::v1::LatencyDistribution Summarize(const std::vector<double>& samples_us);

// The same as the cache stores it.
cache::LatencyStats ToCacheStats(const kiln::v1::LatencyDistribution& d);

// Two-sided p-value of Student's t distribution with `df` degrees of
// freedom at `t` (df > 0).
double StudentTwoSidedP(double t, double df);

struct RegressionOutcome {
  kiln::v1::BenchmarkResponse::Verdict verdict = kiln::v1::BenchmarkResponse::VERDICT_NO_BASELINE;
  double baseline_median_us = 0;
  double relative_change = 0; // (new - baseline) / baseline
  double p_value = 1;
  int baseline_runs = 0;
};

// `history`: earlier successful runs, newest first (at most the policy's
// baseline_runs are used).
RegressionOutcome CompareWithHistory(const kiln::v1::LatencyDistribution& current,
                                     const std::vector<cache::Measurement>& history,
                                     const kiln::v1::RegressionPolicy& policy);

// The policy with defaults filled in.
kiln::v1::RegressionPolicy EffectivePolicy(const kiln::v1::RegressionPolicy& policy);

} // namespace kiln::server
