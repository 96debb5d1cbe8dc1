#include "server/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "util/statistics.h"

namespace kiln::server {

using util::SortedQuantile;

kiln::v1::LatencyDistribution Summarize(const std::vector<double>& samples_us) {
  kiln::v1::LatencyDistribution d;
  for (double s : samples_us) d.add_samples_us(s);
  if (samples_us.empty()) return d;
  std::vector<double> sorted = samples_us;
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  const double mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  double ss = 0;
  for (double s : sorted) ss += (s - mean) * (s - mean);
  d.set_min_us(sorted.front());
  d.set_max_us(sorted.back());
  d.set_mean_us(mean);
  d.set_median_us(SortedQuantile(sorted, 0.5));
  d.set_p10_us(SortedQuantile(sorted, 0.1));
  d.set_p90_us(SortedQuantile(sorted, 0.9));
  d.set_stddev_us(sorted.size() > 1 ? std::sqrt(ss / (n - 1)) : 0);
  return d;
}

cache::LatencyStats ToCacheStats(const kiln::v1::LatencyDistribution& d) {
  cache::LatencyStats s;
  s.min_us = d.min_us();
  s.median_us = d.median_us();
  s.mean_us = d.mean_us();
  s.p90_us = d.p90_us();
  s.stddev_us = d.stddev_us();
  s.samples = d.samples_us_size();
  return s;
}

double StudentTwoSidedP(double t, double df) { return util::StudentTwoSidedP(t, df); }

kiln::v1::RegressionPolicy EffectivePolicy(const kiln::v1::RegressionPolicy& policy) {
  kiln::v1::RegressionPolicy p = policy;
  if (p.baseline_runs() <= 0) p.set_baseline_runs(5);
  if (p.max_slowdown() <= 0) p.set_max_slowdown(0.05);
  if (p.significance() <= 0 || p.significance() >= 1) p.set_significance(0.05);
  return p;
}

RegressionOutcome CompareWithHistory(const kiln::v1::LatencyDistribution& current,
                                     const std::vector<cache::Measurement>& history,
                                     const kiln::v1::RegressionPolicy& policy_in) {
  const kiln::v1::RegressionPolicy policy = EffectivePolicy(policy_in);
  RegressionOutcome out;
  std::vector<const cache::Measurement*> runs;
  for (const cache::Measurement& m : history) {
    if (!m.failure.empty() || m.latency.median_us <= 0) continue;
    runs.push_back(&m);
    if (static_cast<int>(runs.size()) >= policy.baseline_runs()) break;
  }
  out.baseline_runs = static_cast<int>(runs.size());
  if (runs.empty() || current.median_us() <= 0) return out;

  std::vector<double> medians;
  for (const cache::Measurement* m : runs) medians.push_back(m->latency.median_us);
  std::vector<double> sorted = medians;
  std::sort(sorted.begin(), sorted.end());
  out.baseline_median_us = SortedQuantile(sorted, 0.5);
  out.relative_change = (current.median_us() - out.baseline_median_us) / out.baseline_median_us;

  if (runs.size() >= 2) {
    const double k = static_cast<double>(medians.size());
    const double mean = std::accumulate(medians.begin(), medians.end(), 0.0) / k;
    double ss = 0;
    for (double m : medians) ss += (m - mean) * (m - mean);
    const double sd = std::sqrt(ss / (k - 1));
    const double spread = sd * std::sqrt(1 + 1 / k);
    if (spread > 0) {
      out.p_value = StudentTwoSidedP((current.median_us() - mean) / spread, k - 1);
    } else {
      out.p_value = current.median_us() == mean ? 1 : 0;
    }
  } else {
    const cache::LatencyStats& b = runs[0]->latency;
    out.p_value = util::WelchTTest(current.mean_us(), current.stddev_us(),
                                   static_cast<double>(current.samples_us_size()), b.mean_us,
                                   b.stddev_us, static_cast<double>(b.samples))
                      .p_value;
  }

  const bool significant = out.p_value < policy.significance();
  if (significant && out.relative_change > policy.max_slowdown()) {
    out.verdict = kiln::v1::BenchmarkResponse::VERDICT_REGRESSION;
  } else if (significant && out.relative_change < -policy.max_slowdown()) {
    out.verdict = kiln::v1::BenchmarkResponse::VERDICT_IMPROVEMENT;
  } else {
    out.verdict = kiln::v1::BenchmarkResponse::VERDICT_PASS;
  }
  return out;
}

} // namespace kiln::server
