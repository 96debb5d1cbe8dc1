// The bindings (problem shape: M, N, K, dtype ...) a regress case ran with,
// as the daemon's measurement history records them, and the check that a
// baseline measured the same problem.
//
// kilnd records a Benchmark's bindings in the history entry's config_json,
// {"artifact_key": ..., "config": {...}, "bindings": {"M": 256, ...}}
// (server/benchmark_service.cc). Values are compared in that JSON spelling
// ("256", "1.5", "true", "\"float16\""), so 256 and 256.0 differ, as they do
// for the compiler. An entry without "bindings" (recorded by an older kilnd,
// or a Benchmark of an artifact key) has unknown bindings: nullopt.
// Thread-safe (pure functions).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/v1/service.pb.h"

namespace kiln::regress {

// name -> the value's JSON text.
using Bindings = std::map<std::string, std::string>;

Bindings BindingsOf(const std::map<std::string, kiln::v1::BindingValue>& bindings);

// The bindings of a history entry's config_json; nullopt when it records
// none or is not a JSON object.
std::optional<Bindings> RecordedBindings(const std::string& config_json);

// "M=256 N=1024" (names in order); "(none)" when empty.
std::string BindingsText(const Bindings& bindings);

// What differs from `baseline` to `current`, "M: 256 -> 2048, dtype:
// (unset) -> \"float16\""; "" when they are equal.
std::string BindingsDiff(const Bindings& baseline, const Bindings& current);

// One recorded run of a baseline label: its median and its bindings.
struct BaselineRun {
  double median_us = 0;
  std::optional<Bindings> bindings; // nullopt: not recorded
};

// The baseline runs that measured `current`'s problem.
struct BaselineSelection {
  std::vector<double> samples_us; // runs with these bindings, or none recorded
  int unknown = 0;                // kept runs without recorded bindings
  int left_out = 0;               // runs with other bindings
  // Non-empty when runs exist and every one has other bindings: the
  // baseline mismatch, naming the label and the differing bindings, like
  // "the bindings differ from baseline sha-1's (M: 256 -> 2048; baseline
  // M=256 N=1024, this run M=2048 N=1024)".
  std::string mismatch;
  std::string difference; // BindingsDiff with the newest left-out run; "" if none
};

// Runs newest first, as the history lists them.
BaselineSelection SelectBaseline(const std::vector<BaselineRun>& runs, const Bindings& current,
                                 const std::string& baseline_label);

} // namespace kiln::regress
