#include "server/worker_process.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tuner/measure/frame_io.h"
#include "tuner/measure/worker_session.h"

namespace kiln::server {
namespace {

namespace pb = kiln::v1;

// The descriptor number of the socket in the worker.
constexpr int kWorkerFd = 3;

absl::StatusCode CodeForWorkerError(pb::WorkerError::Code code) {
  switch (code) {
  case pb::WorkerError::CODE_OUT_OF_MEMORY:
    return absl::StatusCode::kResourceExhausted;
  case pb::WorkerError::CODE_NO_DEVICE:
    return absl::StatusCode::kUnavailable;
  case pb::WorkerError::CODE_TIMEOUT:
    return absl::StatusCode::kDeadlineExceeded;
  case pb::WorkerError::CODE_LAUNCH_FAILED:
    return absl::StatusCode::kAborted;
  default:
    return absl::StatusCode::kInvalidArgument;
  }
}

} // namespace

absl::StatusOr<std::unique_ptr<WorkerProcess>>
WorkerProcess::Spawn(const WorkerProcessOptions& options) {
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    return absl::InternalError(absl::StrCat("socketpair: ", std::strerror(errno)));
  }
  std::vector<std::string> argv = {options.worker_path, "--device", options.device_id, "--fd",
                                   absl::StrCat(kWorkerFd)};
  if (options.max_frame_bytes > 0) {
    argv.push_back(absl::StrCat("--max-frame-bytes=", options.max_frame_bytes));
  }
  argv.insert(argv.end(), options.extra_args.begin(), options.extra_args.end());
  util::ChildProcessOptions child_options;
  child_options.inherit = {{sockets[1], kWorkerFd}};
  child_options.memory_limit_bytes = options.memory_limit_bytes;
  absl::StatusOr<std::unique_ptr<util::ChildProcess>> child =
      util::ChildProcess::Spawn(argv, child_options);
  close(sockets[1]);
  if (!child.ok()) {
    close(sockets[0]);
    return child.status();
  }
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    close(sockets[0]);
    return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
  }
  fcntl(sockets[0], F_SETFL, O_NONBLOCK);
  return std::unique_ptr<WorkerProcess>(
      new WorkerProcess(options, *std::move(child), sockets[0], wake[0], wake[1]));
}

WorkerProcess::WorkerProcess(WorkerProcessOptions options,
                             std::unique_ptr<util::ChildProcess> child, int socket_fd,
                             int wake_read, int wake_write)
    : options_(std::move(options)), child_(std::move(child)), socket_fd_(socket_fd),
      wake_read_(wake_read), wake_write_(wake_write) {
  reader_ = std::thread([this] { ReadOutput(); });
}

WorkerProcess::~WorkerProcess() {
  child_->KillAndWait();
  {
    // The pipe reaches EOF once the group is dead; a straggler that kept it
    // open is not waited for.
    std::unique_lock<std::mutex> lock(tail_mu_);
    output_done_cv_.wait_for(lock, std::chrono::milliseconds(500), [&] { return output_done_; });
  }
  const char stop = 1;
  ssize_t ignored = write(wake_write_, &stop, 1);
  (void)ignored;
  reader_.join();
  close(socket_fd_);
  close(wake_read_);
  close(wake_write_);
}

void WorkerProcess::ReadOutput() {
  const int fd = child_->output_fd();
  std::string partial; // an unfinished line, for the sink
  char buf[4096];
  for (;;) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) break;
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    const std::string_view chunk(buf, static_cast<size_t>(n));
    {
      std::lock_guard<std::mutex> lock(tail_mu_);
      tail_.append(chunk);
      if (tail_.size() > options_.stderr_tail_bytes) {
        size_t cut = tail_.size() - options_.stderr_tail_bytes;
        const size_t line = tail_.find('\n', cut);
        if (line != std::string::npos && line + 1 < tail_.size()) cut = line + 1;
        tail_.erase(0, cut);
      }
    }
    if (options_.stderr_sink) {
      partial.append(chunk);
      size_t start = 0;
      for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
        options_.stderr_sink(options_.device_id,
                             std::string_view(partial.data() + start, nl - start));
      }
      partial.erase(0, start);
    }
  }
  if (options_.stderr_sink && !partial.empty()) options_.stderr_sink(options_.device_id, partial);
  std::lock_guard<std::mutex> lock(tail_mu_);
  output_done_ = true;
  output_done_cv_.notify_all();
}

std::string WorkerProcess::StderrTail() const {
  std::lock_guard<std::mutex> lock(tail_mu_);
  std::string tail = tail_;
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  return tail;
}

bool WorkerProcess::alive() { return !child_->Poll(); }

void WorkerProcess::Kill() { child_->KillAndWait(); }

void WorkerProcess::Reap(absl::Duration grace) {
  if (!child_->Wait(absl::ToChronoMilliseconds(grace))) child_->KillAndWait();
  std::unique_lock<std::mutex> lock(tail_mu_);
  output_done_cv_.wait_for(lock, std::chrono::milliseconds(500), [&] { return output_done_; });
}

absl::Status WorkerProcess::Lost(WorkerErrorKind kind, absl::StatusCode code, std::string_view what,
                                 pb::WorkerError::Code worker_code) {
  lost_ = true;
  return MakeWorkerError(kind, code,
                         absl::StrCat("worker for ", options_.device_id, " (pid ", child_->pid(),
                                      "): ", std::string(what)),
                         StderrTail(), worker_code);
}

absl::StatusOr<pb::WorkerResponse> WorkerProcess::Call(pb::WorkerRequest request,
                                                       absl::Time deadline, std::stop_token stop) {
  if (lost_) {
    return MakeWorkerError(WorkerErrorKind::kUnavailable, absl::StatusCode::kUnavailable,
                           absl::StrCat("worker for ", options_.device_id, " (pid ", child_->pid(),
                                        ") is gone: ", DescribeExit()));
  }
  const absl::Time start = absl::Now();
  const uint64_t id = next_request_id_++;
  request.set_request_id(id);
  const std::string name = measure::RequestKindName(request);
  measure::FrameIoOptions io;
  io.max_frame_bytes = options_.max_frame_bytes;
  io.deadline = deadline;
  io.stop = std::move(stop);

  auto timed_out = [&]() {
    Kill();
    Reap(absl::ZeroDuration());
    return Lost(WorkerErrorKind::kTimeout, absl::StatusCode::kDeadlineExceeded,
                absl::StrFormat("%s request timed out after %.3f s; the worker was killed", name,
                                absl::ToDoubleSeconds(deadline - start)));
  };
  auto cancelled = [&]() {
    Kill();
    Reap(absl::ZeroDuration());
    return Lost(WorkerErrorKind::kCancelled, absl::StatusCode::kCancelled,
                absl::StrCat(name, " request cancelled; the worker was killed to stop it"));
  };
  auto died = [&](std::string_view when) {
    Reap(options_.exit_grace);
    return Lost(WorkerErrorKind::kCrash, absl::StatusCode::kAborted,
                absl::StrCat("the worker died ", std::string(when), " a ", name, " request (",
                             DescribeExit(), ")"));
  };
  auto broke = [&](const std::string& what) {
    Kill();
    Reap(absl::ZeroDuration());
    return Lost(
        WorkerErrorKind::kProtocol, absl::StatusCode::kInternal,
        absl::StrCat("protocol error on a ", name, " request: ", what, "; the worker was killed"));
  };

  if (absl::Status s = measure::WriteMessage(socket_fd_, request, io); !s.ok()) {
    if (absl::IsResourceExhausted(s)) return s; // nothing was sent
    if (absl::IsDeadlineExceeded(s)) return timed_out();
    if (absl::IsCancelled(s)) return cancelled();
    return died("before taking");
  }
  pb::WorkerResponse response;
  if (absl::Status s = measure::ReadMessage(socket_fd_, &response, io); !s.ok()) {
    if (absl::IsDeadlineExceeded(s)) return timed_out();
    if (absl::IsCancelled(s)) return cancelled();
    if (absl::IsOutOfRange(s) || absl::IsUnavailable(s) ||
        (absl::IsDataLoss(s) && s.message().find("truncated") != std::string_view::npos)) {
      return died("while running");
    }
    return broke(absl::StrCat(s.message()));
  }
  if (response.request_id() != id) {
    return broke(absl::StrCat("answer for request ", response.request_id(), ", expected ", id));
  }
  if (response.has_error()) {
    const pb::WorkerError& error = response.error();
    const std::string message =
        absl::StrCat(pb::WorkerError::Code_Name(error.code()), ": ", error.message());
    if (error.code() == pb::WorkerError::CODE_LAUNCH_FAILED) {
      // It exits by itself after answering.
      Reap(options_.exit_grace);
      return Lost(WorkerErrorKind::kLaunchFailed, absl::StatusCode::kAborted,
                  absl::StrCat("the kernel failed on a ", name, " request: ", message,
                               " (the worker exited: ", DescribeExit(), ")"),
                  error.code());
    }
    return MakeWorkerError(
        WorkerErrorKind::kWorkerError, CodeForWorkerError(error.code()),
        absl::StrCat("worker for ", options_.device_id, ": ", name, " request failed: ", message),
        {}, error.code());
  }
  return response;
}

} // namespace kiln::server
