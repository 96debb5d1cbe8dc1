#include "clients/cpp/command_table.h"

#include <algorithm>
#include <ostream>
#include <streambuf>
#include <string>
#include <utility>

#include "clients/cpp/json_output.h"
#include "clients/cpp/suggest.h"

namespace kiln::cli {
namespace {

// Forwards to `target`, counting the bytes (stdout: did the command answer?)
// and keeping the first `keep` bytes (stderr: the command's message).
class RecordingBuf final : public std::streambuf {
 public:
  RecordingBuf(std::streambuf* target, size_t keep) : target_(target), keep_(keep) {}
  size_t written() const { return written_; }
  const std::string& kept() const { return kept_; }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    written_ += static_cast<size_t>(n);
    if (kept_.size() < keep_)
      kept_.append(s, std::min(static_cast<size_t>(n), keep_ - kept_.size()));
    return target_->sputn(s, n);
  }
  int sync() override { return target_->pubsync(); }

 private:
  std::streambuf* target_;
  size_t keep_;
  size_t written_ = 0;
  std::string kept_;
};

// The JSON error object for a command that failed under --json without
// printing one itself (a usage error, an unreadable file): the code follows
// the exit status, the message is the first line the command wrote to stderr.
std::string FallbackErrorJson(int exit_code, const std::string& err) {
  std::string message = err.substr(0, err.find('\n'));
  if (message.empty()) message = "kiln exited with status " + std::to_string(exit_code);
  const absl::StatusCode code = exit_code == kExitUsage ? absl::StatusCode::kInvalidArgument
                                : exit_code == 5        ? absl::StatusCode::kUnavailable
                                                        : absl::StatusCode::kUnknown;
  OrderedJson j = ErrorJson(absl::Status(code, message));
  j["error"]["exit_code"] = exit_code;
  return Dump(j) + "\n";
}

} // namespace

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
    if (c.name != name) continue;
    const std::vector<std::string> args(argv.begin() + 2, argv.end());
    if (!WantsJson(args)) return c.run(args, io);
    // Under --json a failure answers on stdout with an error object; the
    // commands print their own where they know more (the daemon's code and
    // diagnostics), and this covers the rest.
    RecordingBuf out_buf(io.out.rdbuf(), 0);
    RecordingBuf err_buf(io.err.rdbuf(), 64 * 1024);
    std::ostream out(&out_buf);
    std::ostream err(&err_buf);
    const int rc = c.run(args, {out, err});
    out.flush();
    err.flush();
    if (rc != kExitOk && out_buf.written() == 0) {
      io.out << FallbackErrorJson(rc, err_buf.kept()) << std::flush;
    }
    return rc;
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
