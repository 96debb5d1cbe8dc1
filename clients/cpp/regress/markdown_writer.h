// The Markdown summary of a regress run (for a CI job summary or a pull
// request comment): a headline, then one row per kernel with the old and
// new medians, the change, the p-value and the verdict. Thread-safe (pure).
#pragma once

#include <string>

#include "clients/cpp/regress/runner.h"

namespace kiln::regress {

std::string MarkdownSummary(const RunReport& report);

} // namespace kiln::regress
