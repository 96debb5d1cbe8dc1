// The request and result types shared by the CUDA toolchains (NVRTC in
// process, nvcc as a subprocess), and the checks both apply to a request.
//
// A request comes from Kiln's codegen, never verbatim from a client: the
// source text and `extra_options` are trusted to be Kiln-generated. Names
// (the program and its in-memory headers) are still checked, because nvcc
// writes them to disk.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "compiler/toolchain/resource_usage.h"

namespace kiln::toolchain {

struct CudaCompileInput {
  std::string source;
  // File name the diagnostics use ("kernel.cu(12): error: ...").
  std::string program_name = "kernel.cu";
  // One of SupportedCudaArchs().
  std::string arch = "sm_80";
  // Include name (as written in #include "...") -> content. Relative paths
  // with '/' are allowed; ".." and absolute paths are not.
  std::map<std::string, std::string> headers;
  // ptxas optimisation level 0..3.
  int opt_level = 3;
  bool fast_math = false;
  // Line information for profilers (-lineinfo), no effect on the code.
  bool line_info = false;
  // Appended verbatim after Kiln's own options; each must start with '-'.
  std::vector<std::string> extra_options;
  bool want_cubin = true;
  bool want_ptx = false;
};

struct CompileOutput {
  std::string cubin; // ELF bytes when want_cubin
  std::string ptx;   // text when want_ptx
  // The toolchain's full log (warnings, ptxas -v report).
  std::string log;
  // One entry per kernel; empty when only PTX was produced (ptxas not run).
  std::vector<ResourceUsage> kernels;
  std::chrono::nanoseconds elapsed{0};
};

// Architectures Kiln generates code for, e.g. "sm_80", "sm_90a".
const std::vector<std::string>& SupportedCudaArchs();
// "sm_90a" -> "compute_90a".
std::string VirtualArch(std::string_view arch);

// InvalidArgument naming the offending field: unsupported arch, unsafe or
// duplicate names, NUL bytes, no output requested, opt level out of range.
absl::Status ValidateCudaCompileInput(const CudaCompileInput& in);

// The first `max_lines` lines of `text`, plus "... (N more lines)" if cut.
std::string FirstLines(std::string_view text, int max_lines);

} // namespace kiln::toolchain
