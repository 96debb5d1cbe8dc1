// The history plot parsed back with expat: well-formed with escaped names;
// red only for regressions against the baseline (not for the current label
// as such, an improvement, or a label of other bindings); the threshold
// band spans baseline median × (1 ± threshold) on the plot's own y scale;
// y ticks in µs cover the data; x labels never overlap, the newest is
// always named; the title names the case and the device.
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "clients/cpp/regress/svg_plot.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/clients/cpp/regress/xml_dom.h"

namespace kiln::regress {
namespace {

using testing::Element;
using ::testing::HasSubstr;
using testing::Parsed;
using testing::ParseXml;
using testing::WithClass;

constexpr char kRed[] = "#d62728";

Parsed Plot(const PlotSpec& spec) {
  const std::string svg = HistorySvg(spec);
  Parsed x = ParseXml(svg);
  EXPECT_TRUE(x.ok) << x.error << "\n" << svg;
  return x;
}

// The label a median point belongs to: its tooltip starts "LABEL: ".
std::string LabelOf(const Element& median) {
  const std::string& tip = median.children.at(0).text;
  return tip.substr(0, tip.find(':'));
}

// y pixel -> µs, from the first and last y ticks ("120 µs") and their grid lines.
struct YScale {
  double y_a = 0, v_a = 0, y_b = 0, v_b = 0;
  double ValueAt(double y) const { return v_a + (y - y_a) * (v_b - v_a) / (y_b - y_a); }
};
YScale ScaleOf(const Element& svg) {
  const std::vector<const Element*> grid = WithClass(svg, "line", "grid");
  const std::vector<const Element*> ticks = WithClass(svg, "text", "y-tick");
  EXPECT_GE(ticks.size(), 3u);
  EXPECT_EQ(grid.size(), ticks.size());
  YScale s;
  s.y_a = std::stod(grid.front()->attr("y1"));
  s.v_a = std::stod(ticks.front()->text);
  s.y_b = std::stod(grid.back()->attr("y1"));
  s.v_b = std::stod(ticks.back()->text);
  return s;
}

Bindings Small() { return {{"M", "256"}, {"N", "1024"}}; }

PlotSpec Sample() {
  PlotSpec spec;
  spec.kernel = "gemm & co";
  spec.device_model = "NVIDIA H200";
  spec.trend = {{"sha-1", {100, 101, 99}, 1000, Small()},
                {"sha-2", {100, 102, 99}, 2000, Small()},  // pass
                {"sha-3", {150, 151, 149}, 3000, Small()}, // regression
                {"sha-4", {70, 71, 69}, 4000, Small()},    // improvement
                {"sha-5", {300, 301, 299}, 5000, Bindings{{"M", "2048"}, {"N", "1024"}}},
                {"sha-6 <x>", {100, 101, 100}, 6000, std::nullopt}, // unknown bindings: compared
                {"sha-7", {151, 152, 150}, 7000, Small()}};
  spec.current_label = "sha-7";
  spec.current_verdict = VerdictKind::kRegression;
  spec.baseline_label = "sha-1";
  spec.baseline_us = {100, 101, 99};
  spec.baseline_bindings = Small();
  spec.tolerance = {0.05, 0.05};
  return spec;
}

TEST(HistorySvg, OnlyRegressionsAreRed) {
  const Parsed x = Plot(Sample());
  ASSERT_TRUE(x.ok);
  std::map<std::string, std::string> verdicts; // label -> data-verdict
  std::vector<std::string> red;
  std::function<void(const Element&)> visit = [&](const Element& e) {
    if (e.attr("fill") == kRed || e.attr("stroke") == kRed) {
      EXPECT_EQ(e.name, "circle");
      EXPECT_EQ(e.attr("class"), "median");
      red.push_back(LabelOf(e));
    }
    if (e.attr("class") == "median") verdicts[LabelOf(e)] = e.attr("data-verdict");
    for (const Element& c : e.children) visit(c);
  };
  visit(x.root);
  EXPECT_THAT(red, ::testing::ElementsAre("sha-3", "sha-7"));
  EXPECT_EQ(verdicts["sha-1"], "no_baseline"); // the baseline itself
  EXPECT_EQ(verdicts["sha-2"], "pass");
  EXPECT_EQ(verdicts["sha-3"], "regression");
  EXPECT_EQ(verdicts["sha-4"], "improvement");
  EXPECT_EQ(verdicts["sha-5"], "baseline_mismatch"); // slower, but another problem
  EXPECT_EQ(verdicts["sha-6 <x>"], "pass");
  EXPECT_EQ(verdicts["sha-7"], "regression");
  // The current label is ringed whatever its verdict, and red only as a regression.
  ASSERT_EQ(WithClass(x.root, "circle", "current").size(), 1u);
  PlotSpec passing = Sample();
  passing.current_verdict = VerdictKind::kPass;
  passing.trend.back().medians_us = {100, 100, 101};
  const Parsed y = Plot(passing);
  for (const Element* c : WithClass(y.root, "circle", "median")) {
    if (LabelOf(*c) == "sha-7") {
      EXPECT_NE(c->attr("fill"), kRed);
    }
  }
}

TEST(HistorySvg, TheBandIsTheBaselineMedianPlusMinusTheThreshold) {
  PlotSpec spec = Sample();
  spec.tolerance.threshold = 0.10;
  const Parsed x = Plot(spec);
  const std::vector<const Element*> band = WithClass(x.root, "rect", "band");
  ASSERT_EQ(band.size(), 1u);
  const YScale scale = ScaleOf(x.root);
  const double top = std::stod(band[0]->attr("y"));
  const double bottom = top + std::stod(band[0]->attr("height"));
  EXPECT_NEAR(scale.ValueAt(top), 110.0, 0.05);   // 100 µs × 1.10
  EXPECT_NEAR(scale.ValueAt(bottom), 90.0, 0.05); // 100 µs × 0.90
  const std::vector<const Element*> base = WithClass(x.root, "line", "baseline");
  ASSERT_EQ(base.size(), 1u);
  EXPECT_NEAR(scale.ValueAt(std::stod(base[0]->attr("y1"))), 100.0, 0.05);
  EXPECT_THAT(WithClass(x.root, "text", "legend").at(0)->text, HasSubstr("± 10.0%"));

  // No baseline: no band, and nothing is compared.
  spec.baseline_label.clear();
  spec.baseline_us.clear();
  spec.baseline_bindings.reset();
  spec.current_verdict = VerdictKind::kNoBaseline;
  const Parsed none = Plot(spec);
  EXPECT_TRUE(WithClass(none.root, "rect", "band").empty());
  for (const Element* c : WithClass(none.root, "circle", "median")) {
    EXPECT_EQ(c->attr("data-verdict"), "no_baseline");
  }
}

TEST(HistorySvg, AxesHaveMicrosecondTicksATitleAndUnits) {
  const Parsed x = Plot(Sample());
  const std::vector<const Element*> ticks = WithClass(x.root, "text", "y-tick");
  ASSERT_GE(ticks.size(), 3u);
  double previous_y = 1e9, previous_v = -1;
  for (const Element* t : ticks) {
    EXPECT_TRUE(absl::EndsWith(t->text, " µs")) << t->text;
    const double v = std::stod(t->text), y = std::stod(t->attr("y"));
    EXPECT_GT(v, previous_v);
    EXPECT_LT(y, previous_y); // larger latency higher up
    previous_v = v;
    previous_y = y;
  }
  EXPECT_LE(std::stod(ticks.front()->text), 69); // the fastest run
  EXPECT_GE(std::stod(ticks.back()->text), 301); // the slowest
  const std::vector<const Element*> titles = WithClass(x.root, "text", "axis-title");
  ASSERT_EQ(titles.size(), 2u);
  EXPECT_THAT(titles[0]->text, HasSubstr("(µs)"));
  const std::vector<const Element*> title = WithClass(x.root, "text", "title");
  ASSERT_EQ(title.size(), 1u);
  EXPECT_EQ(title[0]->text, "gemm & co on NVIDIA H200: median latency per label");
  // Sub-microsecond kernels get decimals, not a row of "0 µs".
  PlotSpec tiny = Sample();
  for (LabelRuns& l : tiny.trend) {
    for (double& v : l.medians_us) v /= 400;
  }
  tiny.baseline_us = {0.25, 0.2525, 0.2475};
  std::set<std::string> distinct;
  for (const Element* t : WithClass(Plot(tiny).root, "text", "y-tick")) distinct.insert(t->text);
  EXPECT_GE(distinct.size(), 3u);
}

TEST(HistorySvg, XLabelsNeverOverlapAndTheNewestIsNamed) {
  for (int n : {2, 30, 60, 200}) {
    SCOPED_TRACE(n);
    PlotSpec spec;
    spec.kernel = "k";
    for (int i = 0; i < n; ++i) {
      spec.trend.push_back({absl::StrFormat("%040x", 0xabc0000 + i), {100.0 + i % 3}, i, {}});
    }
    spec.current_label = spec.trend.back().label;
    const Parsed x = Plot(spec);
    const std::vector<const Element*> labels = WithClass(x.root, "text", "x-label");
    ASSERT_FALSE(labels.empty());
    if (n <= 30) {
      EXPECT_EQ(labels.size(), static_cast<size_t>(n));
    }
    EXPECT_EQ(labels.back()->children.at(0).text, spec.trend.back().label); // full, in a tooltip
    EXPECT_EQ(labels.back()->attr("font-weight"), "bold");
    for (size_t i = 0; i < labels.size(); ++i) {
      EXPECT_LE(labels[i]->text.size(), 12u + 2) << labels[i]->text; // 11 chars + "…" (3 bytes)
      EXPECT_THAT(labels[i]->attr("transform"), HasSubstr("rotate(-45 "));
      if (i == 0) continue;
      // Rotated 45°, neighbours' baselines are dx·sin 45° apart: more than the 11 px font.
      const double dx = std::stod(labels[i]->attr("x")) - std::stod(labels[i - 1]->attr("x"));
      EXPECT_GE(dx * std::sin(std::numbers::pi / 4), 13.0);
    }
  }
}

TEST(HistorySvg, EmptyHistoryIsStillAPlot) {
  PlotSpec spec;
  spec.kernel = "empty";
  const Parsed x = Plot(spec);
  ASSERT_TRUE(x.ok);
  EXPECT_EQ(x.root.name, "svg");
  EXPECT_EQ(x.root.attrs.at("xmlns"), "http://www.w3.org/2000/svg");
}

} // namespace
} // namespace kiln::regress
