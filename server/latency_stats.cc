#include "server/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kiln::server {
namespace {

// The value at fraction q of sorted samples, interpolating between ranks.
double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

// Continued fraction of the regularized incomplete beta function (modified
// Lentz), valid for x < (a + 1) / (a + b + 2).
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEps = 1e-15;
  double c = 1;
  double d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    // Even step.
    double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    // Odd step.
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < kEps) break;
  }
  return h;
}

// I_x(a, b).
double RegularizedBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * BetaContinuedFraction(a, b, x) / a;
  return 1 - std::exp(log_front) * BetaContinuedFraction(b, a, 1 - x) / b;
}

} // namespace

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
  d.set_median_us(Quantile(sorted, 0.5));
  d.set_p10_us(Quantile(sorted, 0.1));
  d.set_p90_us(Quantile(sorted, 0.9));
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

double StudentTwoSidedP(double t, double df) {
  if (!std::isfinite(t)) return 0;
  if (df <= 0) return 1;
  const double x = df / (df + t * t);
  return std::clamp(RegularizedBeta(df / 2, 0.5, x), 0.0, 1.0);
}

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
  out.baseline_median_us = Quantile(sorted, 0.5);
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
    const double n1 = static_cast<double>(current.samples_us_size());
    const double n2 = static_cast<double>(b.samples);
    if (n1 >= 2 && n2 >= 2) {
      const double v1 = current.stddev_us() * current.stddev_us() / n1;
      const double v2 = b.stddev_us * b.stddev_us / n2;
      const double se = std::sqrt(v1 + v2);
      if (se > 0) {
        const double t = (current.mean_us() - b.mean_us) / se;
        const double df =
            (v1 + v2) * (v1 + v2) / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1) + 1e-300);
        out.p_value = StudentTwoSidedP(t, df);
      } else {
        out.p_value = current.mean_us() == b.mean_us ? 1 : 0;
      }
    }
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
