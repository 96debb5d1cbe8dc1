#include "tuner/measure/frame_io.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace kiln::measure {
namespace {

std::string ErrnoText(int err) {
  char buf[256];
  return std::string(strerror_r(err, buf, sizeof(buf)));
}

// Waits until `fd` is ready for `events`. OK when ready (or in error/hang-up
// state: the following read or write reports what happened).
absl::Status WaitReady(int fd, short events, const FrameIoOptions& options, const char* what) {
  for (;;) {
    if (options.stop.stop_requested()) {
      return absl::CancelledError(absl::StrCat(what, ": cancelled"));
    }
    int timeout_ms = -1;
    if (options.deadline != absl::InfiniteFuture()) {
      const absl::Duration left = options.deadline - absl::Now();
      if (left <= absl::ZeroDuration()) {
        return absl::DeadlineExceededError(absl::StrCat(what, ": deadline exceeded"));
      }
      timeout_ms =
          static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
    }
    if (options.stop.stop_possible()) {
      const int slice = static_cast<int>(kStopPollInterval.count());
      timeout_ms = timeout_ms < 0 ? slice : std::min(timeout_ms, slice);
    }
    pollfd p{fd, events, 0};
    const int ready = poll(&p, 1, timeout_ms);
    if (ready > 0) return absl::OkStatus();
    if (ready < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat(what, ": poll: ", ErrnoText(errno)));
    }
  }
}

absl::Status WriteAll(int fd, std::string_view bytes, const FrameIoOptions& options) {
  bool use_send = true;
  size_t done = 0;
  while (done < bytes.size()) {
    if (absl::Status s = WaitReady(fd, POLLOUT, options, "writing a frame"); !s.ok()) return s;
    // POLLOUT on a pipe promises room for PIPE_BUF bytes: a write of at most
    // that much cannot block past the deadline.
    const size_t chunk =
        use_send ? bytes.size() - done : std::min<size_t>(bytes.size() - done, 4096);
    ssize_t n = use_send ? send(fd, bytes.data() + done, chunk, MSG_NOSIGNAL | MSG_DONTWAIT)
                         : write(fd, bytes.data() + done, chunk);
    if (n < 0 && use_send && errno == ENOTSOCK) {
      use_send = false; // a pipe
      continue;
    }
    if (n >= 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    if (errno == EPIPE || errno == ECONNRESET) {
      return absl::UnavailableError(
          absl::StrCat("writing a frame: the peer closed the stream after ", done, " of ",
                       bytes.size(), " bytes"));
    }
    return absl::InternalError(absl::StrCat("writing a frame: ", ErrnoText(errno)));
  }
  return absl::OkStatus();
}

// Reads exactly `n` bytes into `out` (appending); `*got` counts what came.
absl::Status ReadAll(int fd, size_t n, std::string* out, size_t* got,
                     const FrameIoOptions& options) {
  *got = 0;
  const size_t base = out->size();
  out->resize(base + n);
  while (*got < n) {
    if (absl::Status s = WaitReady(fd, POLLIN, options, "reading a frame"); !s.ok()) {
      out->resize(base + *got);
      return s;
    }
    ssize_t r = read(fd, out->data() + base + *got, n - *got);
    if (r > 0) {
      *got += static_cast<size_t>(r);
      continue;
    }
    if (r == 0) break; // end of stream
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    const int err = errno;
    out->resize(base + *got);
    if (err == ECONNRESET) {
      return absl::UnavailableError("reading a frame: the peer reset the connection");
    }
    return absl::InternalError(absl::StrCat("reading a frame: ", ErrnoText(err)));
  }
  out->resize(base + *got);
  return absl::OkStatus();
}

} // namespace

std::string EncodeFrameHeader(uint32_t size) {
  std::string header(kFrameHeaderBytes, '\0');
  for (size_t i = 0; i < kFrameHeaderBytes; ++i) {
    header[i] = static_cast<char>((size >> (8 * i)) & 0xffu);
  }
  return header;
}

uint32_t DecodeFrameHeader(std::string_view header) {
  uint32_t size = 0;
  for (size_t i = 0; i < kFrameHeaderBytes && i < header.size(); ++i) {
    size |= static_cast<uint32_t>(static_cast<unsigned char>(header[i])) << (8 * i);
  }
  return size;
}

absl::Status WriteFrame(int fd, std::string_view payload, const FrameIoOptions& options) {
  if (payload.size() > options.max_frame_bytes || payload.size() > UINT32_MAX) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a frame of ", payload.size(), " bytes exceeds the limit of ",
                     std::min<size_t>(options.max_frame_bytes, UINT32_MAX), " bytes"));
  }
  // One buffer, so that a small frame goes out in one system call.
  std::string frame = EncodeFrameHeader(static_cast<uint32_t>(payload.size()));
  frame.append(payload.data(), payload.size());
  return WriteAll(fd, frame, options);
}

absl::Status WriteMessage(int fd, const google::protobuf::MessageLite& message,
                          const FrameIoOptions& options) {
  const size_t size = message.ByteSizeLong();
  if (size > options.max_frame_bytes || size > INT32_MAX) {
    return absl::ResourceExhaustedError(absl::StrCat("a ", message.GetTypeName(), " of ", size,
                                                     " bytes exceeds the frame limit of ",
                                                     options.max_frame_bytes, " bytes"));
  }
  std::string frame = EncodeFrameHeader(static_cast<uint32_t>(size));
  if (!message.AppendToString(&frame)) {
    return absl::InternalError(absl::StrCat("cannot serialize a ", message.GetTypeName()));
  }
  return WriteAll(fd, frame, options);
}

absl::StatusOr<std::string> ReadFrame(int fd, const FrameIoOptions& options) {
  std::string header;
  size_t got = 0;
  if (absl::Status s = ReadAll(fd, kFrameHeaderBytes, &header, &got, options); !s.ok()) return s;
  if (got == 0) return absl::OutOfRangeError("end of stream: the peer closed it");
  if (got < kFrameHeaderBytes) {
    return absl::DataLossError(absl::StrCat("truncated frame: the stream ended after ", got, " of ",
                                            kFrameHeaderBytes, " header bytes"));
  }
  const uint32_t size = DecodeFrameHeader(header);
  if (size > options.max_frame_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "frame length ", size, " exceeds the limit of ", options.max_frame_bytes, " bytes"));
  }
  std::string payload;
  if (absl::Status s = ReadAll(fd, size, &payload, &got, options); !s.ok()) return s;
  if (got < size) {
    return absl::DataLossError(absl::StrCat("truncated frame: the stream ended after ", got, " of ",
                                            size, " payload bytes"));
  }
  return payload;
}

absl::Status ReadMessage(int fd, google::protobuf::MessageLite* message,
                         const FrameIoOptions& options) {
  absl::StatusOr<std::string> payload = ReadFrame(fd, options);
  if (!payload.ok()) return payload.status();
  message->Clear();
  if (!message->ParseFromString(*payload)) {
    return absl::DataLossError(absl::StrCat("a frame of ", payload->size(),
                                            " bytes does not parse as a ", message->GetTypeName()));
  }
  return absl::OkStatus();
}

} // namespace kiln::measure
