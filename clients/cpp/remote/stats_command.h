// `kiln stats`: a kilnd's cache and job statistics through the CacheStats
// RPC, printed like `sccache -s` (one aligned label/value line each), or as
// one JSON object with --json.
//
//   kiln stats [--zero] [--json] [connection flags]
//
// --zero starts the daemon's counters (compile requests, builds, tunes,
// benchmarks) again from zero after printing them; the cache's lifetime
// totals (lookups, evictions), shared by every process of the cache
// directory, are not reset (service.proto, CacheStatsRequest). `kiln cache
// stats --server ADDR` runs this command (kiln_main.cc).
//
// Exit codes: 0 printed, 1 the daemon refused (a token is missing), 2 usage,
// 5 no answer (connection_flags.h). Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "clients/cpp/command_table.h"

namespace kiln::cli {

Command StatsCommand();

// The run function of StatsCommand, for aliases (`kiln cache stats --server`).
int RunStats(const std::vector<std::string>& args, CommandIo io);

} // namespace kiln::cli
