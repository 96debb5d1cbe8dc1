#include "compiler/runtime/runtime_headers.h"

namespace kiln::runtime {

const EmbeddedHeader* FindRuntimeHeader(std::string_view name) {
  for (const auto* list : {&CudaRuntimeHeaders(), &CpuRuntimeHeaders()}) {
    for (const EmbeddedHeader& h : *list) {
      if (h.name == name) return &h;
    }
  }
  return nullptr;
}

} // namespace kiln::runtime
