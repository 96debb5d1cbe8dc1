// The C++ printer shared by the CUDA and CPU entry points: prints the body
// of a lowered kernel (thread IR) as C++ statements over the runtime's
// kiln::rt API, which both runtimes implement with the same names.
//
// Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"

namespace kiln::codegen {

struct EmittedBody {
  std::string params;      // "kiln::rt::half_t* __restrict__ A, int M"
  std::string param_names; // "A, M"
  std::string unpack_args; // CPU: "auto* A = *static_cast<T**>(kiln_args[0]);\n..."
  std::string body;        // block variables, then the statements
  int64_t smem_bytes = 0;  // dynamic shared memory
  bool uses_wgmma = false; // calls the Hopper wgmma intrinsics (their own header)
};

// The C++ spelling of an IR dtype ("float", "kiln::rt::half_t", ...).
std::string CType(ir::DType t);

// A C++-safe spelling of an IR name (keywords and reserved names get a
// trailing '_').
std::string CName(const std::string& name);

absl::StatusOr<EmittedBody> EmitBody(const ir::Program& lowered);

} // namespace kiln::codegen
