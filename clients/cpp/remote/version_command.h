// `kiln version` (also `kiln --version`, `kiln -V`): this client's version
// and, when a kilnd answers within a short deadline, the daemon's (the
// GetVersion RPC: its version, IR versions, targets, toolchain).
//
//   kiln version [--json] [connection flags]
//
// The daemon is asked once (no retries) with a 2 s deadline unless
// --timeout / --retries say otherwise. Exit 0 whether or not a daemon
// answers ("server: not reachable at ADDR"); 2 for usage errors, a bad
// --server included. Thread-compatible.
#pragma once

#include "clients/cpp/command_table.h"

namespace kiln::cli {

Command VersionCommand();

} // namespace kiln::cli
