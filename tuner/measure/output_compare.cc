#include "tuner/measure/output_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

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
                           kiln::v1::ValidateResponse* response, int threads) {
  if (want_bytes.size() != got.data.size()) {
    return absl::InvalidArgumentError(absl::StrCat("reference for output '", std::string(name),
                                                   "' holds ", want_bytes.size(),
                                                   " bytes, the output ", got.data.size()));
  }
  const ir::DType dtype = got.dtype;
  const char* const g_data = got.data.data();
  const char* const w_data = want_bytes.data();
  const int64_t n = got.num_elements();

  // Chunks of at least kMinChunk elements, one thread each.
  constexpr int64_t kMinChunk = int64_t{1} << 16;
  if (threads <= 0) {
    threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1U, 16U));
  }
  const int64_t chunks = std::clamp<int64_t>(n / kMinChunk, 1, threads);
  auto parallel = [chunks,
                   n](const std::function<void(int64_t c, int64_t begin, int64_t end)>& fn) {
    std::vector<std::thread> pool;
    for (int64_t c = 1; c < chunks; ++c) {
      pool.emplace_back(fn, c, n * c / chunks, n * (c + 1) / chunks);
    }
    fn(0, 0, n / chunks);
    for (std::thread& t : pool) t.join();
  };

  struct Part {
    double max_abs = 0, max_rel = 0;
    int64_t mismatches = 0;
    int64_t first_bad = -1;
  };
  std::vector<Part> parts(static_cast<size_t>(chunks));
  // One reader per dtype, so the loops below decode without a switch each.
  WithElementReader(dtype, [&](auto read) {
    Tolerance tol{rtol, atol};
    if (rtol == 0 && atol == 0) {
      tol = DefaultTolerance(dtype);
      // The absolute slack shrinks with the output's scale, so outputs far
      // below 1 (softmax probabilities) are held to their rtol too.
      std::vector<double> peaks(static_cast<size_t>(chunks), 0.0);
      parallel([&](int64_t c, int64_t begin, int64_t end) {
        double peak = 0;
        for (int64_t i = begin; i < end; ++i) {
          const double w = read(w_data, i);
          if (std::isfinite(w)) peak = std::max(peak, std::fabs(w));
        }
        peaks[static_cast<size_t>(c)] = peak;
      });
      tol.atol *= std::min(1.0, *std::max_element(peaks.begin(), peaks.end()));
    }
    parallel([&](int64_t c, int64_t begin, int64_t end) {
      // Locals, not the Part: the byte reads may alias it, which would keep
      // the compiler storing and reloading it every element.
      const double atol_c = tol.atol, rtol_c = tol.rtol;
      double max_abs_c = 0, max_rel_c = 0;
      int64_t mismatches_c = 0, first_bad_c = -1;
      for (int64_t i = begin; i < end; ++i) {
        const double g = read(g_data, i);
        const double w = read(w_data, i);
        bool bad = false;
        if (std::isfinite(g) && std::isfinite(w)) {
          const double diff = std::fabs(g - w);
          max_abs_c = std::max(max_abs_c, diff);
          // A division only where diff / |w| may pass max_rel (the slack
          // covers the rounding of the product).
          if (w != 0 && diff * (1 + 1e-9) >= max_rel_c * std::fabs(w)) {
            max_rel_c = std::max(max_rel_c, diff / std::fabs(w));
          }
          bad = diff > atol_c + rtol_c * std::fabs(w);
        } else {
          bad = !((std::isnan(g) && std::isnan(w)) || g == w);
        }
        if (!bad) continue;
        if (mismatches_c++ == 0) first_bad_c = i;
      }
      parts[static_cast<size_t>(c)] = {max_abs_c, max_rel_c, mismatches_c, first_bad_c};
    });
  });

  double max_abs = response->max_abs_error();
  double max_rel = response->max_rel_error();
  int64_t mismatches = 0;
  for (const Part& part : parts) { // in element order: the first bad one is the lowest
    max_abs = std::max(max_abs, part.max_abs);
    max_rel = std::max(max_rel, part.max_rel);
    mismatches += part.mismatches;
    if (part.first_bad >= 0 && response->first_mismatch().empty()) {
      const int64_t i = part.first_bad;
      response->set_first_mismatch(
          absl::StrCat(std::string(name), FormatIndex(got.shape, i), ": got ",
                       FormatValue(dtype, GetElement(dtype, g_data, i)), " want ",
                       FormatValue(dtype, GetElement(dtype, w_data, i))));
    }
  }
  response->set_max_abs_error(max_abs);
  response->set_max_rel_error(max_rel);
  response->set_mismatches(response->mismatches() + mismatches);
  response->set_ok(response->mismatches() == 0);
  return absl::OkStatus();
}

} // namespace kiln::measure
