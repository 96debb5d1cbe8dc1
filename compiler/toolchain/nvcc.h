// CUDA C++ -> cubin/PTX with the nvcc binary, run as a sandboxed subprocess
// (util::RunSubprocess: own process group, timeout, address-space limit).
//
// nvcc is looked for at $KILN_NVCC, $CUDA_HOME/bin/nvcc,
// /usr/local/cuda/bin/nvcc, then "nvcc" in PATH. Each compile writes the
// source and its in-memory headers into a fresh directory under $TMPDIR (or
// /tmp), runs nvcc there, and removes the directory afterwards.
//
// Thread-safety: concurrent calls are independent (separate directories and
// processes).
//
// Errors: NotFound when no nvcc is found; InvalidArgument for a bad request
// (ValidateCudaCompileInput) and when nvcc fails (the message carries the
// first lines of its stderr, "kernel.cu(3): error: ..."); DeadlineExceeded
// when it runs past the timeout; ResourceExhausted when it is killed by a
// signal or reports running out of memory (typically the memory limit);
// Internal for I/O failures.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/toolchain/cuda_compile.h"

namespace kiln::toolchain {

struct NvccOptions {
  // Empty: search as described above.
  std::string nvcc_path;
  std::chrono::milliseconds timeout{120'000};
  // RLIMIT_AS for nvcc and the tools it runs (cicc, ptxas, the host compiler).
  int64_t memory_limit_bytes = int64_t{8} << 30;
};

// The nvcc binary to run, found as described above.
absl::StatusOr<std::string> FindNvcc();

absl::StatusOr<CompileOutput> NvccCompile(const CudaCompileInput& in,
                                          const NvccOptions& options = {});

// "13.0.88" from `nvcc --version`.
absl::StatusOr<std::string> NvccVersion(const NvccOptions& options = {});

// The "V13.0.88" part of `nvcc --version` output, without the "V"; empty if
// absent.
std::string ParseNvccVersion(std::string_view version_output);

} // namespace kiln::toolchain
