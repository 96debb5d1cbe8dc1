// Cold compile of a tile program, source -> cubin, against NVRTC alone on
// the CUDA source Kiln emits for it (Kiln's own overhead is the
// difference). Each repetition runs the whole path in this process without
// any cache: frontend (parse, evaluate, lower to IR), the lowering pipeline
// (verify, layout inference, tile-op lowering), emission and NVRTC.
//
//   compile_bench [--reps N] [--arch sm_90] [FILE --bind K=V ...]
// Default: examples/gemm/gemm.py at its `# kiln: bind` size.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/frontend/frontend.h"
#include "compiler/toolchain/kernel_compile.h"
#include "tests/support/example_loader.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  int reps = 11;
  std::string arch = "sm_90";
  std::string file = std::string(KILN_SOURCE_DIR) + "/examples/gemm/gemm.py";
  std::vector<std::pair<std::string, kiln::frontend::BindingValue>> binds;
  bool have_file = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--arch" && i + 1 < argc) {
      arch = argv[++i];
    } else if (a == "--bind" && i + 1 < argc) {
      std::string b = argv[++i];
      const size_t eq = b.find('=');
      if (eq == std::string::npos) {
        std::cerr << "compile_bench: --bind takes NAME=VALUE\n";
        return 2;
      }
      binds.emplace_back(b.substr(0, eq), kiln::frontend::ParseBindingText(b.substr(eq + 1)));
    } else if (!a.empty() && a[0] != '-' && !have_file) {
      file = a;
      have_file = true;
    } else {
      std::cerr << "usage: compile_bench [--reps N] [--arch sm_90] [FILE --bind K=V ...]\n";
      return 2;
    }
  }
  std::ifstream in(file);
  if (!in) {
    std::cerr << "compile_bench: cannot read " << file << "\n";
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string source = ss.str();
  if (binds.empty()) {
    const size_t at = source.find("# kiln: bind ");
    if (at != std::string::npos) {
      const size_t end = source.find('\n', at);
      binds = kiln::testing::ParseBindLine(source.substr(at + 13, end - at - 13));
    }
  }
  kiln::frontend::FrontendOptions options;
  options.file_name = file;
  options.bindings = binds;
  const std::string target = "cuda:" + arch;

  std::vector<double> kiln_ms, ours_ms, nvrtc_ms;
  size_t source_bytes = 0;
  for (int r = 0; r < reps + 1; ++r) { // the first round warms NVRTC up and is dropped
    const Clock::time_point t0 = Clock::now();
    absl::StatusOr<kiln::ir::Program> program = kiln::frontend::CompileSource(source, options);
    if (!program.ok()) {
      std::cerr << program.status().message() << "\n";
      return 1;
    }
    absl::StatusOr<kiln::codegen::EmittedKernel> kernel =
        kiln::codegen::LowerAndEmit(*program, target);
    if (!kernel.ok()) {
      std::cerr << kernel.status().message() << "\n";
      return 1;
    }
    const Clock::time_point t1 = Clock::now();
    absl::StatusOr<kiln::toolchain::CompileOutput> cubin =
        kiln::toolchain::CompileCudaKernel(*kernel);
    const Clock::time_point t2 = Clock::now();
    if (!cubin.ok()) {
      std::cerr << cubin.status().message() << "\n";
      return 1;
    }
    // The peer: NVRTC alone on the same source.
    const Clock::time_point t3 = Clock::now();
    absl::StatusOr<kiln::toolchain::CompileOutput> again =
        kiln::toolchain::CompileCudaKernel(*kernel);
    const Clock::time_point t4 = Clock::now();
    if (!again.ok()) return 1;
    source_bytes = kernel->source.size();
    if (r == 0) continue;
    kiln_ms.push_back(Ms(t2 - t0));
    ours_ms.push_back(Ms(t1 - t0));
    nvrtc_ms.push_back(Ms(t4 - t3));
  }
  const double total = Median(kiln_ms), nvrtc = Median(nvrtc_ms);
  std::printf("file: %s (%s), %zu bytes of CUDA source, %d repetitions\n", file.c_str(),
              target.c_str(), source_bytes, reps);
  std::printf("source -> cubin (Kiln, median):          %8.1f ms\n", total);
  std::printf("  of which frontend + lowering + emit:   %8.2f ms\n", Median(ours_ms));
  std::printf("NVRTC alone on the emitted source:       %8.1f ms\n", nvrtc);
  std::printf("ratio Kiln / NVRTC alone:                %8.3f\n", total / nvrtc);
  return 0;
}
