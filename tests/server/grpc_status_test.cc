// ToGrpcStatus / BoundStatusMessage (server/grpc_status.h): codes map one to
// one, and messages stay within the headers a gRPC client accepts.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/grpc_status.h"

namespace kiln::server {
namespace {

using ::testing::EndsWith;
using ::testing::StartsWith;

TEST(GrpcStatus, CodesAndShortMessagesPassThrough) {
  const grpc::Status s = ToGrpcStatus(absl::InvalidArgumentError("t.py:3:5: bad"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "t.py:3:5: bad");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_EQ(FromGrpcStatus(s), absl::InvalidArgumentError("t.py:3:5: bad"));
  const std::string exact(kMaxStatusMessageBytes, 'x');
  EXPECT_EQ(BoundStatusMessage(exact), exact);
}

TEST(GrpcStatus, LongMessagesAreCutAndSaySo) {
  const std::string id(1'000'000, 'x');
  const grpc::Status s = ToGrpcStatus(absl::NotFoundError("no job '" + id + "'"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_LE(s.error_message().size(), kMaxStatusMessageBytes);
  EXPECT_THAT(s.error_message(), StartsWith("no job 'xxxx"));
  EXPECT_THAT(s.error_message(), EndsWith("... [1000009 bytes in all]"));
}

TEST(GrpcStatus, TheCutKeepsUtf8Whole) {
  std::string text;
  while (text.size() < 3 * kMaxStatusMessageBytes) text += "\xC3\xA9"; // é
  const std::string cut = BoundStatusMessage("x" + text);
  EXPECT_LE(cut.size(), kMaxStatusMessageBytes);
  const std::string kept = cut.substr(0, cut.find("..."));
  // "x" then whole two-byte characters only.
  EXPECT_EQ((kept.size() - 1) % 2, 0u) << kept.size();
  EXPECT_EQ(kept.back(), '\xA9');
}

} // namespace
} // namespace kiln::server
