// Test helper: a Tune call read to its end.
#pragma once

#include <chrono>
#include <optional>

#include <grpcpp/grpcpp.h>

#include "kiln/v1/service.grpc.pb.h"

namespace kiln::testing {

struct TuneOutcome {
  grpc::Status status;
  std::optional<kiln::v1::TuneResult> result; // the result event, if one came
};

// Sends `request` and reads the stream to its end (progress events are
// skipped), within `deadline`.
inline TuneOutcome RunTune(kiln::v1::Kiln::Stub& stub, const kiln::v1::TuneRequest& request,
                           std::chrono::seconds deadline) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  auto reader = stub.Tune(&ctx, request);
  kiln::v1::TuneEvent event;
  TuneOutcome out;
  while (reader->Read(&event)) {
    if (event.has_result()) out.result = event.result();
  }
  out.status = reader->Finish();
  return out;
}

} // namespace kiln::testing
