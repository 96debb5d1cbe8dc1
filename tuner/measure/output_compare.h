// Output validation for the worker's Validate request: a kernel's outputs
// against reference bytes, element by element, with the semantics of
// kiln-run --check (compiler/tools/reference_check.h) so that a config the
// tuner accepts is one kiln-run would accept:
//
//   |got - want| <= atol + rtol * |want|   for finite pairs;
//   NaN matches NaN and an infinity the same infinity, position by position;
//   integers and bool compare with the same formula (exact under the
//   defaults).
//
// Tolerances: rtol == atol == 0 in the request selects the per-dtype
// defaults (float16 1e-2, bfloat16 3e-2, float32/float64 1e-3, float8_e4m3
// 1.25e-1, float8_e5m2 2.5e-1, integers and bool exact), whose atol shrinks
// with the output's scale (atol * min(1, max |want|)) as in kiln-run; any
// other pair is used as given.
//
// Thread-safety: pure functions (CompareOutput starts its own threads).
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "compiler/ir/ir.h"
#include "compiler/tools/npy.h"
#include "kiln/v1/worker.pb.h"

namespace kiln::measure {

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

// The default tolerance of `dtype` (before the scale adjustment).
Tolerance DefaultTolerance(ir::DType dtype);

// Compares output `name` (`got`) with `want`, the reference's raw bytes in
// got's dtype and C order, and folds the result into `*response`: max errors
// are maxima over all outputs so far, mismatches a sum, first_mismatch the
// first bad element seen ("C[12, 7]: got 1.5 want 1.25"), ok false once any
// element is bad. InvalidArgument (response untouched) when `want` has the
// wrong size. Large outputs are split over up to `threads` threads (0: one
// per core, at most 16); the result does not depend on the split.
absl::Status CompareOutput(std::string_view name, const tools::NpyArray& got, std::string_view want,
                           double rtol, double atol, kiln::v1::ValidateResponse* response,
                           int threads = 0);

} // namespace kiln::measure
