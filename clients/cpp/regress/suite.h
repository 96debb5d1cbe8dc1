// A `kiln regress` suite: YAML listing the kernels a CI job benchmarks.
//
//   defaults:                  # optional; every kernel field but name/file
//     target: cuda:sm_90
//     trials: 5                # independent Benchmark calls per kernel
//     iterations: 20           # timed launches inside each call
//     warmup: 3
//     threshold: 3%            # else the command's --threshold
//     significance: 0.05
//     flush_l2: true
//     cuda_graph: false
//   kernels:
//     - name: gemm-4096        # the history series (one per kernel)
//       file: ../examples/gemm/gemm.py   # relative to the suite file
//       entry: gemm            # optional
//       bindings: {M: 4096, N: 4096, K: 4096}
//       config: {block_M: 128, block_N: 256, block_K: 64, num_stages: 4, threads: 256}
//       # or   config: best      (LookupBest for the device's model)
//       trials: 8              # any default may be overridden per kernel
//
// Names are unique, [A-Za-z0-9_.-]+ (they become file names of plots).
// Thread-compatible.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/cpp/regress/verdict.h"
#include "kiln/v1/service.pb.h"

namespace kiln::regress {

struct SuiteKernel {
  std::string name;
  std::string file; // resolved against the suite's folder
  std::string entry;
  std::map<std::string, kiln::v1::BindingValue> bindings;
  std::map<std::string, kiln::v1::BindingValue> config;
  bool best_config = false; // config: best
  std::string target = "cpu";
  int trials = 5;
  int iterations = 20;
  int warmup = 0; // 0: the daemon's default
  bool flush_l2 = false;
  bool cuda_graph = false;
  bool has_threshold = false;    // else the command's --threshold
  bool has_significance = false; // else the command's --significance
  Tolerance tolerance;
};

struct Suite {
  std::string path;
  std::vector<SuiteKernel> kernels;
};

// The kernel's threshold and significance where the suite gives them, else
// the command's (`flags`).
Tolerance ToleranceOf(const SuiteKernel& kernel, const Tolerance& flags);

// InvalidArgument naming the file (and the kernel) for anything malformed.
absl::StatusOr<Suite> ParseSuite(const std::string& yaml_text, const std::string& path);
absl::StatusOr<Suite> LoadSuite(const std::string& path);

} // namespace kiln::regress
