#include "clients/cpp/remote/connection_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "clients/cpp/json_output.h"
#include "util/file_path.h"

namespace kiln::cli {

const char kConnectionFlagsHelp[] =
    "connection: [--server HOST:PORT] [--timeout SECONDS] [--token T] [--tls] [--tls-ca FILE]\n"
    "            [--tls-cert FILE --tls-key FILE] [--tls-server-name NAME] [--retries N]\n"
    "            [--local-cache DIR]   (defaults: $KILN_SERVER or 127.0.0.1:7070, $KILN_TOKEN,\n"
    "            $KILN_TLS_CA, $KILN_TLS_CERT, $KILN_TLS_KEY, $KILN_CLIENT_CACHE)\n";

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
           << s.message() << "\n";
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
