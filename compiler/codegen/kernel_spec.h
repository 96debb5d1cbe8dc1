// What code generation hands to a toolchain and to whoever launches the
// result: the emitted source and the launch metadata.
//
// Argument convention (both targets): the kernel takes the program's params
// in order (a tensor as a pointer to its first element, a scalar by value),
// then one int32 per dynamic symbol (Program::symbols, in order). A launcher
// builds `void* args[]` where args[i] points at the i-th argument's value,
// exactly as cuLaunchKernel's kernelParams.
//
// CUDA: `extern "C" __global__ void <symbol>(...)`, launched with `grid`,
// `block` and `dynamic_smem_bytes` of dynamic shared memory (callers set
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES when it exceeds 48 KiB).
// CPU: `extern "C" int <symbol>(void** args, const int64_t* grid3,
// char* error, int error_len)` runs the whole grid and returns 0, or
// non-zero with a NUL-terminated message in `error` (a barrier reached by
// only some threads of a block, for example).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::codegen {

// Names are the user's (ir::UserName): what a launcher binds. The IR's own
// names (`out_` for a parameter the user called `out`) stay inside the
// compiler; extents in `shape` and LaunchSpec::grid are over the symbols'
// and scalar parameters' user names too.
struct KernelArg {
  std::string name;
  std::string ir_name; // the name in the program, to relate the argument to it
  ir::DType dtype = ir::DType::kFloat32;
  bool is_scalar = false; // a by-value scalar (params with is_scalar, symbols)
  bool is_symbol = false; // a dynamic shape symbol (int32)
  bool is_output = false;
  std::vector<ir::Expr> shape; // tensors: extents, possibly over symbols
};

struct LaunchSpec {
  std::string symbol = "kiln_kernel";
  std::vector<ir::Expr> grid;               // 3 extents, possibly over symbols
  std::array<int64_t, 3> block = {1, 1, 1}; // threads
  int64_t dynamic_smem_bytes = 0;
  std::vector<KernelArg> args;
};

enum class EmitTarget : uint8_t { kCuda, kCpu };

struct EmittedKernel {
  EmitTarget target = EmitTarget::kCuda;
  std::string source; // includes only "kiln/cuda/runtime.h" or "kiln/cpu/runtime.h"
  std::string arch;   // "sm_90" for CUDA, empty for CPU
  LaunchSpec launch;
};

} // namespace kiln::codegen
