// `kiln regress`: the CI performance-regression workflow (docs/ci.md).
//
//   kiln regress run SUITE.yaml --label LABEL [--baseline LABEL|auto|none]
//                [--device N|ID]... [--threshold 3%] [--significance 0.05]
//                [--junit FILE] [--markdown FILE] [--plot-dir DIR] [--json]
//   kiln regress history KERNEL|SUITE.yaml [--device-model MODEL] [--limit N]
//                [--json] [--plot] [--plot-dir DIR] [--baseline LABEL|auto|none]
//                [--threshold 3%] [--significance 0.05]
// plus the connection flags (clients/cpp/remote/connection_flags.h).
//
// Exit codes of `run`: 0 no regression, 1 a regression (also when other
// kernels failed to run), 2 an infrastructure error (usage, an unreadable or
// invalid suite, an unreachable daemon, a kernel that could not be compiled
// or measured, a baseline measured with other bindings). `history`: 0, 1 no
// runs recorded (of any kernel of the suite), 2 usage, unreachable, or a
// plot not written. `history --plot` draws the stored series (one SVG per
// kernel in DIR, default "."); nothing is measured.
// Thread-compatible.
#pragma once

#include "clients/cpp/command_table.h"

namespace kiln::regress {

inline constexpr int kExitRegressOk = 0;
inline constexpr int kExitRegressRegression = 1;
inline constexpr int kExitRegressInfra = 2;

cli::Command RegressCommand();

} // namespace kiln::regress
