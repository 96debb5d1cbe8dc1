#include "clients/cpp/regress/history_plot.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln::regress {

absl::StatusOr<PlotSpec> RunPlot(client::Client& client, const KernelResult& kernel,
                                 const std::string& label, int max_labels) {
  absl::StatusOr<std::vector<LabelRuns>> trend =
      LoadTrend(client, kernel.name, kernel.device_model, max_labels);
  if (!trend.ok()) return trend.status();
  PlotSpec spec;
  spec.kernel = kernel.name;
  spec.device_model = kernel.device_model;
  spec.trend = *std::move(trend);
  spec.current_label = label;
  spec.current_verdict = kernel.verdict.kind;
  spec.baseline_label = kernel.baseline_label;
  spec.baseline_us = kernel.baseline_us;
  spec.baseline_bindings = kernel.bindings; // the problem this run measured
  spec.tolerance = kernel.tolerance;
  return spec;
}

absl::StatusOr<PlotSpec> SeriesPlot(client::Client& client, const std::string& name,
                                    const SeriesPlotOptions& options) {
  PlotSpec spec;
  spec.kernel = name;
  spec.tolerance = options.tolerance;
  spec.device_model = options.device_model;
  if (spec.device_model.empty()) {
    absl::StatusOr<std::vector<std::string>> models = DeviceModelsOf(client, name);
    if (!models.ok()) return models.status();
    if (models->empty()) {
      return absl::NotFoundError(absl::StrCat("no successful runs of '", name, "'"));
    }
    spec.device_model = models->front();
  }
  absl::StatusOr<std::vector<LabelRuns>> trend =
      LoadTrend(client, name, spec.device_model, options.max_labels);
  if (!trend.ok()) return trend.status();
  if (trend->empty()) {
    return absl::NotFoundError(
        absl::StrCat("no successful runs of '", name, "' on ", spec.device_model));
  }
  spec.trend = *std::move(trend);

  std::string baseline = options.baseline;
  if (baseline == "auto") {
    baseline = spec.trend.size() >= 2 ? spec.trend[spec.trend.size() - 2].label : "";
  }
  if (baseline.empty()) return spec;
  spec.baseline_label = baseline;
  const auto in_trend = std::find_if(spec.trend.begin(), spec.trend.end(),
                                     [&](const LabelRuns& l) { return l.label == baseline; });
  if (in_trend != spec.trend.end()) {
    spec.baseline_us = in_trend->medians_us;
    spec.baseline_bindings = in_trend->bindings;
    return spec;
  }
  // Older than the plotted labels: read its runs.
  kiln::v1::ListMeasurementsRequest q;
  q.set_history_name(name);
  q.set_label(baseline);
  q.set_device_model(spec.device_model);
  q.set_successes_only(true);
  absl::StatusOr<kiln::v1::ListMeasurementsResponse> r = client.ListMeasurements(q);
  if (!r.ok()) return r.status();
  for (const kiln::v1::HistoryEntry& e : r->entries()) { // newest first
    if (e.median_us() <= 0) continue;
    if (spec.baseline_us.empty()) spec.baseline_bindings = RecordedBindings(e.config_json());
    spec.baseline_us.push_back(e.median_us());
  }
  if (spec.baseline_us.empty()) {
    return absl::NotFoundError(absl::StrCat("no successful runs of baseline '", baseline, "' of '",
                                            name, "' on ", spec.device_model));
  }
  return spec;
}

} // namespace kiln::regress
