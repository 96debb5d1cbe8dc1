#include "clients/cpp/command_table.h"

#include <algorithm>
#include <string>
#include <utility>

#include "clients/cpp/suggest.h"

namespace kiln::cli {

const char* ClientVersion() { return KILN_VERSION_STRING; }

void CommandTable::Add(Command command) { commands_.push_back(std::move(command)); }

void CommandTable::PrintUsage(std::ostream& out) const {
  out << "usage: kiln COMMAND [ARGS...]\n\ncommands:\n";
  size_t width = 0;
  for (const Command& c : commands_) width = std::max(width, c.name.size());
  for (const Command& c : commands_) {
    out << "  " << c.name << std::string(width - c.name.size() + 2, ' ') << c.summary << "\n";
  }
  out << "\n`kiln COMMAND --help` describes a command.\n";
}

int CommandTable::Dispatch(const std::vector<std::string>& argv, CommandIo io) const {
  if (argv.size() < 2) {
    PrintUsage(io.err);
    return kExitUsage;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(io.out);
    return kExitOk;
  }
  if (name == "--version" || name == "-V") name = "version";
  for (const Command& c : commands_) {
    if (c.name == name) return c.run({argv.begin() + 2, argv.end()}, io);
  }
  if (name.rfind('-', 0) == 0) {
    io.err << "kiln: '" << name << "' is not a command; options go after the command\n";
  } else {
    io.err << "kiln: unknown command '" << name << "'" << DidYouMean(name, Names()) << "\n";
  }
  PrintUsage(io.err);
  return kExitUsage;
}

std::vector<std::string> CommandTable::Names() const {
  std::vector<std::string> names;
  for (const Command& c : commands_) names.push_back(c.name);
  return names;
}

} // namespace kiln::cli
