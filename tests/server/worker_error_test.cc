// Worker failure kinds on statuses (server/worker_error.h): they survive the
// round trip, carry the stderr tail and the worker's code, and map to the
// Measurement status a job records.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/worker_error.h"

namespace kiln::server {
namespace {

namespace pb = kiln::v1;
using M = pb::Measurement;

TEST(WorkerError, KindStderrAndCodeRoundTrip) {
  absl::Status s =
      MakeWorkerError(WorkerErrorKind::kCrash, absl::StatusCode::kAborted, "worker for cpu died",
                      "fatal signal SIGSEGV", pb::WorkerError::CODE_LAUNCH_FAILED);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(WorkerErrorKindOf(s), WorkerErrorKind::kCrash);
  EXPECT_EQ(StderrTailOf(s), "fatal signal SIGSEGV");
  EXPECT_EQ(WorkerCodeOf(s), pb::WorkerError::CODE_LAUNCH_FAILED);
  EXPECT_EQ(s.message(), "worker for cpu died; worker stderr:\nfatal signal SIGSEGV");
  EXPECT_EQ(WorkerErrorKindName(WorkerErrorKind::kLaunchFailed), "launch_failed");
}

TEST(WorkerError, PlainStatusesHaveNoKind) {
  EXPECT_EQ(WorkerErrorKindOf(absl::OkStatus()), WorkerErrorKind::kNone);
  EXPECT_EQ(WorkerErrorKindOf(absl::NotFoundError("x")), WorkerErrorKind::kNone);
  EXPECT_EQ(StderrTailOf(absl::NotFoundError("x")), "");
  EXPECT_EQ(WorkerCodeOf(absl::NotFoundError("x")), pb::WorkerError::CODE_UNSPECIFIED);
}

TEST(WorkerError, MeasurementStatus) {
  struct Case {
    WorkerErrorKind kind;
    pb::WorkerError::Code code;
    M::Status want;
  };
  const Case cases[] = {
      {WorkerErrorKind::kCrash, pb::WorkerError::CODE_UNSPECIFIED, M::STATUS_LAUNCH_ERROR},
      {WorkerErrorKind::kLaunchFailed, pb::WorkerError::CODE_LAUNCH_FAILED, M::STATUS_LAUNCH_ERROR},
      {WorkerErrorKind::kTimeout, pb::WorkerError::CODE_UNSPECIFIED, M::STATUS_TIMEOUT},
      {WorkerErrorKind::kWorkerError, pb::WorkerError::CODE_OUT_OF_MEMORY,
       M::STATUS_RESOURCE_LIMIT},
      {WorkerErrorKind::kWorkerError, pb::WorkerError::CODE_INVALID_REQUEST, M::STATUS_UNSPECIFIED},
      {WorkerErrorKind::kQueueTimeout, pb::WorkerError::CODE_UNSPECIFIED, M::STATUS_UNSPECIFIED},
      {WorkerErrorKind::kCancelled, pb::WorkerError::CODE_UNSPECIFIED, M::STATUS_UNSPECIFIED},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(WorkerErrorKindName(c.kind)));
    absl::Status s = MakeWorkerError(c.kind, absl::StatusCode::kInternal, "m", "", c.code);
    EXPECT_EQ(MeasurementStatusFor(s), c.want);
  }
  EXPECT_EQ(MeasurementStatusFor(absl::OkStatus()), M::STATUS_OK);
  EXPECT_TRUE(LostWorker(WorkerErrorKind::kTimeout));
  EXPECT_FALSE(LostWorker(WorkerErrorKind::kWorkerError));
}

} // namespace
} // namespace kiln::server
