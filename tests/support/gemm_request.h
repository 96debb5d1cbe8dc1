// Test support: a Compile request for examples/gemm/gemm.py on the CPU target
// at its test size, with M bound to `m` (each M is another program, another
// key: about a second of host compiler each). Header-only.
#pragma once

#include <cstdint>

#include "kiln/v1/service.pb.h"
#include "tests/support/example_loader.h"

namespace kiln::testing {

inline kiln::v1::CompileRequest GemmCpuRequest(int64_t m) {
  ExampleFile ex = LoadExampleFile(KILN_SOURCE_DIR, "examples/gemm/gemm.py");
  kiln::v1::CompileRequest req;
  req.mutable_program()->set_tilelang_source(ex.source);
  req.mutable_program()->set_file_name(ex.rel_path);
  for (const auto& [name, value] : ex.test_bind) {
    kiln::v1::BindingValue v;
    if (value.kind == frontend::BindingValue::Kind::kInt) {
      v.set_int_value(name == "M" ? m : value.ival);
    } else {
      v.set_string_value(value.sval);
    }
    (*req.mutable_program()->mutable_bindings())[name] = v;
  }
  req.set_target("cpu");
  return req;
}

} // namespace kiln::testing
