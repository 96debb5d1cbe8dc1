// Progress of a Tune stream on stderr: a bar redrawn in place on a terminal
// ("\r[#######.....]  7/12 measured, 0 failed, best 349.30 us  12.3s"), else
// one plain line per change of the measured count
// ("[  12.3s] 12/12 compiled, 7 measured, 0 failed, best 349.30 us (block_K=64 ...)").
// Nothing with --json. Thread-compatible.
#pragma once

#include <ostream>
#include <string>

#include "google/protobuf/map.h"
#include "kiln/v1/service.pb.h"

namespace kiln::cli {

class TuneProgressPrinter {
 public:
  TuneProgressPrinter(std::ostream& out, bool bar, bool quiet)
      : out_(out), bar_(bar), quiet_(quiet) {}
  void Show(const kiln::v1::TuneProgress& p);
  // Ends the bar's line (if one was drawn).
  void Finish();

 private:
  std::ostream& out_;
  const bool bar_;
  const bool quiet_;
  int last_done_ = -1;
  int last_compiled_ = -1;
  bool drawn_ = false;
};

// "block_K=64 block_M=128 ..." (sorted by name).
std::string ConfigLine(const google::protobuf::Map<std::string, kiln::v1::BindingValue>& config);

} // namespace kiln::cli
