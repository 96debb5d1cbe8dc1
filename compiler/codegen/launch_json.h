// The launch metadata of an emitted kernel as JSON, for tools and scripts
// outside C++ (kiln-opt --launch-json, the GPU test and benchmark scripts):
//   {"symbol": "kiln_kernel", "target": "cuda", "arch": "sm_90",
//    "grid": [3, 2, 1], "block": [128, 1, 1], "dynamic_smem_bytes": 12288,
//    "args": [{"name": "A", "dtype": "float16", "shape": [100, 40],
//              "scalar": false, "symbol": false, "output": false}, ...],
//    "tensor_maps": [{"arg": 0, "name": "A", "box": [128, 64],
//                     "swizzle_bytes": 128}, ...]}
// "tensor_maps" appears only when the kernel takes tensor maps (CUDA TMA;
// kernel_spec.h says how a launcher encodes them, in this order, after the
// args). A program of several kernels or with global workspaces adds
//    "workspaces": [{"name": "glse", "dtype": "float16", "shape": [4, 8]}, ...],
//    "next_kernels": [{"symbol": "kiln_kernel_1", "grid": [...], "block": [...],
//                      "dynamic_smem_bytes": 0, "tensor_maps": [...]}, ...]
// (each only when non-empty): the workspaces are arguments after the
// symbols, and the next kernels run after the first, in order
// (kernel_spec.h).
// Extents that depend on unbound symbols are strings in the IR's text
// syntax ("(M + 63) // 64"); constant ones are numbers. Names are the
// user's (kernel_spec.h), so a symbol may be called `max` or `in`: a name
// followed by `(` is a function, any other name a symbol.
// Thread-safe (pure function).
#pragma once

#include <string>

#include "compiler/codegen/kernel_spec.h"

namespace kiln::codegen {

std::string LaunchJson(const EmittedKernel& kernel);

} // namespace kiln::codegen
