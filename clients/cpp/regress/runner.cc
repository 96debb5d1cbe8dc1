#include "clients/cpp/regress/runner.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "util/statistics.h"

namespace kiln::regress {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::string ValueText(const kiln::v1::BindingValue& v) {
  switch (v.value_case()) {
  case kiln::v1::BindingValue::kIntValue:
    return std::to_string(v.int_value());
  case kiln::v1::BindingValue::kFloatValue:
    return absl::StrCat(v.float_value());
  case kiln::v1::BindingValue::kBoolValue:
    return v.bool_value() ? "True" : "False";
  default:
    return v.string_value();
  }
}

template <typename Map>
std::string ConfigText(const Map& config) {
  std::map<std::string, std::string> sorted;
  for (const auto& [k, v] : config) sorted[k] = ValueText(v);
  std::vector<std::string> parts;
  for (const auto& [k, v] : sorted) parts.push_back(absl::StrCat(k, "=", v));
  return absl::StrJoin(parts, " ");
}

// The baseline's runs: those of `label` on `model`, newest first.
absl::StatusOr<std::vector<BaselineRun>> BaselineOf(client::Client& client, const std::string& name,
                                                    const std::string& label,
                                                    const std::string& model) {
  kiln::v1::ListMeasurementsRequest q;
  q.set_history_name(name);
  q.set_label(label);
  q.set_device_model(model);
  q.set_successes_only(true);
  absl::StatusOr<kiln::v1::ListMeasurementsResponse> r = client.ListMeasurements(q);
  if (!r.ok()) return r.status();
  std::vector<BaselineRun> out;
  for (const kiln::v1::HistoryEntry& e : r->entries()) {
    if (e.median_us() > 0) out.push_back({e.median_us(), RecordedBindings(e.config_json())});
  }
  return out;
}

// Keeps the baseline runs that measured `k`'s problem (bindings_check.h);
// the mismatch verdict when none did.
void CheckBindings(const std::vector<BaselineRun>& runs, std::ostream* log, KernelResult& k) {
  BaselineSelection selected = SelectBaseline(runs, k.bindings, k.baseline_label);
  k.baseline_us = std::move(selected.samples_us);
  if (!selected.mismatch.empty()) {
    k.verdict.kind = VerdictKind::kBaselineMismatch;
    k.verdict.current_median_us = util::Median(k.trial_medians_us);
    k.mismatch = std::move(selected.mismatch);
    return;
  }
  if (log == nullptr) return;
  if (selected.left_out > 0) {
    *log << absl::StrFormat("kiln regress: %s: %d of %d runs of baseline %s had other bindings "
                            "(%s) and are left out\n",
                            k.name, selected.left_out, runs.size(), k.baseline_label,
                            selected.difference);
  }
  if (selected.unknown > 0) {
    *log << absl::StrFormat("kiln regress: %s: warning: %d run(s) of baseline %s have no recorded "
                            "bindings (recorded by an older kilnd), so their bindings are not "
                            "checked\n",
                            k.name, selected.unknown, k.baseline_label);
  }
}

// "auto": the newest label of the series on `model` other than `current`.
absl::StatusOr<std::string> AutoBaseline(client::Client& client, const std::string& name,
                                         const std::string& current, const std::string& model) {
  kiln::v1::ListMeasurementsRequest q;
  q.set_history_name(name);
  q.set_device_model(model);
  q.set_successes_only(true);
  absl::StatusOr<kiln::v1::ListMeasurementsResponse> r = client.ListMeasurements(q);
  if (!r.ok()) return r.status();
  for (const kiln::v1::HistoryEntry& e : r->entries()) { // newest first
    if (!e.label().empty() && e.label() != current) return e.label();
  }
  return std::string();
}

void RunKernel(client::Client& client, const SuiteKernel& k, const RunOptions& options,
               std::ostream* log, KernelResult& out) {
  const SteadyClock::time_point t0 = SteadyClock::now();
  out.name = k.name;
  out.tolerance = ToleranceOf(k, options.tolerance);
  absl::StatusOr<kiln::v1::ProgramSource> program = client::LoadProgram(k.file);
  if (!program.ok()) {
    out.error = absl::StrCat(program.status().message());
    return;
  }
  for (const auto& [name, v] : k.bindings) (*program->mutable_bindings())[name] = v;
  out.bindings = BindingsOf(k.bindings);
  if (!k.entry.empty()) program->set_entry(k.entry);

  kiln::v1::BenchmarkRequest req;
  *req.mutable_program() = *program;
  req.set_target(k.target);
  req.set_trials(k.iterations);
  req.set_warmup(k.warmup);
  req.set_flush_l2(k.flush_l2);
  req.set_use_cuda_graph(k.cuda_graph);
  req.set_history_name(k.name);
  req.set_label(options.label);
  for (const std::string& d : options.devices) req.mutable_devices()->add_device_ids(d);
  if (k.best_config) {
    kiln::v1::LookupBestRequest lb;
    *lb.mutable_program() = *program;
    lb.set_target(k.target);
    absl::StatusOr<kiln::v1::LookupBestResponse> best = client.LookupBest(lb);
    if (!best.ok()) {
      out.error = absl::StrCat("LookupBest: ", best.status().message());
      return;
    }
    if (!best->found()) {
      out.error = absl::StrCat("config: best, but no best config is stored for ", k.name, " on ",
                               k.target, " (run kiln tune first)");
      return;
    }
    *req.mutable_config() = best->config();
    out.config_text = absl::StrCat("best: ", ConfigText(best->config()));
  } else {
    for (const auto& [name, v] : k.config) (*req.mutable_config())[name] = v;
    out.config_text = ConfigText(k.config);
  }

  for (int t = 0; t < k.trials; ++t) {
    absl::StatusOr<kiln::v1::BenchmarkResponse> r = client.Benchmark(req);
    if (!r.ok()) {
      out.error = absl::StrCat("trial ", t + 1, " of ", k.trials, ": ", r.status().message());
      return;
    }
    // Later trials run where the first did, so all samples share a device.
    if (t == 0 && options.devices.empty()) req.mutable_devices()->add_device_ids(r->device_id());
    out.device_id = r->device_id();
    out.device_model = r->device_model();
    out.artifact_key = r->artifact_key();
    out.trial_medians_us.push_back(r->latency().median_us());
    if (log != nullptr) {
      *log << absl::StrFormat("kiln regress: %s trial %d/%d: median %.2f us on %s\n", k.name, t + 1,
                              k.trials, r->latency().median_us(), r->device_id());
    }
  }

  std::string baseline = options.baseline;
  if (baseline == "auto") {
    absl::StatusOr<std::string> b = AutoBaseline(client, k.name, options.label, out.device_model);
    if (!b.ok()) {
      out.error = absl::StrCat("reading the history: ", b.status().message());
      return;
    }
    baseline = *b;
  }
  if (!baseline.empty()) {
    absl::StatusOr<std::vector<BaselineRun>> runs =
        BaselineOf(client, k.name, baseline, out.device_model);
    if (!runs.ok()) {
      out.error = absl::StrCat("reading the history: ", runs.status().message());
      return;
    }
    out.baseline_label = baseline;
    CheckBindings(*runs, log, out);
  }
  if (out.mismatch.empty())
    out.verdict = Compare(out.baseline_us, out.trial_medians_us, out.tolerance);
  out.seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  if (log != nullptr) {
    if (!out.mismatch.empty()) {
      *log << absl::StrFormat("kiln regress: %s: %.2f us, baseline mismatch: %s; not compared "
                              "(a case measuring another problem needs a new name)\n",
                              k.name, out.verdict.current_median_us, out.mismatch);
    } else if (out.verdict.kind == VerdictKind::kNoBaseline) {
      *log << absl::StrFormat("kiln regress: %s: %.2f us, no baseline%s\n", k.name,
                              out.verdict.current_median_us,
                              baseline.empty() ? "" : absl::StrCat(" (no runs of ", baseline, ")"));
    } else {
      *log << absl::StrFormat("kiln regress: %s: %.2f us vs %.2f us (%s), %+.1f%%, p=%.3g: %s\n",
                              k.name, out.verdict.current_median_us, out.verdict.baseline_median_us,
                              baseline, out.verdict.change * 100, out.verdict.p_value,
                              VerdictName(out.verdict.kind));
    }
  }
}

} // namespace

bool RunReport::any_regression() const {
  return std::any_of(kernels.begin(), kernels.end(), [](const KernelResult& k) {
    return k.error.empty() && k.verdict.kind == VerdictKind::kRegression;
  });
}

bool RunReport::any_error() const {
  return std::any_of(kernels.begin(), kernels.end(),
                     [](const KernelResult& k) { return !k.error.empty(); });
}

bool RunReport::any_mismatch() const {
  return std::any_of(kernels.begin(), kernels.end(),
                     [](const KernelResult& k) { return k.error.empty() && !k.mismatch.empty(); });
}

RunReport RunSuite(client::Client& client, const Suite& suite, const RunOptions& options,
                   std::ostream* log) {
  RunReport report;
  report.suite_path = suite.path;
  report.label = options.label;
  report.start_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  const SteadyClock::time_point t0 = SteadyClock::now();
  for (const SuiteKernel& k : suite.kernels) {
    KernelResult r;
    RunKernel(client, k, options, log, r);
    if (!r.error.empty() && log != nullptr) {
      *log << "kiln regress: " << k.name << ": error: " << r.error << "\n";
    }
    report.kernels.push_back(std::move(r));
  }
  report.seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  return report;
}

absl::StatusOr<std::vector<LabelRuns>> LoadTrend(client::Client& client, const std::string& name,
                                                 const std::string& device_model, int max_labels) {
  kiln::v1::ListMeasurementsRequest q;
  q.set_history_name(name);
  q.set_device_model(device_model);
  q.set_successes_only(true);
  q.set_limit(100000);
  absl::StatusOr<kiln::v1::ListMeasurementsResponse> r = client.ListMeasurements(q);
  if (!r.ok()) return r.status();
  std::vector<LabelRuns> newest_first;
  std::map<std::string, size_t> index;
  for (const kiln::v1::HistoryEntry& e : r->entries()) {
    const std::string label = e.label().empty() ? "(unlabelled)" : e.label();
    auto [it, fresh] = index.emplace(label, newest_first.size());
    if (fresh) {
      if (static_cast<int>(newest_first.size()) >= max_labels) {
        index.erase(it);
        continue;
      }
      newest_first.push_back({label, {}, e.unix_ms(), RecordedBindings(e.config_json())});
    }
    LabelRuns& runs = newest_first[it->second];
    runs.medians_us.push_back(e.median_us());
    runs.last_unix_ms = std::max(runs.last_unix_ms, e.unix_ms());
  }
  std::reverse(newest_first.begin(), newest_first.end());
  return newest_first;
}

absl::StatusOr<std::vector<std::string>> DeviceModelsOf(client::Client& client,
                                                        const std::string& name) {
  kiln::v1::ListMeasurementsRequest q;
  q.set_history_name(name);
  q.set_successes_only(true);
  q.set_limit(100000);
  absl::StatusOr<kiln::v1::ListMeasurementsResponse> r = client.ListMeasurements(q);
  if (!r.ok()) return r.status();
  std::vector<std::string> models;
  for (const kiln::v1::HistoryEntry& e : r->entries()) { // newest first
    if (std::find(models.begin(), models.end(), e.device_model()) == models.end()) {
      models.push_back(e.device_model());
    }
  }
  return models;
}

} // namespace kiln::regress
