#include "clients/cpp/regress/regress_command.h"

#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/cpp/regress/history_plot.h"
#include "clients/cpp/regress/junit_writer.h"
#include "clients/cpp/regress/markdown_writer.h"
#include "clients/cpp/regress/runner.h"
#include "clients/cpp/regress/suite.h"
#include "clients/cpp/regress/svg_plot.h"
#include "clients/cpp/remote/connection_flags.h"
#include "clients/cpp/suggest.h"
#include "util/file_path.h"
#include "util/statistics.h"

namespace kiln::regress {
namespace {

using cli::CommandIo;
using nlohmann::json;

constexpr char kUsage[] =
    "usage: kiln regress run SUITE.yaml --label LABEL [--baseline LABEL|auto|none]\n"
    "                        [--device N|ID]... [--threshold 3%] [--significance P]\n"
    "                        [--junit FILE] [--markdown FILE] [--plot-dir DIR] [--json]\n"
    "       kiln regress history KERNEL|SUITE.yaml [--device-model MODEL] [--limit N] [--json]\n"
    "                        [--plot] [--plot-dir DIR] [--baseline LABEL|auto|none]\n"
    "                        [--threshold 3%] [--significance P]\n"
    "exit: 0 no regression, 1 a regression, 2 an infrastructure error or a baseline\n"
    "      measured with other bindings (history: 1 no runs recorded)\n";

bool Write(const std::string& path, const std::string& text, CommandIo io) {
  if (absl::Status s = util::WriteFileAtomically(path, text); !s.ok()) {
    io.err << "kiln regress: " << s.message() << "\n";
    return false;
  }
  return true;
}

std::string Date(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M", &tm);
  return buf;
}

int Run(const std::vector<std::string>& args, CommandIo io) {
  std::optional<cli::Connection> c = cli::ParseConnection(args, io, "regress run");
  if (!c) return kExitRegressInfra;
  RunOptions options;
  std::string suite_path, junit, markdown, plot_dir;
  bool baseline_given = false;
  const std::vector<std::string>& a = c->rest;
  for (size_t i = 0; i < a.size(); ++i) {
    std::string v;
    if (cli::TakeValue(a, i, "--label", &v)) {
      options.label = v;
    } else if (cli::TakeValue(a, i, "--baseline", &v)) {
      options.baseline = v == "none" ? "" : v;
      baseline_given = true;
    } else if (cli::TakeValue(a, i, "--device", &v)) {
      int n = 0;
      options.devices.push_back(absl::SimpleAtoi(v, &n) && n >= 0 ? absl::StrCat("cuda:", n) : v);
    } else if (cli::TakeValue(a, i, "--threshold", &v)) {
      if (!ParseFraction(v, &options.tolerance.threshold)) {
        io.err << "kiln regress: --threshold expects a fraction like 3% or 0.03\n";
        return kExitRegressInfra;
      }
    } else if (cli::TakeValue(a, i, "--significance", &v)) {
      double p = 0;
      if (!absl::SimpleAtod(v, &p) || p <= 0 || p >= 1) {
        io.err << "kiln regress: --significance expects a p-value in (0, 1)\n";
        return kExitRegressInfra;
      }
      options.tolerance.significance = p;
    } else if (cli::TakeValue(a, i, "--junit", &v)) {
      junit = util::ExpandHome(v); // `--junit=~/x`: no shell expands that ~
    } else if (cli::TakeValue(a, i, "--markdown", &v)) {
      markdown = util::ExpandHome(v);
    } else if (cli::TakeValue(a, i, "--plot-dir", &v)) {
      plot_dir = util::ExpandHome(v);
    } else if (!a[i].empty() && a[i][0] != '-' && suite_path.empty()) {
      suite_path = a[i];
    } else if (!a[i].empty() && a[i][0] == '-') {
      io.err << "kiln regress run: "
             << cli::UnknownFlag(a[i],
                                 cli::WithConnectionFlags({"--label", "--baseline", "--device",
                                                           "--threshold", "--significance",
                                                           "--junit", "--markdown", "--plot-dir"}))
             << "\n"
             << kUsage;
      return kExitRegressInfra;
    } else {
      io.err << "kiln regress run: unexpected argument '" << a[i] << "'\n" << kUsage;
      return kExitRegressInfra;
    }
  }
  if (suite_path.empty() || options.label.empty()) {
    io.err << "kiln regress run: a SUITE.yaml and --label are required\n" << kUsage;
    return kExitRegressInfra;
  }
  if (baseline_given && options.baseline == options.label) {
    io.err << "kiln regress run: --baseline is the same label as --label\n";
    return kExitRegressInfra;
  }
  absl::StatusOr<Suite> suite = LoadSuite(suite_path);
  if (!suite.ok()) {
    io.err << "kiln regress: " << suite.status().message() << "\n";
    return kExitRegressInfra;
  }
  // Every kernel's file before any measurement: a typo fails in a second.
  for (const SuiteKernel& k : suite->kernels) {
    if (!std::filesystem::is_regular_file(k.file)) {
      io.err << "kiln regress: " << suite_path << ": kernel " << k.name << ": cannot read '"
             << k.file << "'\n";
      return kExitRegressInfra;
    }
  }
  // Every output before any measurement too: folders are created, and one
  // that cannot be written fails now rather than after minutes of timing.
  std::vector<std::string> outputs;
  if (!junit.empty()) outputs.push_back(junit);
  if (!markdown.empty()) outputs.push_back(markdown);
  if (!plot_dir.empty()) {
    for (const SuiteKernel& k : suite->kernels) {
      outputs.push_back(absl::StrCat(plot_dir, "/", k.name, ".svg"));
    }
  }
  for (const std::string& path : outputs) {
    if (absl::Status s = util::PrepareOutputFile(path); !s.ok()) {
      io.err << "kiln regress: " << s.message() << "\n";
      return kExitRegressInfra;
    }
  }
  std::unique_ptr<client::Client> client = cli::Connect(*c, io, "regress");
  if (!client) return kExitRegressInfra;
  if (absl::StatusOr<kiln::v1::GetVersionResponse> v = client->GetVersion(); !v.ok()) {
    io.err << "kiln regress: cannot reach kilnd at " << c->options.address << ": "
           << v.status().message() << "\n";
    return kExitRegressInfra;
  }

  const RunReport report = RunSuite(*client, *suite, options, &io.err);

  bool written = true;
  if (!junit.empty()) written &= Write(junit, JUnitXml(report), io);
  if (!markdown.empty()) written &= Write(markdown, MarkdownSummary(report), io);
  if (!plot_dir.empty()) {
    for (const KernelResult& k : report.kernels) {
      if (!k.error.empty()) continue;
      absl::StatusOr<PlotSpec> plot = RunPlot(*client, k, report.label);
      if (!plot.ok()) {
        io.err << "kiln regress: history of " << k.name << ": " << plot.status().message() << "\n";
        written = false;
        continue;
      }
      written &= Write(absl::StrCat(plot_dir, "/", k.name, ".svg"), HistorySvg(*plot), io);
    }
  }

  if (c->json) {
    json kernels = json::array();
    for (const KernelResult& k : report.kernels) {
      json j = {{"name", k.name},
                {"device_id", k.device_id},
                {"device_model", k.device_model},
                {"artifact_key", k.artifact_key},
                {"config", k.config_text},
                {"trials_us", k.trial_medians_us},
                {"baseline_label", k.baseline_label},
                {"baseline_us", k.baseline_us},
                {"median_us", k.verdict.current_median_us},
                {"baseline_median_us", k.verdict.baseline_median_us},
                {"change", k.verdict.change},
                {"p_value", k.verdict.p_value},
                {"threshold", k.tolerance.threshold},
                {"significance", k.tolerance.significance},
                {"verdict", k.error.empty() ? VerdictName(k.verdict.kind) : "error"}};
      if (!k.error.empty()) j["error"] = k.error;
      if (!k.mismatch.empty()) j["mismatch"] = k.mismatch;
      j["bindings"] = k.bindings; // name -> the value's JSON text
      kernels.push_back(std::move(j));
    }
    io.out << json{{"label", report.label},
                   {"suite", report.suite_path},
                   {"seconds", report.seconds},
                   {"regression", report.any_regression()},
                   {"errors", report.any_error()},
                   {"mismatches", report.any_mismatch()},
                   {"kernels", kernels}}
                  .dump()
           << "\n";
  } else {
    io.out << absl::StrFormat("%-24s %-12s %12s %12s %9s %9s  %s\n", "KERNEL", "BASELINE", "OLD_US",
                              "NEW_US", "CHANGE", "P", "VERDICT");
    for (const KernelResult& k : report.kernels) {
      if (!k.error.empty()) {
        io.out << absl::StrFormat("%-24s %-12s %12s %12s %9s %9s  error: %s\n", k.name, "", "", "",
                                  "", "", k.error);
        continue;
      }
      if (!k.mismatch.empty()) {
        io.out << absl::StrFormat("%-24s %-12s %12s %12.2f %9s %9s  baseline_mismatch: %s\n",
                                  k.name, k.baseline_label.substr(0, 12), "-",
                                  k.verdict.current_median_us, "-", "-", k.mismatch);
        continue;
      }
      const Verdict& v = k.verdict;
      const bool base = v.kind != VerdictKind::kNoBaseline;
      io.out << absl::StrFormat(
          "%-24s %-12s %12s %12.2f %9s %9s  %s\n", k.name, k.baseline_label.substr(0, 12),
          base ? absl::StrFormat("%.2f", v.baseline_median_us) : "-", v.current_median_us,
          base ? absl::StrFormat("%+.1f%%", v.change * 100) : "-",
          base ? absl::StrFormat("%.3g", v.p_value) : "-", VerdictName(v.kind));
    }
  }
  if (report.any_regression()) return kExitRegressRegression;
  // A baseline of other bindings cannot be compared: like an error, exit 2.
  if (report.any_error() || report.any_mismatch() || !written) return kExitRegressInfra;
  return kExitRegressOk;
}

// One series' trend as `kiln regress history` prints it.
void PrintTrend(const std::vector<LabelRuns>& trend, std::ostream& out) {
  out << absl::StrFormat("%-20s %5s %12s %9s  %s\n", "LABEL", "RUNS", "MEDIAN_US", "CHANGE",
                         "LAST RUN (UTC)");
  double previous = 0;
  for (const LabelRuns& l : trend) {
    const double m = util::Median(l.medians_us);
    out << absl::StrFormat(
        "%-20s %5d %12.2f %9s  %s\n", l.label.substr(0, 20), l.medians_us.size(), m,
        previous > 0 ? absl::StrFormat("%+.1f%%", (m / previous - 1) * 100) : "-",
        Date(l.last_unix_ms));
    previous = m;
  }
}

json TrendJson(const std::vector<LabelRuns>& trend) {
  json labels = json::array();
  for (const LabelRuns& l : trend) {
    json j = {{"label", l.label},
              {"runs_us", l.medians_us},
              {"median_us", util::Median(l.medians_us)},
              {"last_unix_ms", l.last_unix_ms}};
    if (l.bindings) j["bindings"] = *l.bindings;
    labels.push_back(std::move(j));
  }
  return labels;
}

// A suite file rather than a series name: names are [A-Za-z0-9_.-]+, so a
// path with a folder, or a name ending in .yaml / .yml, is a suite.
bool IsSuitePath(const std::string& arg) {
  return arg.find('/') != std::string::npos || absl::EndsWith(arg, ".yaml") ||
         absl::EndsWith(arg, ".yml");
}

int History(const std::vector<std::string>& args, CommandIo io) {
  std::optional<cli::Connection> c = cli::ParseConnection(args, io, "regress history");
  if (!c) return kExitRegressInfra;
  std::string target, model, plot_dir, baseline = "auto";
  bool plot = false;
  int limit = 20;
  bool limit_given = false;
  Tolerance tolerance;
  const std::vector<std::string>& a = c->rest;
  for (size_t i = 0; i < a.size(); ++i) {
    std::string v;
    if (cli::TakeValue(a, i, "--device-model", &v)) {
      model = v;
    } else if (cli::TakeValue(a, i, "--limit", &v)) {
      if (!absl::SimpleAtoi(v, &limit) || limit <= 0) {
        io.err << "kiln regress history: --limit expects a positive number\n";
        return kExitRegressInfra;
      }
      limit_given = true;
    } else if (a[i] == "--plot") {
      plot = true;
    } else if (cli::TakeValue(a, i, "--plot-dir", &v)) {
      plot_dir = util::ExpandHome(v);
      plot = true;
    } else if (cli::TakeValue(a, i, "--baseline", &v)) {
      baseline = v == "none" ? "" : v;
    } else if (cli::TakeValue(a, i, "--threshold", &v)) {
      if (!ParseFraction(v, &tolerance.threshold)) {
        io.err << "kiln regress history: --threshold expects a fraction like 3% or 0.03\n";
        return kExitRegressInfra;
      }
    } else if (cli::TakeValue(a, i, "--significance", &v)) {
      double p = 0;
      if (!absl::SimpleAtod(v, &p) || p <= 0 || p >= 1) {
        io.err << "kiln regress history: --significance expects a p-value in (0, 1)\n";
        return kExitRegressInfra;
      }
      tolerance.significance = p;
    } else if (!a[i].empty() && a[i][0] != '-' && target.empty()) {
      target = a[i];
    } else if (!a[i].empty() && a[i][0] == '-') {
      io.err << "kiln regress history: "
             << cli::UnknownFlag(a[i], cli::WithConnectionFlags(
                                           {"--device-model", "--limit", "--plot", "--plot-dir",
                                            "--baseline", "--threshold", "--significance"}))
             << "\n"
             << kUsage;
      return kExitRegressInfra;
    } else {
      io.err << "kiln regress history: unexpected argument '" << a[i] << "'\n" << kUsage;
      return kExitRegressInfra;
    }
  }
  if (target.empty()) {
    io.err << "kiln regress history: which KERNEL (or SUITE.yaml)?\n" << kUsage;
    return kExitRegressInfra;
  }
  // assign(1, ...): operator= of a one-letter literal trips GCC 12's -Wrestrict at -O3.
  if (plot && plot_dir.empty()) plot_dir.assign(1, '.');
  if (plot && !limit_given) limit = kPlotLabels;

  // The series: one kernel, or every kernel of a suite with its threshold.
  struct Series {
    std::string name;
    Tolerance tolerance;
  };
  std::vector<Series> series;
  const bool from_suite = IsSuitePath(target);
  if (from_suite) {
    absl::StatusOr<Suite> suite = LoadSuite(target);
    if (!suite.ok()) {
      io.err << "kiln regress history: " << suite.status().message() << "\n";
      return kExitRegressInfra;
    }
    for (const SuiteKernel& k : suite->kernels) {
      series.push_back({k.name, ToleranceOf(k, tolerance)});
    }
  } else {
    series.push_back({target, tolerance});
  }

  std::unique_ptr<client::Client> client = cli::Connect(*c, io, "regress");
  if (!client) return kExitRegressInfra;
  int found = 0;
  bool written = true;
  json kernels = json::array();
  for (const Series& s : series) {
    absl::StatusOr<std::vector<LabelRuns>> trend = LoadTrend(*client, s.name, model, limit);
    if (!trend.ok()) {
      io.err << "kiln regress history: " << trend.status().message() << "\n";
      return kExitRegressInfra;
    }
    if (trend->empty()) {
      io.err << "kiln regress history: no successful runs of '" << s.name << "'"
             << (model.empty() ? "" : " on " + model) << "\n";
      continue;
    }
    ++found;
    if (c->json) {
      kernels.push_back({{"kernel", s.name}, {"labels", TrendJson(*trend)}});
    } else {
      if (from_suite) io.out << (found > 1 ? "\n" : "") << "KERNEL " << s.name << "\n";
      PrintTrend(*trend, io.out);
    }
    if (!plot) continue;
    SeriesPlotOptions options;
    options.device_model = model;
    options.max_labels = limit;
    options.baseline = baseline;
    options.tolerance = s.tolerance;
    absl::StatusOr<PlotSpec> spec = SeriesPlot(*client, s.name, options);
    if (!spec.ok()) {
      io.err << "kiln regress history: plot of " << s.name << ": " << spec.status().message()
             << "\n";
      written = false;
      continue;
    }
    const std::string path = absl::StrCat(plot_dir, "/", s.name, ".svg");
    if (Write(path, HistorySvg(*spec), io)) {
      io.err << "kiln regress history: " << s.name << " on " << spec->device_model << ": wrote "
             << path << "\n";
    } else {
      written = false;
    }
  }
  if (c->json && found > 0) {
    io.out << (from_suite ? json{{"suite", target}, {"kernels", kernels}} : kernels[0]).dump()
           << "\n";
  }
  if (!written) return kExitRegressInfra;
  return found > 0 ? 0 : 1;
}

} // namespace

cli::Command RegressCommand() {
  cli::Command c;
  c.name = "regress";
  c.summary = "CI performance regression: run a benchmark suite against a baseline label";
  c.run = [](const std::vector<std::string>& args, CommandIo io) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
      (args.empty() ? io.err : io.out) << kUsage << cli::kConnectionFlagsHelp;
      return args.empty() ? kExitRegressInfra : kExitRegressOk;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "run") return Run(rest, io);
    if (args[0] == "history") return History(rest, io);
    io.err << "kiln regress: unknown subcommand '" << args[0] << "'"
           << cli::DidYouMean(args[0], {"run", "history"}) << "\n"
           << kUsage;
    return kExitRegressInfra;
  };
  return c;
}

} // namespace kiln::regress
