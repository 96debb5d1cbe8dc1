// Cold compile of a tile program, source -> cubin, against NVRTC alone on
// the CUDA source Kiln emits for it (Kiln's own overhead is the
// difference). Each repetition runs the whole path in this process without
// any cache: frontend (parse, evaluate, lower to IR), the lowering pipeline
// (verify, layout inference, tile-op lowering), emission and NVRTC.
//
//   compile_bench [--reps N] [--arch sm_90] [--threads N [--helpers KILN_WORKER]]
//                 [FILE --bind K=V ...]
// Default: examples/gemm/gemm.py at its `# kiln: bind` size. With --threads N it
// also builds the emitted source N times at once on N threads of this process
// (as kilnd's compile pool does) and prints that wall time against one build's.
// Every build's source differs (a distinct __device__ variable), so none is a
// hit in NVRTC's own compute cache. With
// --helpers it then runs the same rounds through kilnd's NVRTC helper
// processes (server/nvrtc_helpers.h, N of them, warmed first), and one build
// alone through a warm helper against the in-process build.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "compiler/frontend/frontend.h"
#include "compiler/toolchain/kernel_compile.h"
#include "compiler/toolchain/nvrtc.h"
#include "server/nvrtc_helpers.h"
#include "tests/support/example_loader.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// `kernel` with a declaration no other build has, in this run or an earlier
// one, so that no compile cache (NVRTC 13 keeps one in ~/.nv/ComputeCache,
// keyed on the preprocessed source: a comment would not do) can serve it.
kiln::codegen::EmittedKernel Tagged(const kiln::codegen::EmittedKernel& kernel,
                                    const std::string& tag) {
  static const std::string run =
      absl::StrCat(getpid(), "_",
                   std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count());
  kiln::codegen::EmittedKernel own = kernel;
  own.source = absl::StrCat("__device__ int kiln_bench_tag_", run, "_", tag, ";\n", kernel.source);
  return own;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  int reps = 11;
  int threads = 0;
  std::string helpers_worker; // --helpers: kiln-worker, for the helper rounds
  std::string arch = "sm_90";
  std::string file = std::string(KILN_SOURCE_DIR) + "/examples/gemm/gemm.py";
  std::vector<std::pair<std::string, kiln::frontend::BindingValue>> binds;
  bool have_file = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--helpers" && i + 1 < argc) {
      helpers_worker = argv[++i];
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
      std::cerr << "usage: compile_bench [--reps N] [--arch sm_90] [--threads N] [FILE --bind K=V "
                   "...]\n";
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
  std::optional<kiln::codegen::EmittedKernel> emitted;
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
        kiln::toolchain::CompileCudaKernel(Tagged(*kernel, absl::StrCat("kiln_", r)));
    const Clock::time_point t2 = Clock::now();
    if (!cubin.ok()) {
      std::cerr << cubin.status().message() << "\n";
      return 1;
    }
    // The peer: NVRTC alone on the same source.
    const Clock::time_point t3 = Clock::now();
    absl::StatusOr<kiln::toolchain::CompileOutput> again =
        kiln::toolchain::CompileCudaKernel(Tagged(*kernel, absl::StrCat("alone_", r)));
    const Clock::time_point t4 = Clock::now();
    if (!again.ok()) return 1;
    source_bytes = kernel->source.size();
    emitted = *kernel;
    if (r == 0) {
      std::printf("first build in this process (NVRTC loaded, dropped): %.1f ms\n", Ms(t2 - t0));
      continue;
    }
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
  if (threads > 0 && emitted.has_value()) {
    // Each round starts `threads` builds together and waits for the last one.
    auto rounds = [&](const char* tag) -> double {
      std::vector<double> wall_ms;
      for (int r = 0; r < std::max(1, reps / 2); ++r) {
        std::vector<std::thread> pool;
        std::vector<int> failed(static_cast<size_t>(threads), 0);
        const Clock::time_point s0 = Clock::now();
        for (int t = 0; t < threads; ++t) {
          // A distinct source per build and round, so no cache could serve it.
          kiln::codegen::EmittedKernel own = Tagged(*emitted, absl::StrCat(tag, "_", r, "_", t));
          pool.emplace_back([&failed, t, own = std::move(own)] {
            failed[static_cast<size_t>(t)] = kiln::toolchain::CompileCudaKernel(own).ok() ? 0 : 1;
          });
        }
        for (std::thread& th : pool) th.join();
        wall_ms.push_back(Ms(Clock::now() - s0));
        if (std::count(failed.begin(), failed.end(), 1) > 0) return -1;
      }
      return Median(wall_ms);
    };
    const double wall = rounds("threads");
    if (wall < 0) {
      std::cerr << "compile_bench: a threaded build failed\n";
      return 1;
    }
    std::printf("%2d builds at once on threads (median):  %8.1f ms (%.2f x one build, %u cpus)\n",
                threads, wall, wall / nvrtc, std::thread::hardware_concurrency());
    if (!helpers_worker.empty()) {
      // The same builds through kilnd's NVRTC helper processes, warmed up
      // first as kilnd does on a GPU host.
      kiln::server::NvrtcHelperOptions ho;
      ho.worker_path = helpers_worker;
      ho.max_helpers = threads;
      ho.warm_arch = arch;
      absl::StatusOr<std::unique_ptr<kiln::server::NvrtcHelpers>> made =
          kiln::server::NvrtcHelpers::Create(ho);
      if (!made.ok()) {
        std::cerr << "compile_bench: " << made.status().message() << "\n";
        return 1;
      }
      std::shared_ptr<kiln::server::NvrtcHelpers> helpers = *std::move(made);
      const Clock::time_point w0 = Clock::now();
      helpers->Prewarm(threads);
      while (helpers->stats().idle < threads) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (Clock::now() - w0 > std::chrono::seconds(60)) {
          std::cerr << "compile_bench: the helpers did not start within 60 s\n";
          return 1;
        }
      }
      const uint64_t handle = kiln::toolchain::InstallNvrtcRunner(
          [helpers](const kiln::toolchain::CudaCompileInput& in) { return helpers->Compile(in); });
      // Each helper warms up before it reads its first request; one round
      // of builds waits for that.
      if (rounds("warm") < 0) return 1;
      std::printf("%2d helpers started, warm and through a round: %6.1f ms\n", threads,
                  Ms(Clock::now() - w0));
      std::vector<double> alone_ms;
      for (int r = 0; r < reps; ++r) {
        kiln::codegen::EmittedKernel own = Tagged(*emitted, absl::StrCat("helper_alone_", r));
        const Clock::time_point a0 = Clock::now();
        if (!kiln::toolchain::CompileCudaKernel(own).ok()) return 1;
        alone_ms.push_back(Ms(Clock::now() - a0));
      }
      const double alone = Median(alone_ms);
      const double through = rounds("helpers");
      kiln::toolchain::RemoveNvrtcRunner(handle);
      if (through < 0) {
        std::cerr << "compile_bench: a build in a helper failed\n";
        return 1;
      }
      std::printf("one build in a warm helper (median):     %8.1f ms (%.2f x in process)\n", alone,
                  alone / nvrtc);
      std::printf("%2d builds at once in %2d helpers (median): %6.1f ms (%.2f x one build, "
                  "%.2f x on threads)\n",
                  threads, threads, through, through / nvrtc, through / wall);
      const kiln::server::NvrtcHelperStats st = helpers->stats();
      std::printf("helpers: %lld started, %lld builds, %lld lost, %lld in process\n",
                  static_cast<long long>(st.started), static_cast<long long>(st.builds),
                  static_cast<long long>(st.lost), static_cast<long long>(st.in_process));
    }
  }
  return 0;
}
