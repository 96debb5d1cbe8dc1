#include "clients/cpp/regress/verdict.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "util/statistics.h"

namespace kiln::regress {

const char* VerdictName(VerdictKind v) {
  switch (v) {
  case VerdictKind::kPass:
    return "pass";
  case VerdictKind::kRegression:
    return "regression";
  case VerdictKind::kImprovement:
    return "improvement";
  case VerdictKind::kBaselineMismatch:
    return "baseline_mismatch";
  default:
    return "no_baseline";
  }
}

Verdict Compare(const std::vector<double>& baseline_us, const std::vector<double>& current_us,
                const Tolerance& tolerance) {
  Verdict v;
  v.baseline_samples = static_cast<int>(baseline_us.size());
  v.current_samples = static_cast<int>(current_us.size());
  v.current_median_us = util::Median(current_us);
  if (baseline_us.empty() || current_us.empty()) return v;
  v.baseline_median_us = util::Median(baseline_us);
  if (v.baseline_median_us <= 0) return v;
  v.change = v.current_median_us / v.baseline_median_us - 1;
  v.p_value = util::WelchTTest(current_us, baseline_us).p_value;
  const bool significant = v.p_value < tolerance.significance;
  if (significant && v.change > tolerance.threshold) {
    v.kind = VerdictKind::kRegression;
  } else if (significant && v.change < -tolerance.threshold) {
    v.kind = VerdictKind::kImprovement;
  } else {
    v.kind = VerdictKind::kPass;
  }
  return v;
}

bool ParseFraction(const std::string& text, double* out) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  bool percent = false;
  if (absl::ConsumeSuffix(&s, "%")) {
    percent = true;
    s = absl::StripTrailingAsciiWhitespace(s);
  }
  double v = 0;
  if (!absl::SimpleAtod(s, &v)) return false;
  if (percent) v /= 100;
  if (!(v > 0 && v < 10)) return false;
  *out = v;
  return true;
}

} // namespace kiln::regress
