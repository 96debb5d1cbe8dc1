// The one mapping from the layers' absl::Status to a gRPC status. The codes
// are the same canonical codes (absl's numbering follows gRPC's), and the
// message is passed through unchanged, so a client sees the compiler's
// "file:line:col: message" exactly as the frontend wrote it.
// Thread-safe (pure functions).
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace kiln::server {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

} // namespace kiln::server
