#include "compiler/passes/target.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace kiln::passes {
namespace {

struct CudaArch {
  std::string_view name;
  int sm;
  int64_t smem_optin; // bytes per block with opt-in (CUDA programming guide, table of limits)
};

// sm_80 (A100): 163 KB; sm_86/sm_89 (consumer Ampere/Ada): 99 KB; sm_90 (H100/H200): 227 KB.
constexpr std::array<CudaArch, 6> kCudaArchs = {{
    {"sm_80", 80, 166912},
    {"sm_86", 86, 101376},
    {"sm_87", 87, 166912},
    {"sm_89", 89, 101376},
    {"sm_90", 90, 232448},
    {"sm_90a", 90, 232448},
}};

struct HipArch {
  std::string_view name;
  int64_t lds_bytes;
};

constexpr std::array<HipArch, 2> kHipArchs = {{{"gfx90a", 65536}, {"gfx942", 65536}}};

absl::Status Unsupported(std::string_view target) {
  std::string known = "cpu";
  for (const CudaArch& a : kCudaArchs) absl::StrAppend(&known, ", cuda:", std::string(a.name));
  for (const HipArch& a : kHipArchs) absl::StrAppend(&known, ", hip:", std::string(a.name));
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported target '", std::string(target), "'; supported: ", known));
}

} // namespace

absl::StatusOr<Target> ParseTarget(std::string_view target) {
  Target t;
  if (target == "cpu") {
    t.kind = Target::Kind::kCpu;
    t.arch = "x86_64";
    // The CPU target emulates a block in host memory; it follows CUDA's
    // limits so that a program checked on the CPU also fits a GPU.
    t.shared_bytes_optin = 232448;
    return t;
  }
  if (target.substr(0, 5) == "cuda:") {
    std::string_view arch = target.substr(5);
    for (const CudaArch& a : kCudaArchs) {
      if (a.name != arch) continue;
      t.kind = Target::Kind::kCuda;
      t.arch = std::string(arch);
      t.sm_version = a.sm;
      t.shared_bytes_optin = a.smem_optin;
      return t;
    }
  }
  if (target.substr(0, 4) == "hip:") {
    std::string_view arch = target.substr(4);
    for (const HipArch& a : kHipArchs) {
      if (a.name != arch) continue;
      t.kind = Target::Kind::kHip;
      t.arch = std::string(arch);
      t.warp_size = 64;
      t.shared_bytes_per_block = a.lds_bytes;
      t.shared_bytes_optin = a.lds_bytes;
      t.registers_per_thread = 512;
      return t;
    }
  }
  return Unsupported(target);
}

} // namespace kiln::passes
