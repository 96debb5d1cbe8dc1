// The request loop of kiln-worker: reads framed WorkerRequests from a
// stream descriptor, answers each with one WorkerResponse carrying the same
// request_id, in order, one at a time (so a measurement has the device to
// itself), and stops at the end of the stream. docs/design/worker.md is the
// protocol's description.
//
// Requests: describe, load, run (inputs from TensorSpecs, outputs returned
// when asked), measure (warm-up + repeats), validate (one run, outputs
// compared with reference bytes, see output_compare.h; the references can be
// kept by id between requests) and unload. A failed
// request gets `error` set (code and message) and no response body:
//   CODE_INVALID_REQUEST  malformed request, unknown module, bad launch
//   CODE_LOAD_FAILED      the module image does not load
//   CODE_OUT_OF_MEMORY    host or device memory, or another device resource
//   CODE_NO_DEVICE        the device is gone or unusable
//   CODE_TIMEOUT          (not produced by the worker; kilnd enforces time)
//   CODE_REFERENCE_MISSING validate named a reference_id that is not kept
//   CODE_LAUNCH_FAILED    the kernel failed (a fault, a trap, its own error):
//                         the answer is sent, then Serve returns kExitLaunchFailed
//
// Thread-safety: one thread drives a session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/v1/worker.pb.h"
#include "tuner/measure/device_backend.h"
#include "tuner/measure/frame_io.h"
#include "tuner/measure/input_cache.h"

namespace kiln::measure {

// Exit statuses of kiln-worker (Serve's return value).
inline constexpr int kExitPeerClosed = 0;   // end of stream: kilnd went away or closed it
inline constexpr int kExitLaunchFailed = 3; // answered CODE_LAUNCH_FAILED
inline constexpr int kExitBadStream = 4;    // a frame that cannot be answered (oversize, truncated)
inline constexpr int kExitIoError = 5;      // the socket failed

// The request's kind for logs: "describe", "load", "run", "measure",
// "validate", "unload", "prepare_inputs", or "empty".
const char* RequestKindName(const kiln::v1::WorkerRequest& request);

struct WorkerSessionOptions {
  size_t max_frame_bytes = kDefaultMaxFrameBytes;
  // Host memory the kernel arguments of one request may take.
  size_t max_argument_bytes = size_t{8} << 30;
  // Host memory for generated inputs kept between requests (input_cache.h).
  size_t input_cache_bytes = size_t{4} << 30;
  // Host memory for reference outputs kept by ValidateRequest.reference_id.
  size_t reference_cache_bytes = size_t{4} << 30;
  // Threads one output comparison may use (0: one per core, at most 16).
  int compare_threads = 0;
  // A stderr line per request with its phases' wall times (KILN_WORKER_TRACE=1).
  bool trace = false;
};

class WorkerSession {
 public:
  explicit WorkerSession(std::unique_ptr<DeviceBackend> backend, WorkerSessionOptions options = {});

  // Answers one request. Sets `*exit_after` when the worker must exit once
  // the answer is sent (a launch failure).
  kiln::v1::WorkerResponse Handle(const kiln::v1::WorkerRequest& request, bool* exit_after);

  // Serves requests on `fd` until the stream ends; returns an exit status.
  int Serve(int fd);

  // The generated inputs kept between requests (for tests and stats).
  const InputCache& input_cache() const { return inputs_; }

 private:
  void KeepReferences(const std::string& id, std::vector<std::string> outputs);
  // The outputs kept under `id`, or empty when any of them is not kept.
  std::vector<const std::string*> KeptReferences(const std::string& id);

  std::unique_ptr<DeviceBackend> backend_;
  WorkerSessionOptions options_;
  InputCache inputs_;
  // Reference outputs by "<reference_id>#<index>" and their count by
  // "<reference_id>#n" (the same byte-bounded LRU as the inputs).
  InputCache references_;
};

} // namespace kiln::measure
