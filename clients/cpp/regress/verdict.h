// The regression verdict of one kernel: its trial medians under the new
// label against those of the baseline label.
//
// Each trial is an independent Benchmark call (its own load, warm-up and
// timed launches), and its median is one observation, so run-to-run noise
// (clocks, neighbours, placement) is in the samples the test sees. The test
// is Welch's t test on the two sets of trial medians (unequal variances);
// the change is median(new) / median(old) - 1. The verdict is
//   REGRESSION   change > threshold and p < significance
//   IMPROVEMENT  change < -threshold and p < significance
//   PASS         otherwise (noise, or a real change inside the threshold)
//   NO_BASELINE  no baseline samples
// (BASELINE_MISMATCH, the baseline measured other bindings, is the
// runner's: Compare never returns it.)
// With fewer than two samples on a side the test cannot run (p = 1), so
// such a comparison passes: a CI job should use 3 or more trials.
// Thread-safe (pure functions).
#pragma once

#include <string>
#include <vector>

namespace kiln::regress {

struct Tolerance {
  double threshold = 0.03;    // relative slowdown that matters (3 %)
  double significance = 0.05; // p-value below which a change is real
};

enum class VerdictKind { kPass, kRegression, kImprovement, kNoBaseline, kBaselineMismatch };
// "pass", "regression", "improvement", "no_baseline", "baseline_mismatch"
const char* VerdictName(VerdictKind v);

struct Verdict {
  VerdictKind kind = VerdictKind::kNoBaseline;
  double baseline_median_us = 0;
  double current_median_us = 0;
  double change = 0; // relative: +0.10 = 10 % slower
  double p_value = 1;
  int baseline_samples = 0;
  int current_samples = 0;
};

Verdict Compare(const std::vector<double>& baseline_us, const std::vector<double>& current_us,
                const Tolerance& tolerance);

// "3%", "0.03", "3 %" -> 0.03. False for anything else or a value outside (0, 10).
bool ParseFraction(const std::string& text, double* out);

} // namespace kiln::regress
