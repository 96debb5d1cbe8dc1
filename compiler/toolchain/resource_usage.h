// Per-kernel resource usage as reported by ptxas in verbose mode (-v), the
// parser shared by the NVRTC and nvcc toolchains.
//
// Thread-safety: pure functions. Errors: none; lines the parser does not
// recognise are skipped, so a ptxas that prints more (or different) detail
// yields fewer filled fields, never a failure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::toolchain {

struct ResourceUsage {
  // Entry function as ptxas names it (mangled unless declared extern "C").
  std::string kernel;
  // Target as ptxas names it, e.g. "sm_90a".
  std::string arch;
  int registers = 0; // per thread
  int barriers = 0;
  int64_t shared_bytes = 0;           // static __shared__ memory
  int64_t stack_frame_bytes = 0;      // local memory ("stack frame" or "lmem")
  int64_t cumulative_stack_bytes = 0; // including callees
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t constant_bytes = 0; // cmem[0]: kernel parameters and constants

  bool operator==(const ResourceUsage&) const = default;
};

// Parses ptxas -v output (as printed by `nvcc -Xptxas -v` on stderr or by
// NVRTC with --ptxas-options=-v in its program log). One entry per entry
// function, in the order ptxas compiled them.
std::vector<ResourceUsage> ParsePtxasVerbose(std::string_view log);

// The entry for `kernel`, or nullptr.
const ResourceUsage* FindKernel(const std::vector<ResourceUsage>& usage, std::string_view kernel);

} // namespace kiln::toolchain
