#include "clients/cpp/remote/health_command.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "clients/cpp/json_output.h"
#include "clients/cpp/remote/connection_flags.h"
#include "clients/cpp/suggest.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"
#include "util/file_path.h"

namespace kiln::cli {
namespace {

constexpr char kUsage[] =
    "usage: kiln health [--server HOST:PORT] [--timeout SECONDS] [--service NAME]\n"
    "                   [--tls-ca FILE [--tls-cert FILE --tls-key FILE]]\n"
    "                   [--tls-server-name NAME] [--json]\n";

// The exit code for an unreachable server (server_commands.h's kExitUnavailable).
constexpr int kExitNoAnswer = 5;

// grpc.health.v1.HealthCheckResponse.ServingStatus, by number.
constexpr const char* kStatusNames[] = {"UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"};

struct Options {
  std::string server;
  double timeout_s = 5;
  std::string service;
  std::string ca_file, cert_file, key_file, server_name;
  bool json = false;
};

// The whole file, or nullopt when it cannot be read.
std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// HealthCheckRequest{service = 1} in the protobuf wire format.
std::string EncodeRequest(const std::string& service) {
  std::string bytes;
  if (service.empty()) return bytes; // proto3: the default is not written
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream out(&stream);
  google::protobuf::internal::WireFormatLite::WriteString(1, service, &out);
  return bytes;
}

// HealthCheckResponse.status (field 1) from the wire bytes; nullopt when the
// bytes do not parse. A missing field is 0 (UNKNOWN), as in proto3.
std::optional<int> DecodeStatus(const std::string& bytes) {
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  int status = 0;
  while (uint32_t tag = in.ReadTag()) {
    if (WireFormatLite::GetTagFieldNumber(tag) == 1 &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_VARINT) {
      uint32_t value = 0;
      if (!in.ReadVarint32(&value)) return std::nullopt;
      status = static_cast<int>(value);
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return std::nullopt;
    }
  }
  if (!in.ConsumedEntireMessage()) return std::nullopt;
  return status;
}

// `text` as a JSON string literal.
std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      out += absl::StrCat("\\u00", absl::Hex(static_cast<unsigned char>(ch), absl::kZeroPad2));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string ByteBufferToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

int Run(const std::vector<std::string>& args, CommandIo io) {
  Options o;
  const char* env = std::getenv("KILN_SERVER");
  o.server = env != nullptr && *env != '\0' ? env : "127.0.0.1:7070";
  for (size_t i = 0; i < args.size(); ++i) {
    std::string v;
    if (args[i] == "-h" || args[i] == "--help") {
      io.out << kUsage;
      return kExitOk;
    } else if (TakeValue(args, i, "--server", &v)) {
      o.server = v;
    } else if (TakeValue(args, i, "--timeout", &v)) {
      if (!absl::SimpleAtod(v, &o.timeout_s) || o.timeout_s <= 0) {
        io.err << "kiln health: --timeout expects a positive number of seconds\n";
        return kExitUsage;
      }
    } else if (TakeValue(args, i, "--service", &v)) {
      o.service = v;
    } else if (TakeValue(args, i, "--tls-ca", &v) || TakeValue(args, i, "--tls-ca-file", &v)) {
      // --tls-ca/--tls-cert/--tls-key as for every other command; the -file
      // spellings (kilnd's own flag names) are accepted too.
      o.ca_file = util::ExpandHome(v);
    } else if (TakeValue(args, i, "--tls-cert", &v) || TakeValue(args, i, "--tls-cert-file", &v)) {
      o.cert_file = util::ExpandHome(v);
    } else if (TakeValue(args, i, "--tls-key", &v) || TakeValue(args, i, "--tls-key-file", &v)) {
      o.key_file = util::ExpandHome(v);
    } else if (TakeValue(args, i, "--tls-server-name", &v)) {
      o.server_name = v;
    } else if (args[i] == "--json") {
      o.json = true;
    } else if (!args[i].empty() && args[i][0] == '-') {
      io.err << "kiln health: "
             << UnknownFlag(args[i], {"--server", "--timeout", "--service", "--tls-ca",
                                      "--tls-cert", "--tls-key", "--tls-server-name", "--json",
                                      "--tls-ca-file", "--tls-cert-file", "--tls-key-file"})
             << "\n"
             << kUsage;
      return kExitUsage;
    } else {
      io.err << "kiln health: unexpected argument '" << args[i] << "'\n" << kUsage;
      return kExitUsage;
    }
  }
  if (absl::Status a = ValidateServerAddress(o.server); !a.ok()) {
    io.err << "kiln health: " << a.message() << "\n";
    return kExitUsage;
  }
  if (o.cert_file.empty() != o.key_file.empty()) {
    io.err << "kiln health: --tls-cert-file and --tls-key-file go together\n";
    return kExitUsage;
  }
  if (o.ca_file.empty() && (!o.cert_file.empty() || !o.server_name.empty())) {
    io.err << "kiln health: --tls-cert-file, --tls-key-file and --tls-server-name need "
              "--tls-ca-file\n";
    return kExitUsage;
  }

  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  grpc::ChannelArguments channel_args;
  if (!o.ca_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    for (auto [path, field] :
         {std::pair{&o.ca_file, &ssl.pem_root_certs}, std::pair{&o.cert_file, &ssl.pem_cert_chain},
          std::pair{&o.key_file, &ssl.pem_private_key}}) {
      if (path->empty()) continue;
      std::optional<std::string> pem = ReadFile(*path);
      if (!pem) {
        io.err << "kiln health: cannot read '" << *path << "'\n";
        return kExitUsage;
      }
      *field = *std::move(pem);
    }
    creds = grpc::SslCredentials(ssl);
    if (!o.server_name.empty()) channel_args.SetSslTargetNameOverride(o.server_name);
  }

  grpc::GenericStub stub(grpc::CreateCustomChannel(o.server, creds, channel_args));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000)));
  const std::string request_bytes = EncodeRequest(o.service);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) {
                   std::lock_guard<std::mutex> lock(mu);
                   status = std::move(s);
                   done = true;
                   cv.notify_one();
                 });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }

  std::string name;
  int code = kExitFailure;
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    io.err << "kiln health: cannot get an answer from kilnd at " << o.server << ": "
           << status.error_message() << "\n"
           << UnreachableHint(o.server) << "\n";
    if (o.json) {
      io.out << ErrorJsonLine(
          absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message()));
    }
    return kExitNoAnswer;
  }
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    name = "SERVICE_UNKNOWN"; // the server knows no such service
  } else if (!status.ok()) {
    io.err << "kiln health: " << status.error_message() << "\n";
    if (o.json) {
      io.out << ErrorJsonLine(
          absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message()));
    }
    return kExitFailure;
  } else {
    std::optional<int> value = DecodeStatus(ByteBufferToString(response));
    if (!value) {
      io.err << "kiln health: the server's answer is not a HealthCheckResponse\n";
      if (o.json) {
        io.out << ErrorJsonLine(
            absl::DataLossError("the server's answer is not a HealthCheckResponse"));
      }
      return kExitFailure;
    }
    name = *value >= 0 && *value < 4 ? kStatusNames[*value] : absl::StrCat("STATUS_", *value);
    if (*value == 1) code = kExitOk;
  }
  if (o.json) {
    io.out << "{\"server\": " << JsonString(o.server) << ", \"service\": " << JsonString(o.service)
           << ", \"status\": \"" << name << "\"}\n";
  } else {
    io.out << name << "\n";
  }
  return code;
}

} // namespace

Command HealthCommand() {
  return {"health", "ask a kilnd's gRPC health service whether it is serving", Run};
}

} // namespace kiln::cli
