// A long-lived child process (RunSubprocess in subprocess.h is for children
// that run to completion): argv without a shell, chosen descriptors
// inherited at chosen numbers and nothing else above stderr, stdin at
// end-of-file (an empty pipe), stdout and stderr into one pipe the caller reads, its own
// process group, a parent-death signal and an optional address-space limit.
// The object owns the child: destroying it kills the process group (SIGKILL)
// and reaps the child.
//
// The parent-death signal (PR_SET_PDEATHSIG) fires when the *thread* that
// spawned the child exits, not only the process; spawn from a thread that
// lives as long as the child should.
//
// Thread-safety: all methods may be called from several threads; the exit
// status is reaped once, under a lock, and signals go to the group only
// while the child is unreaped (its pid cannot have been reused then).
//
// Errors (Spawn): InvalidArgument for an empty argv, a program without a
// '/', an argument with a NUL byte or a bad descriptor mapping; NotFound /
// PermissionDenied / Internal when the program cannot be executed (the
// message names it); Internal when a pipe or fork fails.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "absl/status/statusor.h"

namespace kiln::util {

struct ChildProcessOptions {
  // (descriptor here, its number in the child); numbers must be >= 3 and
  // distinct. The child gets these, 0, 1 and 2, and nothing else.
  std::vector<std::pair<int, int>> inherit;
  // true: stdout and stderr go to a pipe whose read end is output_fd();
  // false: the child shares the caller's.
  bool capture_output = true;
  // RLIMIT_AS in the child; 0 means none.
  int64_t memory_limit_bytes = 0;
  // Delivered to the child when the spawning thread exits; 0 means none.
  int parent_death_signal = 9; // SIGKILL
  // Variables added to (or replacing those of) the caller's environment.
  std::vector<std::pair<std::string, std::string>> extra_env;
};

class ChildProcess {
 public:
  // Starts argv[0] (a path containing '/') with argv[1..]. Returns once the
  // child has exec'd.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& argv,
                                                             const ChildProcessOptions& options);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The read end of the output pipe (non-blocking, close-on-exec), or -1.
  // Owned by this object; it reaches end-of-file once every process holding
  // the write end has exited.
  int output_fd() const { return output_fd_; }

  // Sends `sig` to the child's process group, unless it has been reaped.
  void Signal(int sig);
  // Reaps the child if it has exited; true once it has (now or before).
  bool Poll();
  // Waits up to `timeout` for the child to exit; true once it has.
  bool Wait(std::chrono::milliseconds timeout);
  // SIGKILL to the group, then waits for the child.
  void KillAndWait();

  // After exit: whether it exited normally (exit_code) or by a signal
  // (term_signal).
  bool exited() const;
  int exit_code() const;
  int term_signal() const;
  // "exit code 3", "killed by signal 11 (Segmentation fault)", or "running".
  std::string DescribeExit() const;

 private:
  ChildProcess(pid_t pid, int output_fd, int pidfd)
      : pid_(pid), output_fd_(output_fd), pidfd_(pidfd) {}
  bool PollLocked();

  const pid_t pid_;
  const int output_fd_;
  const int pidfd_; // -1 where pidfd_open is unavailable

  mutable std::mutex mu_;
  bool reaped_ = false; // guarded by mu_
  int status_ = 0;      // guarded by mu_; waitpid's status once reaped
};

} // namespace kiln::util
