#include "clients/cpp/remote/connection_flags.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/cpp/json_output.h"
#include "util/file_path.h"
#include "util/host_port.h"

namespace kiln::cli {

const char kConnectionFlagsHelp[] =
    "connection: [--server HOST:PORT] [--timeout SECONDS] [--token T] [--tls] [--tls-ca FILE]\n"
    "            [--tls-cert FILE --tls-key FILE] [--tls-server-name NAME] [--retries N]\n"
    "            [--local-cache DIR]   (defaults: $KILN_SERVER or 127.0.0.1:7070, $KILN_TOKEN,\n"
    "            $KILN_TLS_CA, $KILN_TLS_CERT, $KILN_TLS_KEY, $KILN_CLIENT_CACHE)\n";

const std::vector<std::string>& ConnectionFlagNames() {
  static const std::vector<std::string> kNames = {
      "--server",  "--timeout",         "--token",   "--tls",         "--tls-ca", "--tls-cert",
      "--tls-key", "--tls-server-name", "--retries", "--local-cache", "--json"};
  return kNames;
}

std::vector<std::string> WithConnectionFlags(std::vector<std::string> command_flags) {
  const std::vector<std::string>& c = ConnectionFlagNames();
  command_flags.insert(command_flags.end(), c.begin(), c.end());
  return command_flags;
}

absl::Status ValidateServerAddress(std::string_view address_view) {
  const std::string address(address_view);
  constexpr char kExpected[] = "expected HOST:PORT (e.g. 127.0.0.1:7070), [IPv6]:PORT or unix:PATH";
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("server address '", address, "' ", why, "; ", kExpected));
  };
  if (address.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("the server address is empty; ", kExpected));
  }
  if (address.rfind("unix:", 0) == 0) {
    if (address.size() == 5) return bad("names no socket path");
    return absl::OkStatus();
  }
  if (const size_t scheme = address.find("://"); scheme != std::string::npos) {
    // http://host:7070/ -> host:7070: what the user most likely meant.
    std::string rest = address.substr(scheme + 3);
    rest = rest.substr(0, rest.find('/'));
    std::string example;
    if (!rest.empty()) {
      example = absl::StrCat(", e.g. --server ", rest,
                             rest.find(':') == std::string::npos ? ":PORT" : "");
    }
    return bad(absl::StrCat("has a URL scheme ('", address.substr(0, scheme + 3),
                            "'); kiln speaks gRPC to the address itself", example));
  }
  absl::StatusOr<util::HostPort> hp = util::ParseHostPort(address);
  if (!hp.ok()) {
    if (address.find(':') == std::string::npos) {
      return bad(absl::StrCat("has no port (kilnd listens on 7070 unless told otherwise: ", address,
                              ":7070)"));
    }
    // ParseHostPort's reason, after "invalid address '...': ".
    std::string why(hp.status().message());
    if (const size_t colon = why.find("': "); colon != std::string::npos) {
      why = why.substr(colon + 3);
    }
    return bad(absl::StrCat("is not valid: ", why));
  }
  if (hp->host.empty()) return bad("has no host");
  if (hp->port == 0) return bad("has port 0, which no server listens on");
  return absl::OkStatus();
}

std::string UnreachableHint(std::string_view address) {
  return absl::StrCat("hint: is kilnd running at ", std::string(address),
                      "? start it with scripts/serve.sh, or point KILN_SERVER / --server at it");
}

bool TakeValue(const std::vector<std::string>& args, size_t& i, const std::string& name,
               std::string* value) {
  const std::string& a = args[i];
  if (a == name) {
    if (i + 1 >= args.size()) return false;
    *value = args[++i];
    return true;
  }
  if (a.rfind(name + "=", 0) == 0) {
    *value = a.substr(name.size() + 1);
    return true;
  }
  return false;
}

std::optional<Connection> ParseConnection(const std::vector<std::string>& args, CommandIo io,
                                          const std::string& command) {
  Connection c;
  c.options = client::OptionsFromEnvironment();
  if (const char* env = std::getenv("KILN_SERVER"); env != nullptr) c.env_server = env;
  c.options.retry.max_attempts = 5;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string v;
    const std::string& a = args[i];
    auto missing = [&](const std::string& flag) { return a == flag && i + 1 >= args.size(); };
    for (const char* flag : {"--server", "--timeout", "--token", "--tls-ca", "--tls-cert",
                             "--tls-key", "--tls-server-name", "--retries", "--local-cache"}) {
      if (missing(flag)) {
        io.err << "kiln " << command << ": " << flag << " needs a value\n";
        return std::nullopt;
      }
    }
    if (TakeValue(args, i, "--server", &v)) {
      c.options.address = v;
      c.server_flag = true;
    } else if (TakeValue(args, i, "--timeout", &v)) {
      double s = 0;
      if (!absl::SimpleAtod(v, &s) || s <= 0) {
        io.err << "kiln " << command << ": --timeout expects a positive number of seconds\n";
        return std::nullopt;
      }
      c.options.deadline = std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
      c.options.stream_deadline = c.options.deadline;
    } else if (TakeValue(args, i, "--token", &v)) {
      c.options.token = v;
    } else if (a == "--tls") {
      c.options.tls = true;
    } else if (TakeValue(args, i, "--tls-ca", &v)) {
      c.options.tls = true;
      c.options.tls_root_certs_file = v;
    } else if (TakeValue(args, i, "--tls-cert", &v)) {
      c.options.tls = true;
      c.options.tls_cert_file = v;
    } else if (TakeValue(args, i, "--tls-key", &v)) {
      c.options.tls = true;
      c.options.tls_key_file = v;
    } else if (TakeValue(args, i, "--tls-server-name", &v)) {
      c.options.tls_server_name = v;
    } else if (TakeValue(args, i, "--retries", &v)) {
      int n = 0;
      if (!absl::SimpleAtoi(v, &n) || n < 0) {
        io.err << "kiln " << command << ": --retries expects a number >= 0\n";
        return std::nullopt;
      }
      c.options.retry.max_attempts = n + 1;
    } else if (TakeValue(args, i, "--local-cache", &v)) {
      c.options.cache_dir = v;
    } else if (a == "--json") {
      c.json = true;
    } else {
      c.rest.push_back(a);
    }
  }
  // `--tls-ca=~/ca.pem` (and a quoted "~/x" in KILN_*): no shell expanded the ~.
  for (std::string* path : {&c.options.tls_root_certs_file, &c.options.tls_cert_file,
                            &c.options.tls_key_file, &c.options.cache_dir}) {
    *path = util::ExpandHome(*path);
  }
  return c;
}

std::unique_ptr<client::Client> Connect(const Connection& c, CommandIo io,
                                        const std::string& command) {
  if (absl::Status a = ValidateServerAddress(c.options.address); !a.ok()) {
    // Where the address came from, so that a bad $KILN_SERVER is found.
    const bool from_env =
        !c.server_flag && !c.env_server.empty() && c.options.address == c.env_server;
    io.err << "kiln " << command << ": " << (from_env ? "$KILN_SERVER: " : "--server: ")
           << a.message() << "\n";
    if (c.json) io.out << ErrorJsonLine(a);
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<client::Client>> client = client::Client::Create(c.options);
  if (!client.ok()) {
    io.err << "kiln " << command << ": " << client.status().message() << "\n";
    if (c.json) io.out << ErrorJsonLine(client.status());
    return nullptr;
  }
  return *std::move(client);
}

int ReportFailure(const absl::Status& s, const Connection& c, CommandIo io) {
  if (c.json) io.out << ErrorJsonLine(s); // stdout; stderr keeps the human message
  if (s.code() == absl::StatusCode::kUnavailable ||
      s.code() == absl::StatusCode::kDeadlineExceeded) {
    io.err << "kiln: cannot get an answer from kilnd at " << c.options.address << ": "
           << s.message() << "\n"
           << UnreachableHint(c.options.address) << "\n";
    return kExitUnavailable;
  }
  io.err << s.message() << "\n";
  return kExitFailure;
}

std::string Json(const google::protobuf::Message& m) { return Dump(MessageJson(m)); }

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(ch));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

} // namespace kiln::cli
