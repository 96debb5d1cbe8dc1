// What the compiler needs to know about a compilation target: parsed from
// the target strings of the API ("cuda:sm_80", "cuda:sm_90a", "hip:gfx942",
// "cpu"). Limits are the architecture's documented per-block limits; the
// tuner's measured hardware models live in tuner/arch.
// Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::passes {

struct Target {
  enum class Kind : uint8_t { kCuda, kHip, kCpu };
  Kind kind = Kind::kCpu;
  std::string arch;   // "sm_90a", "gfx942", "x86_64"
  int sm_version = 0; // 80, 86, 89, 90 (CUDA only)
  int64_t max_threads_per_block = 1024;
  int64_t shared_bytes_per_block = 48 * 1024; // without opt-in
  int64_t shared_bytes_optin = 48 * 1024;     // with cudaFuncAttributeMaxDynamicSharedMemorySize
  int64_t registers_per_thread = 255;
  int64_t registers_per_block = 65536;
  int warp_size = 32;
};

// Parses a target string. Unknown kinds or architectures are InvalidArgument
// listing the supported ones. HIP architectures parse (the tuner's hardware
// models and resource checks know them) but are not yet supported targets.
absl::StatusOr<Target> ParseTarget(std::string_view target);

// The targets Kiln compiles for, in order: "cpu", then the CUDA architectures.
// The one list that the version RPC, error messages, `kiln-opt
// --list-targets` and the docs use; a target is listed only when it builds
// (tests/compiler/passes/target_test.cc builds a program for each).
std::vector<std::string> SupportedTargets();

// SupportedTargets() joined with ", " for messages.
std::string SupportedTargetList();

// An sm_90 SM's shared memory (228 KiB usable by blocks plus 1 KiB the
// hardware keeps per resident block): how many blocks of a size fit.
inline constexpr int64_t kSm90SmSharedBytes = 233472;
inline constexpr int64_t kBlockReservedSharedBytes = 1024;

} // namespace kiln::passes
