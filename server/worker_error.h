// How a call to a GPU worker failed, carried on the absl::Status that
// WorkerProcess::Call and DevicePool::Call return, so that a job can record
// the failure (Measurement.status and .error) and kilnd's gRPC adapter can
// map it, without parsing messages.
//
// Kinds and the status codes they travel with:
//   kCrash         Aborted           the worker died (signal or exit) mid-request
//   kTimeout       DeadlineExceeded  the request ran past its timeout; killed
//   kLaunchFailed  Aborted           the kernel faulted (CUDA sticky error, the
//                                    CPU kernel's error); the worker exited
//   kCancelled     Cancelled         the caller cancelled; an in-flight request
//                                    kills the worker (the kernel cannot stop)
//   kProtocol      Internal          the worker broke the protocol; killed
//   kWorkerError   the worker's code: INVALID_REQUEST / LOAD_FAILED ->
//                  InvalidArgument, OUT_OF_MEMORY -> ResourceExhausted,
//                  NO_DEVICE -> Unavailable, TIMEOUT -> DeadlineExceeded
//                  (the worker lives on)
//   kQueueTimeout  DeadlineExceeded  no turn on the device within the wait
//   kQueueFull     ResourceExhausted too many callers already wait
//   kUnavailable   Unavailable       the device's worker is down or cannot start
// The first five kill or lose the worker, which the pool then restarts.
// Messages name the device; for a dead worker they end with the tail of its
// stderr, which StderrTailOf also returns on its own.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "kiln/v1/service.pb.h"
#include "kiln/v1/worker.pb.h"

namespace kiln::server {

enum class WorkerErrorKind {
  kNone,
  kCrash,
  kTimeout,
  kLaunchFailed,
  kCancelled,
  kProtocol,
  kWorkerError,
  kQueueTimeout,
  kQueueFull,
  kUnavailable,
};

// "crash", "timeout", "launch_failed", ... ("none" for kNone).
std::string_view WorkerErrorKindName(WorkerErrorKind kind);

// A status of `kind` with `code`, whose message is `message` followed by
// the worker's stderr tail when there is one.
absl::Status
MakeWorkerError(WorkerErrorKind kind, absl::StatusCode code, std::string_view message,
                std::string_view stderr_tail = {},
                kiln::v1::WorkerError::Code worker_code = kiln::v1::WorkerError::CODE_UNSPECIFIED);

// The kind a status carries; kNone for OK and for statuses not made here.
WorkerErrorKind WorkerErrorKindOf(const absl::Status& status);
// The worker's stderr tail a status carries, or "".
std::string StderrTailOf(const absl::Status& status);
// The worker's own error code (kWorkerError, kLaunchFailed), or UNSPECIFIED.
kiln::v1::WorkerError::Code WorkerCodeOf(const absl::Status& status);
// Whether the failure took the worker down (crash, timeout, launch failure,
// cancellation in flight, protocol error).
bool LostWorker(WorkerErrorKind kind);

// The Measurement status a job records for a failed worker call: crash and
// launch failure are STATUS_LAUNCH_ERROR, timeout STATUS_TIMEOUT, an
// out-of-resources answer STATUS_RESOURCE_LIMIT; STATUS_UNSPECIFIED for
// anything that says nothing about the kernel (queueing, cancellation, a
// missing device).
kiln::v1::Measurement::Status MeasurementStatusFor(const absl::Status& status);

} // namespace kiln::server
