// What code generation hands to a toolchain and to whoever launches the
// result: the emitted source and the launch metadata.
//
// Argument convention (both targets): the kernel takes the program's params
// in order (a tensor as a pointer to its first element, a scalar by value),
// then one int32 per dynamic symbol (Program::symbols, in order). A launcher
// builds `void* args[]` where args[i] points at the i-th argument's value,
// exactly as cuLaunchKernel's kernelParams.
//
// CUDA kernels that load tiles with the Tensor Memory Accelerator (Hopper
// TMA) take, after the symbols, one CUtensorMap per LaunchSpec::tensor_maps
// entry, by value (`const __grid_constant__`, 128 bytes, 64-byte aligned):
// the launcher encodes it with the driver's cuTensorMapEncodeTiled for the
// tensor argument it names, as TensorMapSpec says. CPU kernels never take
// them (the CPU runtime builds its own descriptors from the pointers).
//
// A program of several kernels (ir.h: Program::next_kernels) has one entry
// point per kernel, all in one source and one binary, with the same
// arguments: LaunchSpec's own symbol/grid/block/smem/tensor_maps describe
// the first, `next_kernels` the others, and a launcher runs them in that
// order on one stream (each sees everything the earlier ones wrote). Its
// global workspaces (T.alloc_global; LaunchSpec::workspaces) are arguments
// too: after the symbols, one pointer per workspace, to memory the launcher
// allocates for the sequence, zero-filled, and frees after the last kernel
// (TileLang leaves it uninitialized; zeroing makes runs deterministic, and
// programs must not rely on it). The tensor maps come last. A one-kernel
// program without workspaces has empty `next_kernels` and `workspaces`.
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

// One tensor map a CUDA kernel takes (see the argument convention above).
// The launcher encodes, for the tensor argument args[arg] of rank r (1..5)
// with its actual shape (s_0, ..., s_{r-1}), row-major and contiguous:
//   globalAddress   the tensor's device pointer (must be 16-byte aligned)
//   dataType        by element size: 1 byte UINT8, 2 UINT16, 4 UINT32,
//                   8 UINT64 (TMA copies bits; the kernel knows the type)
//   rank            r
//   globalDim       (s_{r-1}, ..., s_0): innermost first
//   globalStrides   bytes of dims 1..r-1 innermost first: stride of dim i
//                   (innermost-first numbering) = s_{r-1}·…·s_{r-i}·size
//   boxDim          `box` reversed (box is outermost first, like shape)
//   elementStrides  all 1
//   interleave      NONE; swizzle: NONE, 32B, 64B or 128B from
//                   swizzle_bytes (0, 32, 64, 128); l2Promotion 128B;
//                   oobFill NONE (out-of-bounds elements read as zero)
// The compiler only emits maps whose strides are multiples of 16 bytes for
// the shapes it was specialized on; the launcher still refuses an
// unaligned pointer or stride with an error naming the tensor.
struct TensorMapSpec {
  // Index into LaunchSpec::args (a tensor), or args.size() + w for
  // workspace w (LaunchSpec::workspaces).
  int arg = 0;
  std::vector<int64_t> box; // elements per dimension, outermost first
  int swizzle_bytes = 0;    // 0, 32, 64 or 128
};

// One kernel of a launch sequence (see above).
struct KernelLaunch {
  std::string symbol = "kiln_kernel";
  std::vector<ir::Expr> grid;               // 3 extents, possibly over symbols
  std::array<int64_t, 3> block = {1, 1, 1}; // threads
  int64_t dynamic_smem_bytes = 0;
  std::vector<TensorMapSpec> tensor_maps; // CUDA only: after args (see above)
};

// A global workspace (T.alloc_global): shape[0] * ... * size(dtype) bytes.
struct WorkspaceSpec {
  std::string name; // the program's (for messages; never bound by a caller)
  ir::DType dtype = ir::DType::kFloat32;
  std::vector<ir::Expr> shape; // over the symbols' and scalars' user names
};

struct LaunchSpec {
  std::string symbol = "kiln_kernel";
  std::vector<ir::Expr> grid;               // 3 extents, possibly over symbols
  std::array<int64_t, 3> block = {1, 1, 1}; // threads
  int64_t dynamic_smem_bytes = 0;
  std::vector<KernelArg> args;
  std::vector<TensorMapSpec> tensor_maps; // CUDA only: after args (see above)
  std::vector<KernelLaunch> next_kernels; // run after the first, in order
  std::vector<WorkspaceSpec> workspaces;  // arguments after the symbols
};

// Every kernel of `spec` in launch order, the first from its own fields.
inline std::vector<KernelLaunch> LaunchSequence(const LaunchSpec& spec) {
  std::vector<KernelLaunch> out;
  out.push_back(
      KernelLaunch{spec.symbol, spec.grid, spec.block, spec.dynamic_smem_bytes, spec.tensor_maps});
  out.insert(out.end(), spec.next_kernels.begin(), spec.next_kernels.end());
  return out;
}

enum class EmitTarget : uint8_t { kCuda, kCpu };

struct EmittedKernel {
  EmitTarget target = EmitTarget::kCuda;
  std::string source; // includes only "kiln/cuda/runtime.h" or "kiln/cpu/runtime.h"
  std::string arch;   // "sm_90" for CUDA, empty for CPU
  LaunchSpec launch;
  // The program asks for fast math (TileLang's pass config
  // tl.enable_fast_math, unless tl.disable_fast_math): CUDA compiles take
  // --use_fast_math whatever the build options say. Always false for CPU.
  bool fast_math = false;
};

} // namespace kiln::codegen
