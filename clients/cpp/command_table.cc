#include "clients/cpp/command_table.h"

#include <utility>

namespace kiln::cli {

void CommandTable::Add(Command command) { commands_.push_back(std::move(command)); }

void CommandTable::PrintUsage(std::ostream& out) const {
  out << "usage: kiln COMMAND [ARGS...]\n\ncommands:\n";
  for (const Command& c : commands_) out << "  " << c.name << "  " << c.summary << "\n";
  out << "\n`kiln COMMAND --help` describes a command.\n";
}

int CommandTable::Dispatch(const std::vector<std::string>& argv, CommandIo io) const {
  if (argv.size() < 2) {
    PrintUsage(io.err);
    return kExitUsage;
  }
  const std::string& name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(io.out);
    return kExitOk;
  }
  for (const Command& c : commands_) {
    if (c.name == name) return c.run({argv.begin() + 2, argv.end()}, io);
  }
  io.err << "kiln: unknown command '" << name << "'\n";
  PrintUsage(io.err);
  return kExitUsage;
}

} // namespace kiln::cli
