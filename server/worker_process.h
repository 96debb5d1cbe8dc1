// One kiln-worker child process and its end of the socketpair: spawns the
// worker for one device, sends it one framed request at a time and waits for
// the answer under a deadline and a stop token, and turns every way the
// exchange can fail into a WorkerErrorKind (worker_error.h) with the tail of
// the worker's stderr.
//
// The worker runs as a util::ChildProcess: its own process group, only the
// socket inherited (as descriptor 3), stdin /dev/null, stdout and stderr
// into a pipe that a reader thread drains into a bounded tail (and, when a
// sink is given, forwards line by line), SIGKILL if the spawning thread
// dies, and optionally an address-space limit (only sensible for the CPU
// target: the CUDA driver reserves huge address ranges).
//
// A failed exchange that loses the worker (crash, timeout, launch failure,
// cancellation while in flight, protocol error) leaves it killed and reaped:
// alive() is false from then on and the object only reports. Errors from the
// worker that it survives (an unknown module, a bad launch) come back as
// kWorkerError and the worker stays usable.
//
// Thread-safety: Call from one thread at a time (DevicePool serialises
// calls per device); alive(), pid(), StderrTail() and Kill() from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kiln/v1/worker.pb.h"
#include "server/worker_error.h"
#include "util/child_process.h"

namespace kiln::server {

struct WorkerProcessOptions {
  std::string worker_path; // the kiln-worker binary (a path with '/')
  std::string device_id;   // "cpu", "cuda:0"
  std::vector<std::string> extra_args;
  int64_t memory_limit_bytes = 0; // RLIMIT_AS; 0: none
  size_t max_frame_bytes = size_t{1} << 30;
  size_t stderr_tail_bytes = 16 << 10;
  // Called with each line the worker writes (from the reader thread).
  std::function<void(std::string_view device_id, std::string_view line)> stderr_sink;
  // How long a worker that closed its socket or answered CODE_LAUNCH_FAILED
  // gets to exit before it is killed.
  absl::Duration exit_grace = absl::Seconds(2);
};

class WorkerProcess {
 public:
  // Starts the worker. The errors of util::ChildProcess::Spawn.
  static absl::StatusOr<std::unique_ptr<WorkerProcess>> Spawn(const WorkerProcessOptions& options);
  ~WorkerProcess(); // kills and reaps the worker, joins the reader
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Sends `request` (its request_id replaced by the next of this worker) and
  // returns the answer, or an error of a kind from worker_error.h. A
  // response with `error` set becomes an error status; OK means the request
  // succeeded.
  absl::StatusOr<kiln::v1::WorkerResponse> Call(kiln::v1::WorkerRequest request,
                                                absl::Time deadline, std::stop_token stop = {});

  // False once the worker has exited (checked without blocking).
  bool alive();
  pid_t pid() const { return child_->pid(); }
  const std::string& device_id() const { return options_.device_id; }
  // The last stderr_tail_bytes the worker wrote (cut at a line start).
  std::string StderrTail() const;
  // How the worker ended ("killed by signal 11 (Segmentation fault)"), or
  // "running".
  std::string DescribeExit() const { return child_->DescribeExit(); }
  // SIGKILL to the worker's group, then reaps it.
  void Kill();

 private:
  WorkerProcess(WorkerProcessOptions options, std::unique_ptr<util::ChildProcess> child,
                int socket_fd, int wake_read, int wake_write);
  void ReadOutput();
  // Waits up to `grace` for the worker to exit, kills it otherwise, and
  // gives the reader a moment to collect the worker's last words.
  void Reap(absl::Duration grace);
  // Marks the worker lost and makes the error for `kind`.
  absl::Status
  Lost(WorkerErrorKind kind, absl::StatusCode code, std::string_view what,
       kiln::v1::WorkerError::Code worker_code = kiln::v1::WorkerError::CODE_UNSPECIFIED);

  const WorkerProcessOptions options_;
  std::unique_ptr<util::ChildProcess> child_;
  const int socket_fd_;
  const int wake_read_; // a pipe that stops the reader thread
  const int wake_write_;
  uint64_t next_request_id_ = 1; // used by Call only
  bool lost_ = false;            // used by Call only

  mutable std::mutex tail_mu_;
  std::string tail_;         // guarded by tail_mu_
  bool output_done_ = false; // guarded by tail_mu_; the pipe reached EOF
  std::condition_variable output_done_cv_;
  std::thread reader_;
};

} // namespace kiln::server
