// `kiln tune FILE --bind K=V ... [--strategy roller|grid|random] [--top-k N]
// [--arch NAME] [--space NAME=v1,v2,...] --dry-run [--json]`: plans a tuning
// sweep locally (program analysis, the Roller policy, compiler verification
// of each candidate) and prints the ranked candidates with their predicted
// times, without compiling to a binary, measuring or a daemon.
//
// Without --dry-run the sweep belongs to a kilnd: the parsed arguments go to
// the `remote` handler when one is given (the daemon client registers it),
// else the command fails with a message pointing at --dry-run.
// Exit codes: 0 success, 1 failure (analysis or no verified candidate),
// 2 usage error.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

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
  std::string arch = "h200";
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
};

using TuneRemoteFn = std::function<int(const TuneArgs& args, CommandIo io)>;

Command TuneCommand(const TuneRemoteFn& remote = nullptr);

} // namespace kiln::cli
