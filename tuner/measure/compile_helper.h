// The compile side of kiln-worker (`kiln-worker --compile --fd N`): a
// helper process that builds CUDA C++ with NVRTC for kilnd, one framed
// kiln.v1.ToolchainCompileRequest at a time (toolchain.proto), so that the
// daemon's builds run in parallel across processes and an NVRTC crash costs
// a helper, not the daemon. The daemon's end is server/nvrtc_helpers.h;
// docs/design/toolchain.md ("NVRTC helper processes") has the design and
// the measurements.
//
// The conversions here are the whole wire mapping of a build, used by both
// ends, so that they cannot disagree: a request carries a CudaCompileInput
// field for field, a response a StatusOr<CompileOutput> (the per-kernel
// resource usage is not sent: it is parsed again from the log, as NVRTC's
// in-process path does).
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/toolchain/cuda_compile.h"
#include "kiln/v1/toolchain.pb.h"
#include "tuner/measure/frame_io.h"

namespace kiln::measure {

kiln::v1::ToolchainCompileRequest ToCompileRequest(const toolchain::CudaCompileInput& in);
toolchain::CudaCompileInput FromCompileRequest(const kiln::v1::ToolchainCompileRequest& request);

kiln::v1::ToolchainCompileResponse
ToCompileResponse(const absl::StatusOr<toolchain::CompileOutput>& result);
// The build's outcome; `elapsed` is the helper's NVRTC time (the caller may
// replace it with its own wall time).
absl::StatusOr<toolchain::CompileOutput>
FromCompileResponse(const kiln::v1::ToolchainCompileResponse& response);

struct CompileHelperOptions {
  size_t max_frame_bytes = kDefaultMaxFrameBytes;
  // When set ("sm_90a"), one small kernel that includes Kiln's CUDA runtime
  // headers is built before the first request is read: NVRTC's first build
  // in a process costs 0.3-0.6 s more than the next ones, and this moves
  // that cost to the helper's start, off the first candidate's path.
  std::string warm_arch;
};

// Answers requests on `fd` until the peer closes it. Returns the exit status
// of kiln-worker's worker mode (worker_session.h): kExitPeerClosed,
// kExitBadStream for a frame it cannot parse, kExitIoError when the socket
// fails.
int ServeCompiles(int fd, const CompileHelperOptions& options);

} // namespace kiln::measure
