// Framing of worker messages (tuner/measure/frame_io.h): round trips over a
// socketpair and a pipe, frames larger than the socket buffer, and every
// malformed stream (clean EOF, truncated header or payload, an oversize
// length, a payload that is not the message) gives its clear error instead
// of a crash or a hang; deadlines and stop tokens end a wait.
#include <chrono>
#include <stop_token>
#include <string>
#include <thread>

#include <sys/socket.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kiln/v1/worker.pb.h"
#include "tuner/measure/frame_io.h"

namespace kiln::measure {
namespace {

using ::testing::HasSubstr;

class SocketPair {
 public:
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_), 0); }
  ~SocketPair() {
    CloseA();
    CloseB();
  }
  int a() const { return fds_[0]; }
  int b() const { return fds_[1]; }
  void CloseA() {
    if (fds_[0] >= 0) close(fds_[0]);
    fds_[0] = -1;
  }
  void CloseB() {
    if (fds_[1] >= 0) close(fds_[1]);
    fds_[1] = -1;
  }
  void WriteRaw(const std::string& bytes) {
    ASSERT_EQ(write(b(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }

 private:
  int fds_[2] = {-1, -1};
};

TEST(FrameIo, HeaderIsFourBytesLittleEndian) {
  EXPECT_EQ(EncodeFrameHeader(0x01020304u), std::string("\x04\x03\x02\x01", 4));
  EXPECT_EQ(DecodeFrameHeader(std::string("\x04\x03\x02\x01", 4)), 0x01020304u);
  EXPECT_EQ(DecodeFrameHeader(EncodeFrameHeader(0xffffffffu)), 0xffffffffu);
}

TEST(FrameIo, MessageRoundTrip) {
  SocketPair s;
  kiln::v1::WorkerRequest sent;
  sent.set_request_id(42);
  sent.mutable_load()->set_module_id("m");
  sent.mutable_load()->set_image(std::string("\0\1\2", 3));
  ASSERT_TRUE(WriteMessage(s.a(), sent).ok());
  kiln::v1::WorkerRequest got;
  ASSERT_TRUE(ReadMessage(s.b(), &got).ok());
  EXPECT_EQ(got.SerializeAsString(), sent.SerializeAsString());
}

TEST(FrameIo, EmptyPayloadRoundTrip) {
  SocketPair s;
  ASSERT_TRUE(WriteFrame(s.a(), "").ok());
  absl::StatusOr<std::string> got = ReadFrame(s.b());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "");
}

TEST(FrameIo, FrameLargerThanTheSocketBuffer) {
  SocketPair s;
  std::string big(8 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4099) big[i] = static_cast<char>(i);
  std::thread writer([&] { EXPECT_TRUE(WriteFrame(s.a(), big).ok()); });
  absl::StatusOr<std::string> got = ReadFrame(s.b());
  writer.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, big);
}

TEST(FrameIo, WorksOverAPipe) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  std::string payload(100000, 'p');
  std::thread writer([&] { EXPECT_TRUE(WriteFrame(p[1], payload).ok()); });
  absl::StatusOr<std::string> got = ReadFrame(p[0]);
  writer.join();
  close(p[0]);
  close(p[1]);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, payload);
}

TEST(FrameIo, CleanEndOfStreamIsOutOfRange) {
  SocketPair s;
  s.CloseB();
  absl::StatusOr<std::string> got = ReadFrame(s.a());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kOutOfRange) << got.status();
}

TEST(FrameIo, TruncatedHeaderIsDataLoss) {
  SocketPair s;
  s.WriteRaw(std::string("\x05\x00", 2));
  s.CloseB();
  absl::StatusOr<std::string> got = ReadFrame(s.a());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("after 2 of 4 header bytes"));
}

TEST(FrameIo, TruncatedPayloadIsDataLoss) {
  SocketPair s;
  s.WriteRaw(EncodeFrameHeader(100) + std::string(10, 'a'));
  s.CloseB();
  absl::StatusOr<std::string> got = ReadFrame(s.a());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("after 10 of 100 payload bytes"));
}

TEST(FrameIo, OversizeLengthIsRejectedWithoutReadingIt) {
  SocketPair s;
  s.WriteRaw(EncodeFrameHeader(0xffffffffu));
  FrameIoOptions options;
  options.max_frame_bytes = 1 << 20;
  absl::StatusOr<std::string> got = ReadFrame(s.a(), options);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(got.status().message(), HasSubstr("frame length 4294967295 exceeds the limit"));
}

TEST(FrameIo, PayloadThatIsNotTheMessageIsDataLoss) {
  SocketPair s;
  ASSERT_TRUE(WriteFrame(s.a(), std::string("\xff\xff\xff\xff\xff", 5)).ok());
  kiln::v1::WorkerResponse response;
  absl::Status status = ReadMessage(s.b(), &response);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("does not parse as a kiln.v1.WorkerResponse"));
}

TEST(FrameIo, WriteOverTheLimitSendsNothing) {
  SocketPair s;
  FrameIoOptions options;
  options.max_frame_bytes = 16;
  absl::Status status = WriteFrame(s.a(), std::string(17, 'x'), options);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  // Nothing is waiting on the other end.
  FrameIoOptions quick;
  quick.deadline = absl::Now() + absl::Milliseconds(20);
  EXPECT_EQ(ReadFrame(s.b(), quick).status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(FrameIo, WriteToAClosedPeerIsUnavailableNotSigpipe) {
  SocketPair s;
  s.CloseB();
  absl::Status status = WriteFrame(s.a(), "hello");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

TEST(FrameIo, DeadlineEndsAWait) {
  SocketPair s;
  FrameIoOptions options;
  options.deadline = absl::Now() + absl::Milliseconds(50);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> got = ReadFrame(s.a(), options);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(FrameIo, StopTokenEndsAWait) {
  SocketPair s;
  std::stop_source stop;
  FrameIoOptions options;
  options.stop = stop.get_token();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    stop.request_stop();
  });
  absl::StatusOr<std::string> got = ReadFrame(s.a(), options);
  stopper.join();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled);
}

} // namespace
} // namespace kiln::measure
