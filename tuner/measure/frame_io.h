// Framed protobuf messages over a stream file descriptor (a socketpair or a
// pipe), the transport between kilnd and kiln-worker (worker.proto): each
// frame is a 4-byte little-endian payload length followed by the payload,
// one serialized message.
//
// Reads and writes poll() before each system call, so they work on blocking
// and non-blocking descriptors alike and honour a deadline and a stop token
// (checked at least every kStopPollInterval). EINTR is retried. Writes use
// send(MSG_NOSIGNAL) on sockets, so a peer that went away is an error, not a
// SIGPIPE.
//
// Thread-safety: the functions keep no state; one reader and one writer may
// use a descriptor at the same time, two readers (or writers) may not.
//
// Errors (every message says what was expected and what came):
//   OutOfRange        the peer closed the stream cleanly between frames
//   DataLoss          the stream ended inside a frame (a truncated header or
//                     payload), or the payload does not parse as the message
//   ResourceExhausted a length above the reader's limit (nothing more is
//                     read: the stream is out of step and must be closed),
//                     or a message too large to send
//   DeadlineExceeded  the deadline passed first (the stream is then out of
//                     step if part of a frame was read or written)
//   Cancelled         the stop token was triggered first (likewise)
//   Unavailable       the peer reset the connection or closed it mid-write
//   Internal          any other I/O error (errno's text)
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stop_token>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"

namespace kiln::measure {

inline constexpr size_t kFrameHeaderBytes = 4;
// The default limit on one frame's payload: large enough for the inputs and
// outputs of big kernels, small enough that a corrupt length cannot make the
// reader allocate without bound.
inline constexpr size_t kDefaultMaxFrameBytes = size_t{1} << 30;
inline constexpr std::chrono::milliseconds kStopPollInterval{20};

struct FrameIoOptions {
  size_t max_frame_bytes = kDefaultMaxFrameBytes;
  absl::Time deadline = absl::InfiniteFuture();
  std::stop_token stop; // default: never stops
};

// The 4-byte header of a payload of `size` bytes (size < 2^32).
std::string EncodeFrameHeader(uint32_t size);
// The payload length a header holds.
uint32_t DecodeFrameHeader(std::string_view header);

// Writes one frame holding `payload`.
absl::Status WriteFrame(int fd, std::string_view payload, const FrameIoOptions& options = {});
// Serializes `message` and writes it as one frame.
absl::Status WriteMessage(int fd, const google::protobuf::MessageLite& message,
                          const FrameIoOptions& options = {});

// Reads one frame's payload.
absl::StatusOr<std::string> ReadFrame(int fd, const FrameIoOptions& options = {});
// Reads one frame and parses it into `message` (cleared first).
absl::Status ReadMessage(int fd, google::protobuf::MessageLite* message,
                         const FrameIoOptions& options = {});

} // namespace kiln::measure
