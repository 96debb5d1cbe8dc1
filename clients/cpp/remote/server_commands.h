// The `kiln` commands that talk to a kilnd, thin users of libkiln_client
// (clients/cpp/client/client.h):
//
//   kiln compile FILE [--bind NAME=VALUE]... [--config NAME=VALUE]... [--entry NAME]
//                [--target T] [--emit cubin|ptx|cuda|cpp|so|ir] [-o OUT]
//                [--toolchain nvrtc|nvcc|cc] [--use-best MODEL] [--test-bind] [--async]
//                [--json]
//     (--test-bind: the file's `# kiln: test-bind` line, --bind wins; shape
//     symbols left unbound get a note on stderr and --json's dynamic_symbols)
//   kiln bench FILE [--bind NAME=VALUE]... [--config NAME=VALUE]... [--target T]
//   kiln bench --key ARTIFACT_KEY [--config NAME=VALUE]...
//              [--device ID]... [--trials N] [--warmup N] [--flush-l2] [--cuda-graph]
//              [--history NAME] [--label L] [--compare] [--baseline-runs N]
//              [--max-slowdown F] [--significance P] [--json]
//   kiln best FILE [--bind NAME=VALUE]... [--target T] [--device-model M] [--json]
//   kiln tune FILE ... (tune_commands.h; without --dry-run through the Tune RPC)
//   kiln devices [--json]
//   kiln jobs [JOB_ID] [--watch] [--cancel] [--limit N] [--json]
//
// Every command takes the connection flags of connection_flags.h (--server,
// --timeout, --token, TLS, --retries, --local-cache). An unknown flag names
// the closest known one (suggest.h).
//
// Exit codes (besides command_table.h's 0 success, 2 usage): 1 the server
// refused the request (a bad program: its file:line:col diagnostic is printed;
// a failed job; `kiln best` with nothing stored), 5 the server could not be
// reached or the call timed out, 6 `kiln bench` measured a regression
// against its history.
// Thread-compatible.
#pragma once

#include "clients/cpp/command_table.h"
#include "clients/cpp/remote/connection_flags.h"
#include "clients/cpp/tune_commands.h"

namespace kiln::cli {

Command CompileCommand();
Command BenchCommand();
// `kiln best FILE --bind ... --target T [--device-model M]`: LookupBest.
Command BestCommand();
// `kiln tune` without --dry-run: the Tune RPC, progress on stderr.
TuneRemoteFn TuneRemote();
Command DevicesCommand();
Command JobsCommand();

} // namespace kiln::cli
