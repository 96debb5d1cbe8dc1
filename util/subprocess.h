// Runs a program as a sandboxed child process: argv without a shell, its own
// process group, optional stdin bytes, a wall-clock timeout, an address-space
// limit, and bounded capture of stdout and stderr.
//
// The child gets a fresh process group, so a timeout (or the child's own exit)
// kills every process it started that stayed in the group; nothing is left
// running behind the caller. Stdout, stderr and stdin are serviced with poll(),
// so a child that writes megabytes to both streams while reading stdin never
// deadlocks.
//
// Thread-safety: RunSubprocess may be called from several threads at once. It
// forks, so the child only runs async-signal-safe code between fork and exec
// (everything it needs is prepared before the fork). The caller's SIGPIPE
// disposition is left alone: a child that closes stdin early shows up as a
// short write, not a signal.
//
// Errors (the returned status): InvalidArgument for an empty argv or a bad
// option; NotFound / PermissionDenied / Internal when the program cannot be
// executed (the message names the program); Internal when a pipe, fork or
// wait fails. A program that runs and then fails, crashes or times out is an
// OK status whose SubprocessResult says so.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::util {

struct SubprocessOptions {
  // Bytes written to the child's stdin, which is then closed.
  std::string stdin_data;
  // Wall-clock limit; zero or negative means none.
  std::chrono::milliseconds timeout{0};
  // RLIMIT_AS in the child (and so in everything it starts); 0 means none.
  int64_t memory_limit_bytes = 0;
  // Directory the child starts in; empty means the caller's.
  std::string working_dir;
  // Variables added to (or replacing those of) the caller's environment.
  std::vector<std::pair<std::string, std::string>> extra_env;
  // Per stream; output past the cap is read and dropped, and a marker line
  // is appended, so that a chatty child neither blocks nor exhausts memory.
  size_t max_output_bytes = 64 << 20;
};

struct SubprocessResult {
  // Exactly one of exited / signaled is true unless the wait itself failed.
  bool exited = false;
  int exit_code = -1;
  bool signaled = false;
  int term_signal = 0;
  // The timeout expired and the process group was killed (then signaled is
  // true with SIGKILL).
  bool timed_out = false;
  std::string stdout_data;
  std::string stderr_data;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::chrono::nanoseconds wall_time{0};

  bool success() const { return exited && exit_code == 0 && !timed_out; }
  // "exit code 2", "killed by signal 9 (Killed)", "timed out after 1.50 s".
  std::string DescribeTermination() const;
};

// The marker appended to a stream cut at max_output_bytes.
inline constexpr char kTruncationMarker[] = "\n[output truncated]\n";

// Runs argv[0] (searched in PATH when it has no '/') with argv[1..].
absl::StatusOr<SubprocessResult> RunSubprocess(const std::vector<std::string>& argv,
                                               const SubprocessOptions& options = {});

} // namespace kiln::util
