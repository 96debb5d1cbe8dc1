// Progress of a Tune stream on stderr: a bar redrawn in place on a terminal
// ("\r[#######.....]  7/12 measured, 0 failed, best 349.30 us  12.3s"), else
// one plain line per change of the measured count
// ("[  12.3s] 12/12 compiled, 7 measured, 0 failed, best 349.30 us (block_K=64 ...)").
// The bar's line always fits the terminal's width, read at each redraw (a
// line that wrapped could not be redrawn in place and would leave stacked
// copies): the bar narrows, then details go, then the bar. Nothing with
// --json. Thread-compatible.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "google/protobuf/map.h"
#include "kiln/v1/service.pb.h"

namespace kiln::cli {

// The width of the terminal on `fd` (TIOCGWINSZ), else $COLUMNS, else 80.
int TerminalColumns(int fd);

// The bar's text for `p` (no "\r", no escape codes): always shorter than
// `columns`, so that the cursor stays on the line; "" for columns <= 1.
std::string ProgressBarLine(const kiln::v1::TuneProgress& p, int columns);

class TuneProgressPrinter {
 public:
  // `columns` answers the terminal's width at each redraw of the bar
  // (default: TerminalColumns(STDERR_FILENO)).
  TuneProgressPrinter(std::ostream& out, bool bar, bool quiet,
                      std::function<int()> columns = nullptr);
  void Show(const kiln::v1::TuneProgress& p);
  // Ends the bar's line (if one was drawn).
  void Finish();

 private:
  std::ostream& out_;
  const bool bar_;
  const bool quiet_;
  const std::function<int()> columns_;
  int last_done_ = -1;
  int last_compiled_ = -1;
  bool drawn_ = false;
};

// "block_K=64 block_M=128 ..." (sorted by name).
std::string ConfigLine(const google::protobuf::Map<std::string, kiln::v1::BindingValue>& config);

} // namespace kiln::cli
