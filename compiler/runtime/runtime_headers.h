// The device-side runtime headers, embedded into the binary at build time.
//
// Generated code includes "kiln/cuda/runtime.h" (CUDA, compiled by NVRTC) or
// "kiln/cpu/runtime.h" (host C++ for the CPU target). The toolchain hands
// these name/content pairs to NVRTC as in-memory headers, or writes them under
// an include directory for a subprocess compiler, so no toolkit or source
// tree files are needed at run time. Names are "kiln/<target>/<file>.h",
// exactly the names the headers use to include each other; contents are the
// files' bytes, unchanged.
//
// Thread-safety: the lists are built once on first use (thread-safe static
// initialization) and never change; the views point to static storage and
// stay valid for the life of the process.
#ifndef KILN_COMPILER_RUNTIME_RUNTIME_HEADERS_H_
#define KILN_COMPILER_RUNTIME_RUNTIME_HEADERS_H_

#include <string_view>
#include <vector>

namespace kiln::runtime {

struct EmbeddedHeader {
  std::string_view name;
  std::string_view content;
};

// The CUDA runtime headers (kiln/cuda/*.h), sorted by name.
const std::vector<EmbeddedHeader>& CudaRuntimeHeaders();

// The CPU runtime headers (kiln/cpu/*.h), sorted by name.
const std::vector<EmbeddedHeader>& CpuRuntimeHeaders();

// The header of either list named `name`, or nullptr if there is none.
const EmbeddedHeader* FindRuntimeHeader(std::string_view name);

} // namespace kiln::runtime

#endif // KILN_COMPILER_RUNTIME_RUNTIME_HEADERS_H_
