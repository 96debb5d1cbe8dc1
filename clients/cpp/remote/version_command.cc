#include "clients/cpp/remote/version_command.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/cpp/client/client.h"
#include "clients/cpp/json_output.h"
#include "clients/cpp/remote/connection_flags.h"
#include "clients/cpp/suggest.h"

namespace kiln::cli {
namespace {

constexpr char kUsage[] =
    "usage: kiln version [--json] [--server HOST:PORT]   (also kiln --version)\n";

// True when `args` set `flag` (as `flag V` or `flag=V`).
bool Given(const std::vector<std::string>& args, const std::string& flag) {
  for (const std::string& a : args) {
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
  }
  return false;
}

int Run(const std::vector<std::string>& args, CommandIo io) {
  std::optional<Connection> c = ParseConnection(args, io, "version");
  if (!c) return kExitUsage;
  for (const std::string& a : c->rest) {
    if (a == "-h" || a == "--help") {
      io.out << kUsage << kConnectionFlagsHelp;
      return kExitOk;
    }
    io.err << "kiln version: "
           << (!a.empty() && a[0] == '-' ? UnknownFlag(a, WithConnectionFlags({"--help"}))
                                         : "unexpected argument '" + a + "'")
           << "\n"
           << kUsage;
    return kExitUsage;
  }
  // A version check must not hang on a daemon that is not there.
  if (!Given(args, "--timeout")) c->options.deadline = std::chrono::seconds(2);
  if (!Given(args, "--retries")) c->options.retry.max_attempts = 1;
  c->options.cache_dir.clear(); // nothing to cache
  std::unique_ptr<client::Client> client = Connect(*c, io, "version");
  if (!client) return kExitUsage;
  absl::StatusOr<kiln::v1::GetVersionResponse> v = client->GetVersion();
  const std::string& address = c->options.address;
  if (c->json) {
    OrderedJson server = {{"address", address}, {"reachable", v.ok()}};
    if (v.ok()) {
      server["version"] = v->version();
      server["ir_version"] = v->ir_version();
      server["git_revision"] = v->git_revision();
      server["targets"] = std::vector<std::string>(v->targets().begin(), v->targets().end());
      server["toolchain_fingerprint"] = v->toolchain_fingerprint();
    } else {
      server["error"] = absl::StrCat(v.status().message());
    }
    OrderedJson out = {{"client", {{"version", ClientVersion()}}}, {"server", server}};
    io.out << Dump(out) << "\n";
    return kExitOk;
  }
  io.out << "kiln " << ClientVersion() << "\n";
  if (!v.ok()) {
    const absl::StatusCode code = v.status().code();
    if (code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded) {
      io.out << "server: not reachable at " << address << "\n";
    } else {
      io.out << "server: kilnd at " << address
             << " did not say its version: " << v.status().message() << "\n";
    }
    return kExitOk;
  }
  io.out << "server: kilnd " << v->version() << " at " << address << "\n";
  io.out << "  IR versions: " << v->ir_version() << "\n";
  if (v->targets_size() > 0) io.out << "  targets: " << absl::StrJoin(v->targets(), ", ") << "\n";
  if (!v->toolchain_fingerprint().empty()) {
    io.out << "  toolchain: " << v->toolchain_fingerprint() << "\n";
  }
  if (!v->git_revision().empty()) io.out << "  revision: " << v->git_revision() << "\n";
  return kExitOk;
}

} // namespace

Command VersionCommand() {
  return {"version", "this client's version and the daemon's (also kiln --version)", Run};
}

} // namespace kiln::cli
