// A history plot of one kernel as a standalone SVG (hand-written, no
// scripts or external resources): x = labels oldest to newest, y = latency
// in microseconds; each recorded run is a small grey dot, each label's
// median a blue point joined by a line, the run's own label in red.
// Thread-safe (pure).
#pragma once

#include <string>
#include <vector>

#include "clients/cpp/regress/runner.h"

namespace kiln::regress {

std::string HistorySvg(const std::string& kernel, const std::vector<LabelRuns>& trend,
                       const std::string& current_label);

} // namespace kiln::regress
