// CUDA C++ -> cubin/PTX in process with NVRTC, loaded at run time with
// dlopen so that Kiln starts (and serves non-CUDA targets) where CUDA is
// absent.
//
// Where the library is looked for (first that loads wins):
//   1. $KILN_NVRTC_LIBRARY, if set: then it is the only candidate, so a
//      misconfiguration is an error rather than a silent fallback;
//   2. libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so in the loader's path;
//   3. the same names in $CUDA_HOME/lib64 and /usr/local/cuda/lib64.
//
// Thread-safety: everything here may be called concurrently. The default
// library loads once (std::call_once); each compile owns its nvrtcProgram,
// which is all NVRTC needs to be thread-safe.
//
// Errors: FailedPrecondition "NVRTC not found; searched ..." when no library
// loads (or lacks a symbol); InvalidArgument for a bad request (see
// ValidateCudaCompileInput), for code that does not compile (the message
// carries the first lines of NVRTC's log, "kernel.cu(3): error: ...", so a
// missing header or a syntax error is located) and for options NVRTC
// rejects; Internal for any other NVRTC failure.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/toolchain/cuda_compile.h"

namespace kiln::toolchain {

struct NvrtcApi; // function pointers resolved from the library

class NvrtcLibrary {
 public:
  // Tries `candidates` (file names or paths, as dlopen takes them) in order.
  static absl::StatusOr<std::unique_ptr<NvrtcLibrary>>
  Load(const std::vector<std::string>& candidates);
  ~NvrtcLibrary();
  NvrtcLibrary(const NvrtcLibrary&) = delete;
  NvrtcLibrary& operator=(const NvrtcLibrary&) = delete;

  absl::StatusOr<CompileOutput> Compile(const CudaCompileInput& in) const;
  // "13.0".
  std::string Version() const;
  // What dlopen loaded, e.g. "libnvrtc.so.13".
  const std::string& loaded_from() const { return loaded_from_; }

 private:
  NvrtcLibrary() = default;
  void* handle_ = nullptr;
  std::unique_ptr<NvrtcApi> api_;
  std::string loaded_from_;
};

// The candidate list described above, read from the environment now.
std::vector<std::string> DefaultNvrtcCandidates();

// The process-wide library, loaded on first use from DefaultNvrtcCandidates()
// (the outcome, success or not, is kept for the life of the process).
absl::StatusOr<const NvrtcLibrary*> DefaultNvrtc();

// Builds `in` with NVRTC: through the runner installed with InstallNvrtcRunner
// when there is one (kilnd's helper processes, server/nvrtc_helpers.h),
// else DefaultNvrtc()->Compile(in) in this process. The input is validated
// here first either way, so a bad request gets the same error.
absl::StatusOr<CompileOutput> NvrtcCompile(const CudaCompileInput& in);

// Somewhere else to run NVRTC builds. Builds on threads of one process
// contend inside NVRTC (measured: 16 distinct builds at once on 16 threads
// take 2.1-2.3x one build, in 16 processes 1.2-1.5x), so a daemon that
// builds many candidates at once sends them to helper processes. Must be
// thread-safe.
using NvrtcRunner = std::function<absl::StatusOr<CompileOutput>(const CudaCompileInput&)>;
// Installs `runner` for every later NvrtcCompile and returns a handle for
// RemoveNvrtcRunner. Runners stack: the latest one installed and not yet
// removed serves; with none, builds run in this process. Builds already
// running finish where they started.
uint64_t InstallNvrtcRunner(NvrtcRunner runner);
void RemoveNvrtcRunner(uint64_t handle);

} // namespace kiln::toolchain
