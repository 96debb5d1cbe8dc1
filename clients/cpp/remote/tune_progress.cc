#include "clients/cpp/remote/tune_progress.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <utility>

#include <sys/ioctl.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
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

int TerminalColumns(int fd) {
  winsize w{};
  if (ioctl(fd, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  int columns = 0;
  if (const char* env = std::getenv("COLUMNS");
      env != nullptr && absl::SimpleAtoi(env, &columns) && columns > 0) {
    return columns;
  }
  return 80;
}

std::string ProgressBarLine(const kiln::v1::TuneProgress& p, int columns) {
  const int room = columns - 1; // the last column would wrap the cursor on some terminals
  if (room <= 0) return "";
  const int done = p.candidates_measured() + p.candidates_failed();
  const int total = p.candidates_total();
  const bool best = p.has_best_so_far() && p.best_so_far().median_us() > 0;
  const std::string best_text =
      best ? absl::StrFormat(", best %.2f us", p.best_so_far().median_us()) : "";
  const std::string elapsed = absl::StrFormat("  %.1fs", p.elapsed_seconds());
  // The text after the bar, most detail first.
  const std::string texts[] = {
      absl::StrFormat("%3d/%d measured, %d compiled, %d failed%s%s", done, total,
                      p.candidates_compiled(), p.candidates_failed(), best_text, elapsed),
      absl::StrFormat("%d/%d measured, %d failed%s%s", done, total, p.candidates_failed(),
                      best_text, elapsed),
      absl::StrFormat("%d/%d measured%s", done, total, best_text),
      absl::StrFormat("%d/%d%s", done, total, best_text),
      absl::StrFormat("%d/%d", done, total),
  };
  constexpr int kMaxBar = 30, kMinBar = 10;
  auto bar = [&](int width) {
    const int filled = std::min(width, done * width / std::max(1, total));
    return absl::StrCat("[", std::string(static_cast<size_t>(filled), '#'),
                        std::string(static_cast<size_t>(width - filled), '.'), "] ");
  };
  for (const std::string& text : texts) {
    const int width = std::min(kMaxBar, room - 3 - static_cast<int>(text.size()));
    if (width >= kMinBar) return bar(width) + text;
  }
  for (const std::string& text : texts) {
    if (static_cast<int>(text.size()) <= room) return text;
  }
  return texts[std::size(texts) - 1].substr(0, static_cast<size_t>(room));
}

TuneProgressPrinter::TuneProgressPrinter(std::ostream& out, bool bar, bool quiet,
                                         std::function<int()> columns)
    : out_(out), bar_(bar), quiet_(quiet),
      columns_(columns ? std::move(columns) : [] { return TerminalColumns(STDERR_FILENO); }) {}

void TuneProgressPrinter::Show(const kiln::v1::TuneProgress& p) {
  if (quiet_ || p.candidates_total() == 0) return;
  const int done = p.candidates_measured() + p.candidates_failed();
  if (done == last_done_ && (!bar_ || p.candidates_compiled() == last_compiled_)) return;
  last_done_ = done;
  last_compiled_ = p.candidates_compiled();
  if (!bar_) {
    out_ << absl::StrFormat("[%6.1fs] %d/%d compiled, %d measured, %d failed", p.elapsed_seconds(),
                            p.candidates_compiled(), p.candidates_total(), p.candidates_measured(),
                            p.candidates_failed());
    if (p.has_best_so_far() && p.best_so_far().median_us() > 0) {
      out_ << absl::StrFormat(", best %.2f us (%s)", p.best_so_far().median_us(),
                              ConfigLine(p.best_so_far().config()));
    }
    out_ << "\n";
    return;
  }
  // "\x1b[K" clears what a longer earlier line left to the right.
  out_ << "\r" << ProgressBarLine(p, columns_()) << "\x1b[K" << std::flush;
  drawn_ = true;
}

void TuneProgressPrinter::Finish() {
  if (drawn_) out_ << "\n";
  drawn_ = false;
}

} // namespace kiln::cli
