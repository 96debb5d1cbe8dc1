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
#endif

int main(int argc, char** argv) {
  kiln::cli::CommandTable table;
  table.Add(kiln::cli::CacheCommand());
#ifdef KILN_WITH_REMOTE_COMMANDS
  table.Add(kiln::cli::TuneCommand(kiln::cli::TuneRemote()));
#else
  table.Add(kiln::cli::TuneCommand());
#endif
#ifdef KILN_WITH_REMOTE_COMMANDS
  table.Add(kiln::cli::CompileCommand());
  table.Add(kiln::cli::BestCommand());
  table.Add(kiln::cli::BenchCommand());
  table.Add(kiln::cli::DevicesCommand());
  table.Add(kiln::cli::JobsCommand());
  table.Add(kiln::cli::HealthCommand());
  table.Add(kiln::regress::RegressCommand());
#endif
  const std::vector<std::string> args(argv, argv + argc);
  return table.Dispatch(args, {std::cout, std::cerr});
}
