// Compiles an emitted CUDA kernel (compiler/codegen/kernel_spec.h) to a
// cubin and/or PTX with NVRTC (default; through NvrtcCompile, so in kilnd's
// helper processes where they are installed) or nvcc as a subprocess,
// handing over Kiln's embedded runtime headers, so no file on disk is
// needed. The CPU target goes through host_cc.h instead.
// Thread-safe (NVRTC programs are per call).
#pragma once

#include "absl/status/statusor.h"
#include "compiler/codegen/kernel_spec.h"
#include "compiler/toolchain/cuda_compile.h"

namespace kiln::toolchain {

struct KernelCompileOptions {
  bool use_nvcc = false;
  bool want_cubin = true;
  bool want_ptx = false;
  bool fast_math = false; // or-ed with the kernel's own (EmittedKernel::fast_math)
  bool line_info = false;
  int opt_level = 3; // ptxas, 0..3
};

// InvalidArgument for a CPU kernel; the toolchain's errors otherwise (with
// the compiler log, which for Kiln-generated code means a Kiln bug).
absl::StatusOr<CompileOutput> CompileCudaKernel(const codegen::EmittedKernel& kernel,
                                                const KernelCompileOptions& options = {});

} // namespace kiln::toolchain
