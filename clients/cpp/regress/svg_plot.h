// A history plot of one regress case as a standalone SVG (hand-written, no
// scripts or external resources).
//
//   title    "CASE on DEVICE: median latency per label"
//   x        labels oldest to newest; their names (at most 12 characters,
//            the full one in a tooltip) at 45 degrees, thinned out so that
//            neighbours never overlap (the newest is always named)
//   y        latency in µs: "nice" ticks labelled "250 µs", an axis title
//   runs     a small grey dot per recorded run (trial)
//   medians  a point per label joined by a line: blue, red for a
//            regression against the baseline (the one thing drawn red),
//            green for an improvement, hollow grey for a label whose
//            bindings differ from the baseline's (another problem: never
//            compared)
//   band     baseline median × (1 ± threshold), shaded, with the baseline
//            median dashed: a point above the band is slower by more than
//            the threshold (red when the t test also says so)
// A label is a regression as verdict.h decides it (Compare of the baseline
// label's runs with its runs); the current label of a `kiln regress run`
// takes the run's own verdict. Without a baseline nothing is compared and
// no band is drawn. Thread-safe (pure).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "clients/cpp/regress/bindings_check.h"
#include "clients/cpp/regress/runner.h"
#include "clients/cpp/regress/verdict.h"

namespace kiln::regress {

struct PlotSpec {
  std::string kernel;
  std::string device_model;                   // "" = any
  std::vector<LabelRuns> trend;               // oldest first
  std::string current_label;                  // drawn with a ring and a bold name; "" = none
  std::optional<VerdictKind> current_verdict; // the run's verdict of current_label
  std::string baseline_label;                 // "" = none
  std::vector<double> baseline_us;            // its runs (trial medians)
  std::optional<Bindings> baseline_bindings;  // nullopt = unknown: nothing is left out
  Tolerance tolerance;
};

// The verdict drawn for `label`: the run's for current_label, else
// Compare against the baseline; kBaselineMismatch when both bindings are
// known and differ; kNoBaseline for the baseline itself and when there is
// none.
VerdictKind PlottedVerdict(const PlotSpec& spec, const LabelRuns& label);

std::string HistorySvg(const PlotSpec& spec);

} // namespace kiln::regress
