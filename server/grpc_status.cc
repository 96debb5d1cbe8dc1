#include "server/grpc_status.h"

#include <string>

namespace kiln::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  // absl has no codes beyond gRPC's 16; anything unexpected is UNKNOWN.
  const grpc::StatusCode g =
      code >= 0 && code <= 16 ? static_cast<grpc::StatusCode>(code) : grpc::StatusCode::UNKNOWN;
  const std::string message(status.message());
  grpc::Status out(g, message);
  return out;
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

} // namespace kiln::server
