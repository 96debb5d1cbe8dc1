#include "compiler/passes/target.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::passes {
namespace {

struct CudaArch {
  std::string_view name;
  int sm;
  int64_t smem_optin; // bytes per block with opt-in (CUDA programming guide, table of limits)
};

// sm_80 (A100): 163 KB; sm_86/sm_89 (consumer Ampere/Ada): 99 KB; sm_90 (H100/H200): 227 KB.
// Exactly the architectures the toolchain builds (toolchain::SupportedCudaArchs;
// tests/compiler/driver/compile_driver_test.cc holds the two lists equal).
constexpr std::array<CudaArch, 5> kCudaArchs = {{
    {"sm_80", 80, 166912},
    {"sm_86", 86, 101376},
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
  return absl::InvalidArgumentError(absl::StrCat("unsupported target '", std::string(target),
                                                 "'; supported: ", SupportedTargetList()));
}

} // namespace

std::vector<std::string> SupportedTargets() {
  std::vector<std::string> out = {"cpu"};
  for (const CudaArch& a : kCudaArchs) out.push_back(absl::StrCat("cuda:", std::string(a.name)));
  return out;
}

std::string SupportedTargetList() { return absl::StrJoin(SupportedTargets(), ", "); }

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
