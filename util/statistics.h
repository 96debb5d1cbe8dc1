// Small statistics for latency samples: quantiles, mean and sample standard
// deviation, Student's t distribution, Welch's two-sample t test and the
// Mann-Whitney U test (normal approximation with tie correction). Used by
// the daemon's benchmark verdicts (server/latency_stats.h) and by the
// client's regression runs (clients/cpp/regress), which must not depend on
// the server.
// Thread-safe (pure functions).
#pragma once

#include <vector>

namespace kiln::util {

// The value at fraction q (0..1) of `sorted` (ascending), interpolating
// between ranks. Empty input: 0.
double SortedQuantile(const std::vector<double>& sorted, double q);
// Median of unsorted values (0 when empty).
double Median(std::vector<double> values);
double Mean(const std::vector<double>& values);
// Sample standard deviation (n - 1); 0 below two values.
double SampleStddev(const std::vector<double>& values);

// Two-sided p-value of Student's t distribution with `df` degrees of
// freedom at `t` (df > 0; df <= 0 gives 1, an infinite t gives 0).
double StudentTwoSidedP(double t, double df);

// Two-sided p-value of the standard normal distribution at z.
double NormalTwoSidedP(double z);

struct TestResult {
  double statistic = 0; // t or z
  double df = 0;        // Welch: the Welch-Satterthwaite degrees of freedom
  double p_value = 1;
};

// Welch's t test from summaries: means, sample standard deviations and
// counts (each at least 2; otherwise p = 1). Equal means with zero spread
// give p = 1, different means with zero spread p = 0.
TestResult WelchTTest(double mean_a, double sd_a, double n_a, double mean_b, double sd_b,
                      double n_b);
// The same on samples.
TestResult WelchTTest(const std::vector<double>& a, const std::vector<double>& b);

// Mann-Whitney U (two-sided), normal approximation with continuity and tie
// correction; statistic is z. Needs at least one value on each side
// (otherwise p = 1). All values tied: p = 1.
TestResult MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b);

} // namespace kiln::util
