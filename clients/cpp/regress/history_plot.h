// The plots `kiln regress` draws (svg_plot.h), put together from the
// daemon's measurement history; nothing is measured.
//
// RunPlot: a case of `kiln regress run`, its history on the run's device
// model with the run's baseline samples, verdict and bindings (labels whose
// recorded bindings differ from this run's are drawn as another problem).
// SeriesPlot: a stored series (`kiln regress history --plot`): its labels
// on one device model, each compared with one baseline label.
// Errors: the client's (the daemon unreachable); NotFound naming the series
// (and model or baseline label) when it has no successful runs.
// Thread-compatible.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "clients/cpp/client/client.h"
#include "clients/cpp/regress/runner.h"
#include "clients/cpp/regress/svg_plot.h"

namespace kiln::regress {

inline constexpr int kPlotLabels = 30;

absl::StatusOr<PlotSpec> RunPlot(client::Client& client, const KernelResult& kernel,
                                 const std::string& label, int max_labels = kPlotLabels);

struct SeriesPlotOptions {
  std::string device_model;      // "" = the model of the series' newest run
  int max_labels = kPlotLabels;  // the newest labels
  std::string baseline = "auto"; // a label; "auto": the label before the newest; "": none
  Tolerance tolerance;
};

absl::StatusOr<PlotSpec> SeriesPlot(client::Client& client, const std::string& name,
                                    const SeriesPlotOptions& options);

} // namespace kiln::regress
