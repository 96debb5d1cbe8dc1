// The `kiln` commands that talk to a kilnd over gRPC:
//
//   kiln compile FILE [--bind NAME=VALUE]... [--entry NAME] [--target T]
//                [--emit cubin|ptx|cuda|cpp|so] [-o OUT] [--toolchain nvrtc|nvcc|cc]
//                [--async] [--json]
//   kiln bench FILE [--bind NAME=VALUE]... [--config NAME=VALUE]... [--target T]
//   kiln bench --key ARTIFACT_KEY [--config NAME=VALUE]...
//              [--device ID]... [--trials N] [--warmup N] [--flush-l2] [--cuda-graph]
//              [--history NAME] [--compare] [--baseline-runs N] [--max-slowdown F]
//              [--significance P] [--json]
//   kiln tune FILE ... (tune_commands.h; without --dry-run through the Tune RPC)
//   kiln devices [--json]
//   kiln jobs [JOB_ID] [--watch] [--cancel] [--limit N] [--json]
//
// Every command takes --server HOST:PORT (default $KILN_SERVER, else
// 127.0.0.1:7070) and --timeout SECONDS (default 600).
//
// Exit codes (besides command_table.h's 0 success, 2 usage): 1 the server
// refused the request (a bad program: its file:line:col diagnostic is printed;
// a failed job), 6 `kiln bench` measured a regression against its history,
// 5 the server could not be reached or the call timed out.
// Thread-compatible.
#pragma once

#include "clients/cpp/command_table.h"
#include "clients/cpp/tune_commands.h"

namespace kiln::cli {

inline constexpr int kExitRegression = 6;
inline constexpr int kExitUnavailable = 5;

Command CompileCommand();
Command BenchCommand();
// `kiln tune` without --dry-run: the Tune RPC, progress on stderr.
TuneRemoteFn TuneRemote();
Command DevicesCommand();
Command JobsCommand();

} // namespace kiln::cli
