#include "clients/cpp/remote/tune_progress.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::cli {

std::string ConfigLine(const google::protobuf::Map<std::string, kiln::v1::BindingValue>& config) {
  std::map<std::string, std::string> sorted;
  for (const auto& [k, v] : config) {
    switch (v.value_case()) {
    case kiln::v1::BindingValue::kIntValue:
      sorted[k] = std::to_string(v.int_value());
      break;
    case kiln::v1::BindingValue::kFloatValue:
      sorted[k] = absl::StrCat(v.float_value());
      break;
    case kiln::v1::BindingValue::kBoolValue:
      sorted[k] = v.bool_value() ? "True" : "False";
      break;
    default:
      sorted[k] = v.string_value();
    }
  }
  std::string out;
  for (const auto& [k, v] : sorted) absl::StrAppend(&out, out.empty() ? "" : " ", k, "=", v);
  return out;
}

void TuneProgressPrinter::Show(const kiln::v1::TuneProgress& p) {
  if (quiet_ || p.candidates_total() == 0) return;
  const int done = p.candidates_measured() + p.candidates_failed();
  if (done == last_done_ && (!bar_ || p.candidates_compiled() == last_compiled_)) return;
  last_done_ = done;
  last_compiled_ = p.candidates_compiled();
  const bool best = p.has_best_so_far() && p.best_so_far().median_us() > 0;
  if (!bar_) {
    out_ << absl::StrFormat("[%6.1fs] %d/%d compiled, %d measured, %d failed", p.elapsed_seconds(),
                            p.candidates_compiled(), p.candidates_total(), p.candidates_measured(),
                            p.candidates_failed());
    if (best) {
      out_ << absl::StrFormat(", best %.2f us (%s)", p.best_so_far().median_us(),
                              ConfigLine(p.best_so_far().config()));
    }
    out_ << "\n";
    return;
  }
  constexpr int kWidth = 30;
  const int total = std::max(1, p.candidates_total());
  const int filled = std::min(kWidth, done * kWidth / total);
  std::string line =
      absl::StrCat("\r[", std::string(filled, '#'), std::string(kWidth - filled, '.'), "] ");
  absl::StrAppend(&line, absl::StrFormat("%3d/%d measured, %d compiled, %d failed", done,
                                         p.candidates_total(), p.candidates_compiled(),
                                         p.candidates_failed()));
  if (best) absl::StrAppend(&line, absl::StrFormat(", best %.2f us", p.best_so_far().median_us()));
  absl::StrAppend(&line, absl::StrFormat("  %.1fs\x1b[K", p.elapsed_seconds()));
  out_ << line << std::flush;
  drawn_ = true;
}

void TuneProgressPrinter::Finish() {
  if (drawn_) out_ << "\n";
  drawn_ = false;
}

} // namespace kiln::cli
