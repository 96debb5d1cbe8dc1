#include "clients/cpp/regress/junit_writer.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace kiln::regress {

std::string XmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
        out += '?';
      } else {
        out += c;
      }
    }
  }
  return out;
}

namespace {

std::string Samples(const std::vector<double>& v) {
  std::vector<std::string> parts;
  for (double x : v) parts.push_back(absl::StrFormat("%.3f", x));
  return absl::StrJoin(parts, ", ");
}

std::string Details(const KernelResult& k) {
  return absl::StrFormat(
      "device: %s (%s)\nartifact: %s\nconfig: %s\nbindings: %s\nnew: median %.3f us, trials [%s]\n"
      "baseline (%s): median %.3f us, trials [%s]\nchange: %+.2f%%, p = %.4g (Welch t test on "
      "trial medians), threshold %.2f%%, significance %.3g\nverdict: %s\n",
      k.device_id, k.device_model, k.artifact_key, k.config_text, BindingsText(k.bindings),
      k.verdict.current_median_us, Samples(k.trial_medians_us),
      k.baseline_label.empty() ? "none" : k.baseline_label, k.verdict.baseline_median_us,
      Samples(k.baseline_us), k.verdict.change * 100, k.verdict.p_value,
      k.tolerance.threshold * 100, k.tolerance.significance, VerdictName(k.verdict.kind));
}

} // namespace

std::string JUnitXml(const RunReport& report) {
  int failures = 0, errors = 0;
  for (const KernelResult& k : report.kernels) {
    if (!k.error.empty() || !k.mismatch.empty()) {
      ++errors;
    } else if (k.verdict.kind == VerdictKind::kRegression) {
      ++failures;
    }
  }
  const std::string suite = std::filesystem::path(report.suite_path).stem().string();
  const int n = static_cast<int>(report.kernels.size());
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  absl::StrAppend(&out,
                  absl::StrFormat("<testsuites name=\"kiln regress\" tests=\"%d\" failures=\"%d\" "
                                  "errors=\"%d\" time=\"%.3f\">\n",
                                  n, failures, errors, report.seconds));
  absl::StrAppend(&out, absl::StrFormat("  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" "
                                        "errors=\"%d\" skipped=\"0\" time=\"%.3f\">\n",
                                        XmlEscape(suite), n, failures, errors, report.seconds));
  absl::StrAppend(&out, "    <properties>\n", "      <property name=\"label\" value=\"",
                  XmlEscape(report.label), "\"/>\n", "      <property name=\"suite\" value=\"",
                  XmlEscape(report.suite_path), "\"/>\n", "    </properties>\n");
  for (const KernelResult& k : report.kernels) {
    absl::StrAppend(&out, absl::StrFormat("    <testcase classname=\"kiln.regress.%s\" "
                                          "name=\"%s\" time=\"%.3f\">\n",
                                          XmlEscape(suite), XmlEscape(k.name), k.seconds));
    if (!k.error.empty()) {
      absl::StrAppend(&out, "      <error type=\"infrastructure\" message=\"", XmlEscape(k.error),
                      "\">", XmlEscape(k.error), "</error>\n");
    } else if (!k.mismatch.empty()) {
      const std::string message = absl::StrCat("baseline mismatch: ", k.mismatch);
      absl::StrAppend(&out, "      <error type=\"baseline_mismatch\" message=\"",
                      XmlEscape(message), "\">", XmlEscape(Details(k)), "</error>\n");
    } else if (k.verdict.kind == VerdictKind::kRegression) {
      const std::string message = absl::StrFormat(
          "%.2f us -> %.2f us (%+.1f%%, p=%.3g) against %s", k.verdict.baseline_median_us,
          k.verdict.current_median_us, k.verdict.change * 100, k.verdict.p_value, k.baseline_label);
      absl::StrAppend(&out, "      <failure type=\"regression\" message=\"", XmlEscape(message),
                      "\">", XmlEscape(Details(k)), "</failure>\n");
    }
    if (k.error.empty()) {
      absl::StrAppend(&out, "      <system-out>", XmlEscape(Details(k)), "</system-out>\n");
    }
    absl::StrAppend(&out, "    </testcase>\n");
  }
  absl::StrAppend(&out, "  </testsuite>\n</testsuites>\n");
  return out;
}

} // namespace kiln::regress
