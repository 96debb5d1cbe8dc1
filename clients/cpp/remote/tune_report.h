// The result of a `kiln tune` sweep as its user reads it (docs/tools.md,
// "kiln tune"): a table ranked by measured time, then the failed candidates
// with their failure kind, then the best config; or, under --json, the same
// ranking as JSON.
//
//    rank     measured    predicted    spread  config
//      1      12.34 us     10.20 us    +-1.2%  block_M=16 block_N=32 threads=256
//      2*     13.00 us      9.80 us    +-0.8%  block_M=32 block_N=32 threads=256
//   failed: 1
//          compile_error    block_M=64 block_N=64 threads=256  (message)
//   best: block_M=16 block_N=32 threads=256  12.34 us on cpu (Intel Xeon), artifact 0123456789ab
//   * reused from kilnd's measurement history: ...
//
// "measured" is the median, "spread" the standard deviation over the median,
// "predicted" the tuner model's estimate ("-" where there is none). A `*`
// marks a result kilnd took from its measurement history (the config was
// measured in an earlier sweep on this device model) instead of measuring it
// in this sweep. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "clients/cpp/json_output.h"
#include "kiln/v1/service.pb.h"

namespace kiln::cli {

// "ok", "compile_error", "launch_error", "timeout", "wrong_result",
// "resource_limit" or "unknown".
const char* MeasurementStatusName(kiln::v1::Measurement::Status status);

// Per measurement of `result`: whether kilnd reused it from its history.
// A measurement is reused when its time (daemon clock) is before the sweep's
// job was created (`sweep_created_unix_ms`, the daemon clock too; 0 when not
// known), or when kilnd says so in its error ("measured earlier: ..."). A
// config that a concurrent sweep measured after this job was created but
// before it planned counts as measured here.
std::vector<bool> ReusedFromHistory(const kiln::v1::TuneResult& result,
                                    int64_t sweep_created_unix_ms);

// Indexes into result.measurements(): the successful ones by median time
// (ties: predicted time, then config text), then the failed ones by failure
// kind and config text.
std::vector<int> RankOrder(const kiln::v1::TuneResult& result);

// The table, the failures, the best line and (when any is reused) the legend.
// `reused` is ReusedFromHistory's answer (empty: no markers).
void PrintTuneTable(const kiln::v1::TuneResult& result, const std::vector<bool>& reused,
                    std::ostream& out);

// {"job_id", "result": {"best", "measurements", "best_artifact"}}: the
// TuneResult as MessageJson prints it (plain configs, 64-bit numbers), its
// measurements in RankOrder, each with "rank" (1.. for the successful ones,
// null for a failure) and "reused" (bool) in front of its fields.
OrderedJson TuneResultJson(const std::string& job_id, const kiln::v1::TuneResult& result,
                           const std::vector<bool>& reused);

} // namespace kiln::cli
