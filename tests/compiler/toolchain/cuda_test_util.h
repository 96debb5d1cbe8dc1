// Shared fixtures for the CUDA toolchain tests: small real kernels and the
// check for an installed toolkit (tests skip cleanly without one).
#pragma once

#include <cstdlib>
#include <string>

#include <unistd.h>

#include "compiler/toolchain/cuda_compile.h"

namespace kiln::toolchain::testing {

inline bool CudaToolkitPresent() {
  const char* home = getenv("CUDA_HOME");
  return access("/usr/local/cuda", F_OK) == 0 || (home != nullptr && access(home, F_OK) == 0);
}

inline constexpr char kNoToolkit[] =
    "CUDA toolkit not installed (/usr/local/cuda missing, CUDA_HOME unset)";

inline constexpr char kVectorAdd[] = R"(
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";

// The vector-add kernel as a compile request for `arch`.
inline CudaCompileInput VectorAdd(const std::string& arch) {
  CudaCompileInput in;
  in.source = kVectorAdd;
  in.program_name = "vadd.cu";
  in.arch = arch;
  return in;
}

// 256 floats of static shared memory, sized by an in-memory header.
inline constexpr char kTileHeader[] = R"(
#pragma once
constexpr int kTile = 256;
)";
inline constexpr char kSharedReverse[] = R"(#include "tile.h"
extern "C" __global__ void reverse(const float* in, float* out) {
  __shared__ float tile[kTile];
  tile[threadIdx.x] = in[blockIdx.x * kTile + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * kTile + threadIdx.x] = tile[kTile - 1 - threadIdx.x];
}
)";

// Line 3 lacks a semicolon.
inline constexpr char kSyntaxError[] = R"(extern "C" __global__ void broken(float* p) {
  float x = p[0];
  p[1] = x * 2
}
)";

inline bool IsElf(const std::string& bytes) {
  return bytes.rfind("\x7f"
                     "ELF",
                     0) == 0;
}

} // namespace kiln::toolchain::testing
