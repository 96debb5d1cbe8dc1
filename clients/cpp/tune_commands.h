// `kiln tune FILE --bind K=V ... [--strategy roller|grid|random] [--top-k N]
// [--arch NAME] [--space NAME=v1,v2,...] --dry-run [--json]`: plans a tuning
// sweep locally (program analysis, the Roller policy, compiler verification
// of each candidate) and prints the ranked candidates with their predicted
// times, without compiling to a binary, measuring or a daemon.
//
// Without --dry-run the sweep belongs to a kilnd: the parsed arguments go to
// the `remote` handler when one is given (the daemon client registers it),
// else the command fails with a message pointing at --dry-run.
//
// The hardware model of a dry run is --arch, else the preset of --target's
// device class (cpu: the cpu preset, named after this host's CPU; cuda:sm_90:
// h200; cuda:sm_80..89: a100; hip:gfx90a / gfx942: mi250x / mi300x), else
// h200; a note on stderr names the model it assumed. A flag the chosen mode
// does not use (--arch without --dry-run, --server with it, --top-k with
// --strategy grid, ...) gets a one-line note on stderr instead of silence.
// With --json a failure prints the error object of json_output.h on stdout.
// Exit codes: 0 success, 1 failure (analysis or no verified candidate),
// 2 usage error.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/cpp/command_table.h"

namespace kiln::cli {

struct TuneArgs {
  std::string file;
  std::string entry;
  std::vector<std::pair<std::string, std::string>> bindings; // NAME, value text
  std::vector<std::pair<std::string, std::vector<int64_t>>> space;
  std::string strategy = "roller";
  int top_k = 10;
  int budget = 0; // grid / random: the most configs (0: grid all, random top-k)
  uint64_t seed = 1;
  std::string arch; // --arch; "" = from the target (ArchForTarget)
  // --measured NAME=VALUE: micro-benchmark results applied to the preset as
  // kilnd applies a device's (dram_gbs, l2_gbs, mma_f16_tflops).
  std::map<std::string, double> measured;
  std::string target; // verification target; "" = the arch's
  // Kiln pass options of the builds (--pass NAME=VALUE): "gemm=wgmma".
  std::vector<std::string> pass_options;
  bool dry_run = false;
  bool json = false;
  bool verify = true;
  bool remeasure = false; // measure configs the history already holds
  // The daemon (without --dry-run): --server (else $KILN_SERVER), --timeout,
  // --device ID... (default: every device that runs the target).
  std::string server;
  double timeout_s = 3600;
  std::vector<std::string> devices;
  // Connection flags for the daemon client, as given (--token T, --tls,
  // --tls-ca F, --tls-cert F, --tls-key F, --tls-server-name N, --retries N).
  std::vector<std::string> connection;
  // A progress bar on stderr: "auto" (when stderr is a terminal), "always", "never".
  std::string progress = "auto";
  // The flags given (as spelled, without "=VALUE"): what IgnoredFlagNotes reads.
  std::set<std::string> given;
};

// The preset name a dry run models for `target` when --arch is not given
// (see above); InvalidArgument naming the target and --arch when no preset
// runs it.
absl::StatusOr<std::string> ArchForTarget(const std::string& target);

// One line per flag of `t` that its mode (dry run or not, strategy) ignores,
// each saying why ("--arch is ignored without --dry-run: ...").
std::vector<std::string> IgnoredFlagNotes(const TuneArgs& t);

using TuneRemoteFn = std::function<int(const TuneArgs& args, CommandIo io)>;

Command TuneCommand(const TuneRemoteFn& remote = nullptr);

} // namespace kiln::cli
