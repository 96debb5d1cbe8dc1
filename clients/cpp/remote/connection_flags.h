// The flags every `kiln` command that talks to a kilnd shares, turned into
// libkiln_client options, and the mapping of a failed call to an exit code.
//
//   --server HOST:PORT     default $KILN_SERVER, else 127.0.0.1:7070
//   --timeout SECONDS      per call, retries included (default 600)
//   --token TOKEN          bearer token (default $KILN_TOKEN)
//   --tls                  TLS with the system roots
//   --tls-ca FILE          TLS with these roots (default $KILN_TLS_CA; implies --tls)
//   --tls-cert FILE        client certificate (mutual TLS; default $KILN_TLS_CERT)
//   --tls-key FILE         its key (default $KILN_TLS_KEY)
//   --tls-server-name N    the name to check in the server's certificate
//   --retries N            attempts after UNAVAILABLE for idempotent calls (default 4)
//   --local-cache DIR      the client's read-through cache (default $KILN_CLIENT_CACHE)
//   --json                 machine-readable output
// `--flag=value` works too. The server address is checked before any call
// (ValidateServerAddress). Thread-compatible.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "clients/cpp/client/client.h"
#include "clients/cpp/command_table.h"
#include "google/protobuf/message.h"

namespace kiln::cli {

inline constexpr int kExitRegression = 6;
inline constexpr int kExitUnavailable = 5;

struct Connection {
  client::ClientOptions options;
  bool json = false;
  bool server_flag = false;      // the address came from --server (else $KILN_SERVER or default)
  std::string env_server;        // $KILN_SERVER as ParseConnection saw it ("" when unset)
  std::vector<std::string> rest; // the arguments that are not connection flags
};

// Help text for the flags above (for usage messages).
extern const char kConnectionFlagsHelp[];
// The flags above, for did-you-mean suggestions (suggest.h).
const std::vector<std::string>& ConnectionFlagNames();
// `command_flags` followed by ConnectionFlagNames().
std::vector<std::string> WithConnectionFlags(std::vector<std::string> command_flags);

// OK for an address the client can dial: HOST:PORT (a name or an IPv4
// address, port 1..65535), [IPv6]:PORT, or unix:PATH (a Unix socket).
// Otherwise InvalidArgument saying what is wrong and what is expected: a
// URL scheme (http://, grpc://), a missing port or host, a port out of
// range, an empty address.
absl::Status ValidateServerAddress(std::string_view address);

// What to try when kilnd at `address` does not answer, for the end of an
// error message: is it running, how to start it, how to point at it.
std::string UnreachableHint(std::string_view address);

// nullopt after printing the problem (a usage error) to io.err.
std::optional<Connection> ParseConnection(const std::vector<std::string>& args, CommandIo io,
                                          const std::string& command);
// The client; nullptr after printing why not (a usage error: a bad server
// address, unreadable TLS files).
std::unique_ptr<client::Client> Connect(const Connection& c, CommandIo io,
                                        const std::string& command);
// Prints a failed call (with --json also json_output.h's error object on
// stdout); returns its exit code: kExitUnavailable for
// UNAVAILABLE and DEADLINE_EXCEEDED (with UnreachableHint), kExitFailure
// otherwise.
int ReportFailure(const absl::Status& s, const Connection& c, CommandIo io);

// One-line JSON of a message: json_output.h's MessageJson (proto field
// names, 64-bit integers as numbers, plain binding values).
std::string Json(const google::protobuf::Message& m);
// A JSON string literal.
std::string Quote(const std::string& s);

// Takes `name VALUE` or `name=VALUE` at args[i] (advancing i); false when
// args[i] is not `name` or the value is missing.
bool TakeValue(const std::vector<std::string>& args, size_t& i, const std::string& name,
               std::string* value);

} // namespace kiln::cli
