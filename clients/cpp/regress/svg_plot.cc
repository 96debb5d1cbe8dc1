#include "clients/cpp/regress/svg_plot.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/cpp/regress/junit_writer.h"
#include "util/statistics.h"

namespace kiln::regress {
namespace {

constexpr double kWidth = 720, kHeight = 360;
constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 80;

// A "nice" tick step (1, 2 or 5 times a power of ten) for a span.
double TickStep(double span, int ticks) {
  const double raw = span / std::max(1, ticks);
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

} // namespace

std::string HistorySvg(const std::string& kernel, const std::vector<LabelRuns>& trend,
                       const std::string& current_label) {
  std::string out = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n",
      kWidth, kHeight, kWidth, kHeight);
  absl::StrAppend(&out, "  <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  absl::StrAppend(&out, "  <text x=\"", kWidth / 2,
                  "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">", XmlEscape(kernel),
                  ": median latency per label (us)</text>\n");
  double lo = 0, hi = 0;
  bool any = false;
  for (const LabelRuns& l : trend) {
    for (double v : l.medians_us) {
      lo = any ? std::min(lo, v) : v;
      hi = any ? std::max(hi, v) : v;
      any = true;
    }
  }
  if (!any) {
    absl::StrAppend(&out, "  <text x=\"", kWidth / 2, "\" y=\"", kHeight / 2,
                    "\" text-anchor=\"middle\">no recorded runs</text>\n</svg>\n");
    return out;
  }
  // Pad the range and start the axis at a tick.
  double span = hi - lo;
  if (span <= 0) span = std::max(std::fabs(hi) * 0.1, 1e-3);
  const double step = TickStep(span * 1.2, 5);
  const double y0 = std::max(0.0, std::floor((lo - span * 0.1) / step) * step);
  const double y1 = std::ceil((hi + span * 0.1) / step) * step;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto x_of = [&](size_t i) {
    return trend.size() == 1
               ? kLeft + plot_w / 2
               : kLeft + plot_w * static_cast<double>(i) / static_cast<double>(trend.size() - 1);
  };
  auto y_of = [&](double v) { return kTop + plot_h * (1 - (v - y0) / (y1 - y0)); };

  // Axes, grid and tick labels.
  absl::StrAppend(&out,
                  absl::StrFormat("  <g stroke=\"#444\" stroke-width=\"1\">\n"
                                  "    <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n"
                                  "    <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n"
                                  "  </g>\n",
                                  kLeft, kTop, kLeft, kTop + plot_h, kLeft, kTop + plot_h,
                                  kLeft + plot_w, kTop + plot_h));
  for (double t = y0; t <= y1 + step / 2; t += step) {
    absl::StrAppend(&out, absl::StrFormat("  <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                          "stroke=\"#ddd\"/>\n  <text x=\"%.1f\" y=\"%.1f\" "
                                          "text-anchor=\"end\">%.4g</text>\n",
                                          kLeft, y_of(t), kLeft + plot_w, y_of(t), kLeft - 6,
                                          y_of(t) + 4, t));
  }
  // Runs, medians, the line.
  std::string path;
  for (size_t i = 0; i < trend.size(); ++i) {
    const LabelRuns& l = trend[i];
    const double x = x_of(i);
    for (double v : l.medians_us) {
      absl::StrAppend(&out, absl::StrFormat("  <circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" "
                                            "fill=\"#999\"/>\n",
                                            x, y_of(v)));
    }
    const double m = util::Median(l.medians_us);
    absl::StrAppend(&path, i == 0 ? "M" : " L", absl::StrFormat("%.1f %.1f", x, y_of(m)));
    const bool current = l.label == current_label;
    const std::string short_label = l.label.size() > 12 ? l.label.substr(0, 12) : l.label;
    absl::StrAppend(&out, absl::StrFormat("  <circle class=\"median\" cx=\"%.1f\" cy=\"%.1f\" "
                                          "r=\"4\" fill=\"%s\"><title>%s: %.3f us (%d runs)"
                                          "</title></circle>\n",
                                          x, y_of(m), current ? "#d62728" : "#1f77b4",
                                          XmlEscape(l.label), m, l.medians_us.size()));
    absl::StrAppend(&out,
                    absl::StrFormat("  <text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                                    "transform=\"rotate(-35 %.1f %.1f)\"%s>%s</text>\n",
                                    x, kTop + plot_h + 14, x, kTop + plot_h + 14,
                                    current ? " fill=\"#d62728\"" : "", XmlEscape(short_label)));
  }
  absl::StrAppend(&out, "  <path d=\"", path,
                  "\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>\n</svg>\n");
  return out;
}

} // namespace kiln::regress
