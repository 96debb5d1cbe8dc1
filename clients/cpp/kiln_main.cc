// `kiln`: the Kiln command line. Commands register in the table below.
#include <iostream>
#include <string>
#include <vector>

#include "clients/cpp/cache_commands.h"
#include "clients/cpp/command_table.h"
#include "clients/cpp/tune_commands.h"
#ifdef KILN_WITH_REMOTE_COMMANDS
#include "clients/cpp/regress/regress_command.h"
#include "clients/cpp/remote/health_command.h"
#include "clients/cpp/remote/server_commands.h"
#include "clients/cpp/remote/stats_command.h"
#include "clients/cpp/remote/version_command.h"
#endif

namespace {

#ifdef KILN_WITH_REMOTE_COMMANDS
// `kiln cache stats --server ADDR` is `kiln stats --server ADDR` (the
// daemon's statistics); every other `kiln cache` use is the local cache's.
kiln::cli::Command CacheCommandWithServerStats() {
  kiln::cli::Command local = kiln::cli::CacheCommand();
  kiln::cli::CommandFn run_local = local.run;
  local.run = [run_local](const std::vector<std::string>& args, kiln::cli::CommandIo io) {
    bool server = false, stats = false;
    std::vector<std::string> rest;
    for (const std::string& a : args) {
      if (a == "--server" || a.rfind("--server=", 0) == 0) server = true;
      if (a == "stats" && !stats) {
        stats = true; // the subcommand, not passed on
      } else {
        rest.push_back(a);
      }
    }
    if (!server) return run_local(args, io);
    if (!stats) {
      io.err << "kiln cache: --server is for `kiln cache stats --server ADDR` (kiln stats); the "
                "other cache commands work on a local cache directory (--cache-dir)\n";
      return kiln::cli::kExitUsage;
    }
    return kiln::cli::RunStats(rest, io);
  };
  return local;
}
#else
int LocalVersion(const std::vector<std::string>& args, kiln::cli::CommandIo io) {
  io.out << "kiln " << kiln::cli::ClientVersion() << "\n"
         << "server: this kiln was built without the daemon commands\n";
  return kiln::cli::kExitOk;
}
#endif

} // namespace

int main(int argc, char** argv) {
  kiln::cli::CommandTable table;
#ifdef KILN_WITH_REMOTE_COMMANDS
  table.Add(CacheCommandWithServerStats());
  table.Add(kiln::cli::TuneCommand(kiln::cli::TuneRemote()));
#else
  table.Add(kiln::cli::CacheCommand());
  table.Add(kiln::cli::TuneCommand());
#endif
#ifdef KILN_WITH_REMOTE_COMMANDS
  table.Add(kiln::cli::CompileCommand());
  table.Add(kiln::cli::BestCommand());
  table.Add(kiln::cli::BenchCommand());
  table.Add(kiln::cli::DevicesCommand());
  table.Add(kiln::cli::JobsCommand());
  table.Add(kiln::cli::StatsCommand());
  table.Add(kiln::cli::HealthCommand());
  table.Add(kiln::regress::RegressCommand());
  table.Add(kiln::cli::VersionCommand());
#else
  table.Add({"version", "this client's version (also kiln --version)", LocalVersion});
#endif
  const std::vector<std::string> args(argv, argv + argc);
  return table.Dispatch(args, {std::cout, std::cerr});
}
