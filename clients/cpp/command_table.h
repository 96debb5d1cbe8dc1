// The `kiln` command line's dispatcher: a table of named commands, each a
// function of its arguments, so that later subcommands (compile, tune, ...)
// are one Add call each.
//
// Exit codes shared by every command (docs/cache.md lists them per command):
//   0 success, 1 failure, 2 usage error, 3 damage found (verify),
//   4 the cache index is missing or corrupt (run `kiln cache rebuild`).
// Thread-compatible (built once in main).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace kiln::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitDamage = 3;
inline constexpr int kExitIndexCorrupt = 4;

struct CommandIo {
  std::ostream& out;
  std::ostream& err;
};

// Runs with the arguments after the command's name; returns the exit code.
using CommandFn = std::function<int(const std::vector<std::string>& args, CommandIo io)>;

struct Command {
  std::string name;    // "cache"
  std::string summary; // one line for `kiln --help`
  CommandFn run;
};

// This client's version (the project version, KILN_VERSION_STRING).
const char* ClientVersion();

class CommandTable {
 public:
  void Add(Command command);
  // argv[0] is the program; argv[1] the command name. `--version` and `-V`
  // run the command named "version" when there is one. An unknown name is a
  // usage error that names the closest command (suggest.h).
  int Dispatch(const std::vector<std::string>& argv, CommandIo io) const;
  // The registered names, in order.
  std::vector<std::string> Names() const;
  void PrintUsage(std::ostream& out) const;

 private:
  std::vector<Command> commands_;
};

} // namespace kiln::cli
