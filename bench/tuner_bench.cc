// Candidate generation time of the Roller policy: program analysis (the
// baseline compile plus one probe compile per tunable), the model over the
// whole derived space, and compiler verification of the top-k, for one
// problem. Prints the median and the slowest of N repetitions, one
// repetition's split, and the once-per-process toolchain fingerprint (timed
// before the repetitions, so they do not include it).
//
//   tuner_bench [--reps N] [--arch h200] [--top-k 10] [FILE --bind K=V ...]
// Default: examples/gemm/gemm.py at M = N = K = 8192.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/compile_driver.h"
#include "compiler/frontend/frontend.h"
#include "tuner/arch/arch_model.h"
#include "tuner/roller/policy.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

} // namespace

int main(int argc, char** argv) {
  int reps = 21;
  int top_k = 10;
  std::string arch_name = "h200";
  std::string file = std::string(KILN_SOURCE_DIR) + "/examples/gemm/gemm.py";
  std::vector<std::pair<std::string, std::string>> binds;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--arch" && i + 1 < argc) {
      arch_name = argv[++i];
    } else if (a == "--top-k" && i + 1 < argc) {
      top_k = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--bind" && i + 1 < argc) {
      std::string b = argv[++i];
      const size_t eq = b.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "--bind needs NAME=VALUE\n");
        return 2;
      }
      binds.emplace_back(b.substr(0, eq), b.substr(eq + 1));
    } else if (a[0] != '-') {
      file = a;
    } else {
      std::fprintf(
          stderr,
          "usage: tuner_bench [--reps N] [--arch NAME] [--top-k N] [FILE --bind K=V ...]\n");
      return 2;
    }
  }
  if (binds.empty()) binds = {{"M", "8192"}, {"N", "8192"}, {"K", "8192"}};
  std::ifstream f(file);
  std::stringstream text;
  text << f.rdbuf();
  kiln::driver::ProgramInput in;
  in.text = text.str();
  in.file_name = file;
  for (const auto& [k, v] : binds) in.bindings.emplace_back(k, kiln::frontend::ParseBindingText(v));
  absl::StatusOr<kiln::arch::ArchModel> arch = kiln::arch::FindPreset(arch_name);
  if (!arch.ok()) {
    std::fprintf(stderr, "%s\n", arch.status().ToString().c_str());
    return 2;
  }
  kiln::roller::PolicyOptions options;
  options.top_k = top_k;

  // One-time cost of a process: the toolchain fingerprint (NVRTC loaded with
  // dlopen for its version) that Prepare puts into every cache key. kilnd
  // pays it once at start-up.
  const Clock::time_point f0 = Clock::now();
  kiln::driver::BuildOptions build;
  build.target = arch->target;
  const std::string fingerprint = kiln::driver::FingerprintFor(build);
  const double fingerprint_ms = Ms(Clock::now() - f0);

  std::vector<double> total;
  double analysis_ms = 0, model_ms = 0, propose_ms = 0;
  size_t configs = 0;
  for (int r = 0; r < reps; ++r) {
    const Clock::time_point t0 = Clock::now();
    absl::StatusOr<kiln::roller::ProgramAnalysis> a = kiln::roller::AnalyzeProgram(in);
    if (!a.ok()) {
      std::fprintf(stderr, "%s\n", a.status().ToString().c_str());
      return 1;
    }
    const Clock::time_point t1 = Clock::now();
    absl::StatusOr<kiln::roller::Proposal> p = kiln::roller::Propose(*a, *arch, options);
    if (!p.ok()) {
      std::fprintf(stderr, "%s\n", p.status().ToString().c_str());
      return 1;
    }
    const Clock::time_point t2 = Clock::now();
    total.push_back(Ms(t2 - t0));
    if (r == 0) {
      // The model alone over the same space (no verification).
      kiln::roller::PolicyOptions model_only = options;
      model_only.verify = false;
      const Clock::time_point m0 = Clock::now();
      absl::StatusOr<kiln::roller::Proposal> m = kiln::roller::Propose(*a, *arch, model_only);
      model_ms = Ms(Clock::now() - m0);
      analysis_ms = Ms(t1 - t0);
      propose_ms = Ms(t2 - t1);
      configs = static_cast<size_t>(p->considered);
    }
  }
  std::sort(total.begin(), total.end());
  std::printf("%s on %s, top-%d: %zu configs evaluated\n", file.c_str(), arch->name.c_str(), top_k,
              configs);
  std::printf("candidate generation: median %.2f ms, max %.2f ms over %d runs\n",
              total[total.size() / 2], total.back(), reps);
  std::printf("once per process: toolchain fingerprint %.2f ms (%s)\n", fingerprint_ms,
              fingerprint.c_str());
  std::printf("first run: analysis %.2f ms, model + verification %.2f ms (model alone %.2f ms)\n",
              analysis_ms, propose_ms, model_ms);
  return 0;
}
