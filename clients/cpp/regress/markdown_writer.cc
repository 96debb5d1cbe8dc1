#include "clients/cpp/regress/markdown_writer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace kiln::regress {
namespace {

// A table cell: no pipes or newlines.
std::string Cell(const std::string& s) {
  return absl::StrReplaceAll(s, {{"|", "\\|"}, {"\n", " "}, {"\r", " "}});
}

} // namespace

std::string MarkdownSummary(const RunReport& report) {
  int regressions = 0, errors = 0, improvements = 0, mismatches = 0;
  for (const KernelResult& k : report.kernels) {
    if (!k.error.empty()) {
      ++errors;
    } else if (!k.mismatch.empty()) {
      ++mismatches;
    } else if (k.verdict.kind == VerdictKind::kRegression) {
      ++regressions;
    } else if (k.verdict.kind == VerdictKind::kImprovement) {
      ++improvements;
    }
  }
  std::string out = absl::StrCat("## Kiln performance: `", Cell(report.label), "`\n\n");
  if (errors > 0) {
    absl::StrAppend(&out, "**", errors, " kernel(s) could not be measured.** ");
  }
  if (mismatches > 0) {
    absl::StrAppend(&out, "**", mismatches,
                    " kernel(s) not compared: their bindings differ from the baseline's.** ");
  }
  if (regressions > 0) {
    absl::StrAppend(&out, "**", regressions, " regression(s).** ");
  } else if (errors == 0 && mismatches == 0) {
    absl::StrAppend(&out, "No regression. ");
  }
  if (improvements > 0) absl::StrAppend(&out, improvements, " improvement(s). ");
  absl::StrAppend(&out, report.kernels.size(), " kernel(s), ",
                  absl::StrFormat("%.1f s.\n\n", report.seconds));
  absl::StrAppend(&out, "| kernel | device | baseline | old (us) | new (us) | change | p | "
                        "verdict |\n|---|---|---|---:|---:|---:|---:|---|\n");
  for (const KernelResult& k : report.kernels) {
    if (!k.error.empty()) {
      absl::StrAppend(&out, "| ", Cell(k.name), " | ", Cell(k.device_id),
                      " | | | | | | error: ", Cell(k.error.substr(0, 200)), " |\n");
      continue;
    }
    if (!k.mismatch.empty()) {
      absl::StrAppend(&out, "| ", Cell(k.name), " | ",
                      Cell(k.device_model.empty() ? k.device_id : k.device_model), " | ",
                      Cell(k.baseline_label), " | | ",
                      absl::StrFormat("%.2f", k.verdict.current_median_us),
                      " | | | **baseline mismatch**: ", Cell(k.mismatch), " |\n");
      continue;
    }
    const Verdict& v = k.verdict;
    const bool base = v.kind != VerdictKind::kNoBaseline;
    const char* mark = v.kind == VerdictKind::kRegression    ? "**regression**"
                       : v.kind == VerdictKind::kImprovement ? "improvement"
                       : v.kind == VerdictKind::kPass        ? "pass"
                                                             : "no baseline";
    absl::StrAppend(&out, "| ", Cell(k.name), " | ",
                    Cell(k.device_model.empty() ? k.device_id : k.device_model), " | ",
                    base ? Cell(k.baseline_label) : "", " | ",
                    base ? absl::StrFormat("%.2f", v.baseline_median_us) : "", " | ",
                    absl::StrFormat("%.2f", v.current_median_us), " | ",
                    base ? absl::StrFormat("%+.1f%%", v.change * 100) : "", " | ",
                    base ? absl::StrFormat("%.3g", v.p_value) : "", " | ", mark, " |\n");
  }
  absl::StrAppend(&out, "\nEach kernel: independent trials (separate Benchmark calls); the test is "
                        "Welch's t test on the trial medians; a regression is slower than the "
                        "threshold with p below the significance.\n");
  return out;
}

} // namespace kiln::regress
