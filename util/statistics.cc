#include "util/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kiln::util {
namespace {

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

double SortedQuantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return SortedQuantile(values, 0.5);
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double SampleStddev(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const double mean = Mean(values);
  double ss = 0;
  for (double v : values) ss += (v - mean) * (v - mean);
  return std::sqrt(ss / static_cast<double>(values.size() - 1));
}

double StudentTwoSidedP(double t, double df) {
  if (!std::isfinite(t)) return 0;
  if (df <= 0) return 1;
  const double x = df / (df + t * t);
  return std::clamp(RegularizedBeta(df / 2, 0.5, x), 0.0, 1.0);
}

double NormalTwoSidedP(double z) {
  return std::clamp(std::erfc(std::fabs(z) / std::sqrt(2.0)), 0.0, 1.0);
}

TestResult WelchTTest(double mean_a, double sd_a, double n_a, double mean_b, double sd_b,
                      double n_b) {
  TestResult r;
  if (n_a < 2 || n_b < 2) return r;
  const double va = sd_a * sd_a / n_a;
  const double vb = sd_b * sd_b / n_b;
  const double se = std::sqrt(va + vb);
  if (se <= 0) {
    r.p_value = mean_a == mean_b ? 1 : 0;
    r.df = n_a + n_b - 2;
    return r;
  }
  r.statistic = (mean_a - mean_b) / se;
  r.df = (va + vb) * (va + vb) / (va * va / (n_a - 1) + vb * vb / (n_b - 1) + 1e-300);
  r.p_value = StudentTwoSidedP(r.statistic, r.df);
  return r;
}

TestResult WelchTTest(const std::vector<double>& a, const std::vector<double>& b) {
  return WelchTTest(Mean(a), SampleStddev(a), static_cast<double>(a.size()), Mean(b),
                    SampleStddev(b), static_cast<double>(b.size()));
}

TestResult MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b) {
  TestResult r;
  if (a.empty() || b.empty()) return r;
  struct Item {
    double value;
    bool from_a;
  };
  std::vector<Item> all;
  for (double v : a) all.push_back({v, true});
  for (double v : b) all.push_back({v, false});
  std::sort(all.begin(), all.end(), [](const Item& x, const Item& y) { return x.value < y.value; });
  const double n = static_cast<double>(all.size());
  double rank_sum_a = 0;
  double tie_term = 0; // sum of t^3 - t over tie groups
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].value == all[i].value) ++j;
    const double avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) {
      if (all[k].from_a) rank_sum_a += avg_rank;
    }
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    i = j;
  }
  const double na = static_cast<double>(a.size());
  const double nb = static_cast<double>(b.size());
  const double u = rank_sum_a - na * (na + 1) / 2;
  const double mu = na * nb / 2;
  const double var = na * nb / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var <= 0) return r; // every value tied
  const double diff = u - mu;
  const double corrected = diff > 0 ? std::max(0.0, diff - 0.5) : std::min(0.0, diff + 0.5);
  r.statistic = corrected / std::sqrt(var);
  r.p_value = NormalTwoSidedP(r.statistic);
  return r;
}

} // namespace kiln::util
