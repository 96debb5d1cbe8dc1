// Runs a suite against a kilnd: for each kernel, `trials` independent
// Benchmark calls recorded under the kernel's name with the run's label,
// then the comparison with the baseline label's recorded trials on the same
// device model (verdict.h).
//
// Baseline: a label, or "auto" (the most recently recorded other label of
// that kernel's series on the device model), or "" (none: every kernel is
// NO_BASELINE). A kernel whose program does not compile, whose benchmark
// fails, or whose "config: best" has no stored best is an infrastructure
// error of that kernel (its message kept); the other kernels still run.
//
// Bindings: the history records each run's bindings (bindings_check.h).
// Baseline runs recorded with other bindings measured another problem and
// are never compared: when no baseline run has this run's bindings, the
// verdict is BASELINE_MISMATCH (an infrastructure-class outcome: the
// command exits 2), naming the differing bindings. Baseline runs with
// unknown bindings (an older kilnd) are compared, and the log says the
// bindings could not be checked.
// Thread-compatible.
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/cpp/client/client.h"
#include "clients/cpp/regress/bindings_check.h"
#include "clients/cpp/regress/suite.h"
#include "clients/cpp/regress/verdict.h"

namespace kiln::regress {

struct RunOptions {
  std::string label;                // required: the code under test (a git sha)
  std::string baseline = "auto";    // a label, "auto", or "" for none
  std::vector<std::string> devices; // Benchmark device ids ("cuda:0"); empty: any
  Tolerance tolerance;              // for kernels without their own threshold
};

struct KernelResult {
  std::string name;
  std::string device_id;
  std::string device_model;
  std::string artifact_key;
  std::string config_text; // "block_M=128 ..." ("best: ..." for config: best)
  Bindings bindings;       // as sent (and recorded)
  std::vector<double> trial_medians_us;
  std::string baseline_label; // empty: none found
  std::vector<double> baseline_us;
  Tolerance tolerance;
  Verdict verdict;
  // Non-empty iff verdict.kind is kBaselineMismatch: which bindings differ
  // from the baseline's, "baseline sha-1 ran M: 256 -> this run 2048".
  std::string mismatch;
  std::string error; // non-empty: an infrastructure error
  double seconds = 0;
};

struct RunReport {
  std::string suite_path;
  std::string label;
  std::vector<KernelResult> kernels;
  int64_t start_unix_ms = 0;
  double seconds = 0;
  bool any_regression() const;
  bool any_error() const;
  bool any_mismatch() const;
};

// `log` (may be null) gets one progress line per trial and per kernel.
RunReport RunSuite(client::Client& client, const Suite& suite, const RunOptions& options,
                   std::ostream* log);

// One label's runs of a series, for trends and plots.
struct LabelRuns {
  std::string label;
  std::vector<double> medians_us; // one per recorded run (trial)
  int64_t last_unix_ms = 0;
  std::optional<Bindings> bindings; // of the label's newest run; nullopt: not recorded
};

// The series' successful runs on `device_model` ("" = any) grouped by
// label, oldest label first, at most `max_labels` (the newest).
absl::StatusOr<std::vector<LabelRuns>> LoadTrend(client::Client& client, const std::string& name,
                                                 const std::string& device_model, int max_labels);

// The device models of the series' successful runs, the most recent first;
// empty when it has none.
absl::StatusOr<std::vector<std::string>> DeviceModelsOf(client::Client& client,
                                                        const std::string& name);

} // namespace kiln::regress
