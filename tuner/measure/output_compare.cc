#include "tuner/measure/output_compare.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler/ir/dtype.h"
#include "tuner/measure/tensor_data.h"

namespace kiln::measure {
namespace {

std::string FormatValue(ir::DType dtype, double v) {
  if (ir::IsBool(dtype)) return v != 0 ? "true" : "false";
  if (ir::IsInteger(dtype)) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.9g", v);
}

} // namespace

Tolerance DefaultTolerance(ir::DType dtype) {
  switch (dtype) {
  case ir::DType::kFloat16:
    return {1e-2, 1e-2};
  case ir::DType::kBFloat16:
    return {3e-2, 3e-2};
  case ir::DType::kFloat32:
  case ir::DType::kFloat64:
    return {1e-3, 1e-3};
  case ir::DType::kFloat8E4M3:
    return {1.25e-1, 1.25e-1};
  case ir::DType::kFloat8E5M2:
    return {2.5e-1, 2.5e-1};
  default:
    return {0, 0};
  }
}

absl::Status CompareOutput(std::string_view name, const tools::NpyArray& got,
                           std::string_view want_bytes, double rtol, double atol,
                           kiln::v1::ValidateResponse* response) {
  if (want_bytes.size() != got.data.size()) {
    return absl::InvalidArgumentError(absl::StrCat("reference for output '", std::string(name),
                                                   "' holds ", want_bytes.size(),
                                                   " bytes, the output ", got.data.size()));
  }
  tools::NpyArray want;
  want.dtype = got.dtype;
  want.shape = got.shape;
  want.data.assign(want_bytes.data(), want_bytes.size());
  const int64_t n = got.num_elements();

  Tolerance tol{rtol, atol};
  if (rtol == 0 && atol == 0) {
    tol = DefaultTolerance(got.dtype);
    // The absolute slack shrinks with the output's scale, so outputs far
    // below 1 (softmax probabilities) are held to their rtol too.
    double peak = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double w = GetElement(want, i);
      if (std::isfinite(w)) peak = std::max(peak, std::fabs(w));
    }
    tol.atol *= std::min(1.0, peak);
  }

  double max_abs = response->max_abs_error();
  double max_rel = response->max_rel_error();
  int64_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double g = GetElement(got, i);
    const double w = GetElement(want, i);
    bool bad = false;
    if (std::isfinite(g) && std::isfinite(w)) {
      const double diff = std::fabs(g - w);
      max_abs = std::max(max_abs, diff);
      if (w != 0) max_rel = std::max(max_rel, diff / std::fabs(w));
      bad = diff > tol.atol + tol.rtol * std::fabs(w);
    } else {
      bad = !((std::isnan(g) && std::isnan(w)) || g == w);
    }
    if (!bad) continue;
    ++mismatches;
    if (response->first_mismatch().empty()) {
      response->set_first_mismatch(absl::StrCat(std::string(name), FormatIndex(got.shape, i),
                                                ": got ", FormatValue(got.dtype, g), " want ",
                                                FormatValue(got.dtype, w)));
    }
  }
  response->set_max_abs_error(max_abs);
  response->set_max_rel_error(max_rel);
  response->set_mismatches(response->mismatches() + mismatches);
  response->set_ok(response->mismatches() == 0);
  return absl::OkStatus();
}

} // namespace kiln::measure
