// The C++ printer shared by the CUDA and CPU entry points: prints the body
// of a lowered kernel (thread IR) as C++ statements over the runtime's
// kiln::rt API, which both runtimes implement with the same names.
//
// Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"
#include "compiler/ir/tma_attr.h"

namespace kiln::codegen {

struct EmittedBody {
  std::string params;          // "kiln::rt::half_t* __restrict__ A, int M"
  std::string param_names;     // "A, M"
  std::string unpack_args;     // CPU: "auto* A = *static_cast<T**>(kiln_args[0]);\n..."
  std::string body;            // block variables, then the statements
  int64_t smem_bytes = 0;      // dynamic shared memory
  bool uses_wgmma = false;     // calls the Hopper wgmma intrinsics (their own header)
  bool uses_wgmma_rs = false;  // calls wgmma's register form (a header of its own too)
  bool uses_wgmma_fp8 = false; // calls an fp8 wgmma, wgmma_m64n*k32_* (kiln/cuda/wgmma_fp8.h)
  bool uses_tma = false;       // calls mbarrier/TMA/named-barrier intrinsics (kiln/cuda/tma.h)
  int64_t local_bytes = 0;     // the thread's local arrays (fragments), all of them together
  // Tensor maps (ir/tma_attr.h), in index order. CUDA: `tma_params` declares
  // them as kernel arguments after the others (", const __grid_constant__
  // kiln::rt::TmaDesc kiln_tmap_0, ..."); CPU: `tma_locals` builds each
  // from its tensor's pointer and shape at the top of the body.
  std::vector<ir::TmaMapAttr> tma_maps;
  std::vector<int> tma_map_args; // index of each map's tensor among the params
  std::string tma_params;
  std::string tma_locals;
};

// The C++ spelling of an IR dtype ("float", "kiln::rt::half_t", ...).
std::string CType(ir::DType t);

// A C++-safe spelling of an IR name (keywords and reserved names get a
// trailing '_').
std::string CName(const std::string& name);

absl::StatusOr<EmittedBody> EmitBody(const ir::Program& lowered);

} // namespace kiln::codegen
