#include "compiler/toolchain/kernel_compile.h"

#include <string>

#include "compiler/runtime/runtime_headers.h"
#include "compiler/toolchain/nvcc.h"
#include "compiler/toolchain/nvrtc.h"

namespace kiln::toolchain {

absl::StatusOr<CompileOutput> CompileCudaKernel(const codegen::EmittedKernel& kernel,
                                                const KernelCompileOptions& options) {
  if (kernel.target != codegen::EmitTarget::kCuda) {
    return absl::InvalidArgumentError("CompileCudaKernel: the kernel was emitted for the CPU");
  }
  CudaCompileInput in;
  in.source = kernel.source;
  in.program_name = "kiln_kernel.cu";
  in.arch = kernel.arch;
  in.want_cubin = options.want_cubin;
  in.want_ptx = options.want_ptx;
  in.fast_math = options.fast_math || kernel.fast_math;
  in.line_info = options.line_info;
  in.opt_level = options.opt_level;
  for (const runtime::EmbeddedHeader& h : runtime::CudaRuntimeHeaders()) {
    in.headers.emplace(std::string(h.name), std::string(h.content));
  }
  if (options.use_nvcc) return NvccCompile(in);
  return NvrtcCompile(in);
}

} // namespace kiln::toolchain
