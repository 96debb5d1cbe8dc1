#include "server/worker_error.h"

#include <optional>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kiln::server {
namespace {

constexpr char kKindPayload[] = "kiln.dev/worker-error-kind";
constexpr char kStderrPayload[] = "kiln.dev/worker-stderr";
constexpr char kCodePayload[] = "kiln.dev/worker-code";

struct KindName {
  WorkerErrorKind kind;
  std::string_view name;
};
constexpr KindName kKindNames[] = {
    {WorkerErrorKind::kNone, "none"},
    {WorkerErrorKind::kCrash, "crash"},
    {WorkerErrorKind::kTimeout, "timeout"},
    {WorkerErrorKind::kLaunchFailed, "launch_failed"},
    {WorkerErrorKind::kCancelled, "cancelled"},
    {WorkerErrorKind::kProtocol, "protocol"},
    {WorkerErrorKind::kWorkerError, "worker_error"},
    {WorkerErrorKind::kQueueTimeout, "queue_timeout"},
    {WorkerErrorKind::kQueueFull, "queue_full"},
    {WorkerErrorKind::kUnavailable, "unavailable"},
};

} // namespace

std::string_view WorkerErrorKindName(WorkerErrorKind kind) {
  for (const KindName& k : kKindNames) {
    if (k.kind == kind) return k.name;
  }
  return "none";
}

absl::Status MakeWorkerError(WorkerErrorKind kind, absl::StatusCode code, std::string_view message,
                             std::string_view stderr_tail,
                             kiln::v1::WorkerError::Code worker_code) {
  std::string text(message);
  if (!stderr_tail.empty()) absl::StrAppend(&text, "; worker stderr:\n", std::string(stderr_tail));
  absl::Status status(code, text);
  status.SetPayload(kKindPayload, absl::Cord(std::string(WorkerErrorKindName(kind))));
  if (!stderr_tail.empty()) status.SetPayload(kStderrPayload, absl::Cord(std::string(stderr_tail)));
  if (worker_code != kiln::v1::WorkerError::CODE_UNSPECIFIED) {
    status.SetPayload(kCodePayload, absl::Cord(absl::StrCat(static_cast<int>(worker_code))));
  }
  return status;
}

WorkerErrorKind WorkerErrorKindOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kKindPayload);
  if (!payload.has_value()) return WorkerErrorKind::kNone;
  const std::string name(*payload);
  for (const KindName& k : kKindNames) {
    if (k.name == name) return k.kind;
  }
  return WorkerErrorKind::kNone;
}

std::string StderrTailOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kStderrPayload);
  return payload.has_value() ? static_cast<std::string>(*payload) : std::string();
}

kiln::v1::WorkerError::Code WorkerCodeOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kCodePayload);
  int code = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(static_cast<std::string>(*payload), &code) ||
      !kiln::v1::WorkerError::Code_IsValid(code)) {
    return kiln::v1::WorkerError::CODE_UNSPECIFIED;
  }
  return static_cast<kiln::v1::WorkerError::Code>(code);
}

bool LostWorker(WorkerErrorKind kind) {
  switch (kind) {
  case WorkerErrorKind::kCrash:
  case WorkerErrorKind::kTimeout:
  case WorkerErrorKind::kLaunchFailed:
  case WorkerErrorKind::kCancelled:
  case WorkerErrorKind::kProtocol:
    return true;
  default:
    return false;
  }
}

kiln::v1::Measurement::Status MeasurementStatusFor(const absl::Status& status) {
  using M = kiln::v1::Measurement;
  if (status.ok()) return M::STATUS_OK;
  switch (WorkerErrorKindOf(status)) {
  case WorkerErrorKind::kCrash:
  case WorkerErrorKind::kLaunchFailed:
    return M::STATUS_LAUNCH_ERROR;
  case WorkerErrorKind::kTimeout:
    return M::STATUS_TIMEOUT;
  case WorkerErrorKind::kWorkerError:
    switch (WorkerCodeOf(status)) {
    case kiln::v1::WorkerError::CODE_OUT_OF_MEMORY:
      return M::STATUS_RESOURCE_LIMIT;
    case kiln::v1::WorkerError::CODE_TIMEOUT:
      return M::STATUS_TIMEOUT;
    case kiln::v1::WorkerError::CODE_LAUNCH_FAILED:
    case kiln::v1::WorkerError::CODE_LOAD_FAILED:
      return M::STATUS_LAUNCH_ERROR;
    default:
      return M::STATUS_UNSPECIFIED;
    }
  default:
    return M::STATUS_UNSPECIFIED;
  }
}

} // namespace kiln::server
