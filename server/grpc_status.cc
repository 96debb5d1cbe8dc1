#include "server/grpc_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace kiln::server {

std::string BoundStatusMessage(std::string message) {
  if (message.size() <= kMaxStatusMessageBytes) return message;
  const std::string more = absl::StrCat("... [", message.size(), " bytes in all]");
  size_t cut = kMaxStatusMessageBytes - more.size();
  // Not inside a UTF-8 sequence: back up over continuation bytes.
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  message.resize(cut);
  message += more;
  return message;
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  // absl has no codes beyond gRPC's 16; anything unexpected is UNKNOWN.
  const grpc::StatusCode g =
      code >= 0 && code <= 16 ? static_cast<grpc::StatusCode>(code) : grpc::StatusCode::UNKNOWN;
  return {g, BoundStatusMessage(absl::StrCat(status.message()))};
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

} // namespace kiln::server
