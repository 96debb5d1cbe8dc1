#include "clients/cpp/regress/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/cpp/regress/junit_writer.h"
#include "util/statistics.h"

namespace kiln::regress {
namespace {

constexpr double kWidth = 760, kHeight = 420;
constexpr double kLeft = 84, kRight = 24, kTop = 56, kBottom = 112;
constexpr double kLabelAngle = 45;  // degrees, x labels rotated counter-clockwise
constexpr double kMinLabelGap = 14; // px between neighbouring rotated labels (11 px font)
constexpr size_t kMaxLabelChars = 12;
constexpr char kRed[] = "#d62728", kBlue[] = "#1f77b4", kGreen[] = "#2ca02c", kGrey[] = "#999";

// A "nice" tick step (1, 2 or 5 times a power of ten) for a span.
double TickStep(double span, int ticks) {
  const double raw = span / std::max(1, ticks);
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

// "812 µs", "812.5 µs": as many decimals as the tick step needs.
std::string Microseconds(double v, double step) {
  const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  return absl::StrFormat("%.*f µs", decimals, v);
}

std::string ShortLabel(const std::string& label) {
  return label.size() <= kMaxLabelChars ? label : label.substr(0, kMaxLabelChars - 1) + "…";
}

const char* FillOf(VerdictKind v) {
  switch (v) {
  case VerdictKind::kRegression:
    return kRed;
  case VerdictKind::kImprovement:
    return kGreen;
  case VerdictKind::kBaselineMismatch:
    return "white";
  default:
    return kBlue;
  }
}

} // namespace

VerdictKind PlottedVerdict(const PlotSpec& spec, const LabelRuns& label) {
  if (!spec.current_label.empty() && label.label == spec.current_label && spec.current_verdict) {
    return *spec.current_verdict;
  }
  if (spec.baseline_bindings && label.bindings && *label.bindings != *spec.baseline_bindings) {
    return VerdictKind::kBaselineMismatch;
  }
  if (spec.baseline_label.empty() || spec.baseline_us.empty() ||
      label.label == spec.baseline_label) {
    return VerdictKind::kNoBaseline;
  }
  return Compare(spec.baseline_us, label.medians_us, spec.tolerance).kind;
}

std::string HistorySvg(const PlotSpec& spec) {
  const std::vector<LabelRuns>& trend = spec.trend;
  std::string out = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n",
      kWidth, kHeight, kWidth, kHeight);
  absl::StrAppend(&out, "  <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  absl::StrAppend(&out, "  <text class=\"title\" x=\"", kWidth / 2,
                  "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">",
                  XmlEscape(spec.kernel), " on ",
                  XmlEscape(spec.device_model.empty() ? "any device" : spec.device_model),
                  ": median latency per label</text>\n");

  const bool band = !spec.baseline_label.empty() && !spec.baseline_us.empty();
  const double base = band ? util::Median(spec.baseline_us) : 0;
  const double band_lo = base * (1 - spec.tolerance.threshold);
  const double band_hi = base * (1 + spec.tolerance.threshold);
  absl::StrAppend(
      &out, "  <text class=\"legend\" x=\"", kWidth / 2,
      "\" y=\"38\" text-anchor=\"middle\" font-size=\"10\" fill=\"#444\">",
      band ? XmlEscape(absl::StrFormat(
                 "shaded: baseline %s, %.2f µs ± %.1f%%; red points: regressions (slower by more "
                 "than %.1f%%, p < %.3g); dots: runs",
                 ShortLabel(spec.baseline_label), base, spec.tolerance.threshold * 100,
                 spec.tolerance.threshold * 100, spec.tolerance.significance))
           : std::string("no baseline: nothing compared; dots: runs"),
      "</text>\n");

  double lo = 0, hi = 0;
  bool any = false;
  auto include = [&](double v) {
    lo = any ? std::min(lo, v) : v;
    hi = any ? std::max(hi, v) : v;
    any = true;
  };
  for (const LabelRuns& l : trend) {
    for (double v : l.medians_us) include(v);
  }
  if (!any) {
    absl::StrAppend(&out, "  <text x=\"", kWidth / 2, "\" y=\"", kHeight / 2,
                    "\" text-anchor=\"middle\">no recorded runs</text>\n</svg>\n");
    return out;
  }
  if (band) {
    include(band_lo);
    include(band_hi);
  }
  // Pad the range and start and end the axis at ticks.
  double span = hi - lo;
  if (span <= 0) span = std::max(std::fabs(hi) * 0.1, 1e-3);
  const double step = TickStep(span * 1.2, 5);
  const double y0 = std::max(0.0, std::floor((lo - span * 0.1) / step) * step);
  const double y1 = std::ceil((hi + span * 0.1) / step) * step;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double axis_y = kTop + plot_h;
  const double slot = plot_w / static_cast<double>(trend.size());
  auto x_of = [&](size_t i) { return kLeft + slot * (static_cast<double>(i) + 0.5); };
  auto y_of = [&](double v) { return kTop + plot_h * (1 - (v - y0) / (y1 - y0)); };

  // Grid, y ticks and the axis titles.
  const int ticks = static_cast<int>(std::lround((y1 - y0) / step));
  for (int i = 0; i <= ticks; ++i) {
    const double t = y0 + step * i;
    absl::StrAppend(&out, absl::StrFormat("  <line class=\"grid\" x1=\"%.1f\" y1=\"%.2f\" "
                                          "x2=\"%.1f\" y2=\"%.2f\" stroke=\"#e4e4e4\"/>\n"
                                          "  <text class=\"y-tick\" x=\"%.1f\" y=\"%.2f\" "
                                          "text-anchor=\"end\">%s</text>\n",
                                          kLeft, y_of(t), kLeft + plot_w, y_of(t), kLeft - 6,
                                          y_of(t) + 4, Microseconds(t, step)));
  }
  absl::StrAppend(&out, absl::StrFormat("  <text class=\"axis-title\" x=\"16\" y=\"%.1f\" "
                                        "text-anchor=\"middle\" transform=\"rotate(-90 16 %.1f)\">"
                                        "median latency (µs)</text>\n",
                                        kTop + plot_h / 2, kTop + plot_h / 2));
  absl::StrAppend(&out, absl::StrFormat("  <text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" "
                                        "text-anchor=\"middle\">label, oldest to newest "
                                        "(%d)</text>\n",
                                        kLeft + plot_w / 2, kHeight - 8, trend.size()));

  // The threshold band and the baseline median.
  if (band) {
    absl::StrAppend(&out,
                    absl::StrFormat("  <rect class=\"band\" x=\"%.1f\" y=\"%.2f\" "
                                    "width=\"%.1f\" height=\"%.2f\" fill=\"%s\" "
                                    "fill-opacity=\"0.15\"><title>baseline %s: %.3f µs ± "
                                    "%.1f%% (%.3f to %.3f µs)</title></rect>\n",
                                    kLeft, y_of(band_hi), plot_w, y_of(band_lo) - y_of(band_hi),
                                    kGreen, XmlEscape(spec.baseline_label), base,
                                    spec.tolerance.threshold * 100, band_lo, band_hi));
    absl::StrAppend(&out, absl::StrFormat("  <line class=\"baseline\" x1=\"%.1f\" y1=\"%.2f\" "
                                          "x2=\"%.1f\" y2=\"%.2f\" stroke=\"#2b6e2b\" "
                                          "stroke-dasharray=\"5 3\"/>\n",
                                          kLeft, y_of(base), kLeft + plot_w, y_of(base)));
  }
  absl::StrAppend(
      &out, absl::StrFormat("  <g stroke=\"#444\" stroke-width=\"1\">\n"
                            "    <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n"
                            "    <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n"
                            "  </g>\n",
                            kLeft, kTop, kLeft, axis_y, kLeft, axis_y, kLeft + plot_w, axis_y));

  // x labels: every `stride`-th from the newest, so rotated neighbours keep
  // kMinLabelGap between their baselines.
  const double gap = slot * std::sin(kLabelAngle * std::numbers::pi / 180);
  const size_t stride = std::max<size_t>(1, static_cast<size_t>(std::ceil(kMinLabelGap / gap)));
  for (size_t i = 0; i < trend.size(); ++i) {
    const double x = x_of(i);
    absl::StrAppend(&out, absl::StrFormat("  <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                                          "y2=\"%.1f\" stroke=\"#444\"/>\n",
                                          x, axis_y, x, axis_y + 4));
    if ((trend.size() - 1 - i) % stride != 0) continue;
    const bool current = trend[i].label == spec.current_label;
    absl::StrAppend(&out, absl::StrFormat("  <text class=\"x-label\" x=\"%.1f\" y=\"%.1f\" "
                                          "text-anchor=\"end\" transform=\"rotate(-%.0f %.1f "
                                          "%.1f)\"%s>%s<title>%s</title></text>\n",
                                          x, axis_y + 14, kLabelAngle, x, axis_y + 14,
                                          current ? " font-weight=\"bold\"" : "",
                                          XmlEscape(ShortLabel(trend[i].label)),
                                          XmlEscape(trend[i].label)));
  }

  // Runs, the line through the medians, the medians on top.
  std::string path, medians;
  for (size_t i = 0; i < trend.size(); ++i) {
    const LabelRuns& l = trend[i];
    const double x = x_of(i);
    for (double v : l.medians_us) {
      absl::StrAppend(&out, absl::StrFormat("  <circle class=\"run\" cx=\"%.1f\" cy=\"%.2f\" "
                                            "r=\"2\" fill=\"%s\"/>\n",
                                            x, y_of(v), kGrey));
    }
    const double m = util::Median(l.medians_us);
    absl::StrAppend(&path, i == 0 ? "M" : " L", absl::StrFormat("%.1f %.2f", x, y_of(m)));
    const VerdictKind verdict = PlottedVerdict(spec, l);
    std::string tip =
        absl::StrFormat("%s: %.3f µs, median of %d run(s)", l.label, m, l.medians_us.size());
    if (verdict == VerdictKind::kBaselineMismatch) {
      absl::StrAppend(&tip, "; other bindings than the baseline's, not compared");
      if (l.bindings && spec.baseline_bindings) {
        absl::StrAppend(&tip, " (", BindingsDiff(*spec.baseline_bindings, *l.bindings), ")");
      }
    } else if (verdict != VerdictKind::kNoBaseline && base > 0) {
      absl::StrAppend(&tip, absl::StrFormat("; %+.1f%% against %s: %s", (m / base - 1) * 100,
                                            spec.baseline_label, VerdictName(verdict)));
    } else if (l.label == spec.baseline_label) {
      absl::StrAppend(&tip, "; the baseline");
    }
    if (l.label == spec.current_label) {
      absl::StrAppend(&medians, absl::StrFormat("  <circle class=\"current\" cx=\"%.1f\" "
                                                "cy=\"%.2f\" r=\"7\" fill=\"none\" "
                                                "stroke=\"#222\" stroke-width=\"1.5\"/>\n",
                                                x, y_of(m)));
    }
    absl::StrAppend(&medians,
                    absl::StrFormat("  <circle class=\"median\" data-verdict=\"%s\" cx=\"%.1f\" "
                                    "cy=\"%.2f\" r=\"4\" fill=\"%s\"%s><title>%s</title>"
                                    "</circle>\n",
                                    VerdictName(verdict), x, y_of(m), FillOf(verdict),
                                    verdict == VerdictKind::kBaselineMismatch
                                        ? absl::StrCat(" stroke=\"", kGrey, "\"")
                                        : "",
                                    XmlEscape(tip)));
  }
  absl::StrAppend(&out, "  <path class=\"trend\" d=\"", path, "\" fill=\"none\" stroke=\"", kBlue,
                  "\" stroke-width=\"1.5\"/>\n", medians, "</svg>\n");
  return out;
}

} // namespace kiln::regress
