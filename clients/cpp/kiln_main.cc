// `kiln`: the Kiln command line. Commands register in the table below.
#include <iostream>
#include <string>
#include <vector>

#include "clients/cpp/cache_commands.h"
#include "clients/cpp/command_table.h"

int main(int argc, char** argv) {
  kiln::cli::CommandTable table;
  table.Add(kiln::cli::CacheCommand());
  const std::vector<std::string> args(argv, argv + argc);
  return table.Dispatch(args, {std::cout, std::cerr});
}
