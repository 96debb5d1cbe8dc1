// The one mapping from the layers' absl::Status to a gRPC status. The codes
// are the same canonical codes (absl's numbering follows gRPC's), and the
// message is passed through (bounded in length, below), so a client sees the
// compiler's "file:line:col: message" exactly as the frontend wrote it.
// Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <string>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace kiln::server {

// The most bytes of a status message kilnd sends. A message travels in the
// response's HTTP/2 headers, and gRPC clients refuse headers past 8 KiB
// ("received initial metadata size exceeds limit", RESOURCE_EXHAUSTED in
// place of the real status), so a message that echoed a client's 1 MB job
// id or binding left the client without the answer (found by rpc_fuzz).
constexpr size_t kMaxStatusMessageBytes = 4096;

// `message` cut to kMaxStatusMessageBytes on a UTF-8 character boundary,
// ending "... [N more bytes]" when cut; unchanged when it fits.
std::string BoundStatusMessage(std::string message);

// The message passes through BoundStatusMessage.
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

} // namespace kiln::server
