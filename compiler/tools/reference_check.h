// Checks a kernel's outputs against the NumPy `ref_program` of its tile
// program (docs/examples.md), by running python3 on an embedded script.
//
// The script stubs the `tilelang` and `tvm` packages (any submodule, any
// attribute; a stub called with one function or class returns it unchanged,
// so `@tilelang.jit`, `@tilelang.jit(out_idx=...)` and `@T.prim_func` leave
// their functions as they are, and defaults such as `dtype=T.float16` are
// harmless), imports the program file, calls ref_program(*inputs) and
// compares each returned array with the kernel's output of the same
// position. bfloat16 and float8 arrays, which .npy holds as raw bits, are
// decoded to float32 before ref_program sees them and before comparing.
//
// Tolerances (|kernel - ref| <= atol + rtol * |ref| for finite pairs):
//   float16 rtol = atol = 1e-2; bfloat16 3e-2; float32 and float64 1e-3;
//   float8_e4m3 1.25e-1; float8_e5m2 2.5e-1; integers and bool exact.
// NaN and infinity must match position by position (NaN with NaN, +inf with
// +inf). Per output the report gives the max abs and max rel error, the
// number of mismatches and the first mismatching index with both values.
//
// Python: $KILN_PYTHON if set (then the only candidate), else the first of
// "python3" in PATH and /usr/bin/python3 that can import NumPy. It runs as a
// util::RunSubprocess child with a timeout and a memory limit, with
// PYTHONDONTWRITEBYTECODE set so no __pycache__ appears beside the program.
//
// Thread-safety: independent calls are safe (each uses its own directory).
//
// Errors: FailedPrecondition when no Python with NumPy is found;
// InvalidArgument when importing the program or running ref_program raises
// (the message is Python's traceback, verbatim) or when ref_program returns
// a different number of arrays than there are outputs; DeadlineExceeded /
// ResourceExhausted past the limits; Internal for I/O failures.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/tools/npy.h"

namespace kiln::tools {

struct NamedArray {
  std::string name; // a parameter name (an identifier)
  NpyArray array;
};

struct ReferenceCheckRequest {
  std::string program_file;        // the tile program (.py)
  std::vector<NamedArray> inputs;  // ref_program's arguments, in order
  std::vector<NamedArray> outputs; // the kernel's outputs, in ref_program's result order
  std::chrono::milliseconds timeout{600'000};
  int64_t memory_limit_bytes = int64_t{32} << 30;
};

struct ReferenceCheckResult {
  bool passed = false;
  // One line per output, as described above.
  std::string report;
  // The interpreter that ran the script.
  std::string python;
};

absl::StatusOr<ReferenceCheckResult> RunReferenceCheck(const ReferenceCheckRequest& request);

// The number of positional parameters of the top-level `def ref_program` in
// `source` (a tile program). NotFound when there is none; InvalidArgument
// when it takes *args or the file does not parse.
absl::StatusOr<int> RefProgramArity(std::string_view source, std::string_view file_name);

// The embedded Python script (for tests and for reading).
std::string_view ReferenceCheckScript();

} // namespace kiln::tools
