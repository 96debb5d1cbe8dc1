#include "util/subprocess.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace kiln::util {
namespace {

using Clock = std::chrono::steady_clock;

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

// After the direct child exits, output held open by a process that left the
// group (setsid) is drained for at most this long.
constexpr std::chrono::milliseconds kDrainAfterExit{2000};
// Exit polling interval where pidfd_open is unavailable.
constexpr std::chrono::milliseconds kExitPollTick{10};

// What the child reports through the exec-status pipe when a step fails.
enum class ChildStage : int { kSetrlimit = 1, kChdir = 2, kExec = 3, kDup = 4 };
struct ChildFailure {
  int stage;
  int err;
};

std::string ErrnoText(int err) {
  char buf[256];
  // GNU strerror_r returns the message (not necessarily in buf).
  return std::string(strerror_r(err, buf, sizeof(buf)));
}

absl::Status ErrnoStatus(int err, const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", ErrnoText(err)));
}

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  int get() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  void Reset(int fd) {
    Close();
    fd_ = fd;
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

absl::Status MakePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe2");
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
  return absl::OkStatus();
}

std::string LookupEnv(const SubprocessOptions& options, const std::string& name) {
  for (const auto& [key, value] : options.extra_env) {
    if (key == name) return value;
  }
  const char* value = getenv(name.c_str());
  return value == nullptr ? std::string() : std::string(value);
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// Resolves the program in PATH before forking, so the child only calls
// execve (execvp may allocate, which is unsafe after fork in a threaded
// process) and a missing program is reported without starting anything.
absl::StatusOr<std::string> ResolveProgram(const std::string& program,
                                           const SubprocessOptions& options) {
  if (program.find('/') != std::string::npos) return program;
  std::string path = LookupEnv(options, "PATH");
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", program);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return absl::NotFoundError(
      absl::StrCat("cannot execute '", program, "': not found in PATH (", path, ")"));
}

std::vector<std::string> BuildEnvironment(const SubprocessOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    bool overridden = std::any_of(options.extra_env.begin(), options.extra_env.end(),
                                  [&](const auto& kv) { return kv.first == name; });
    if (!overridden) env.push_back(std::move(entry));
  }
  for (const auto& [key, value] : options.extra_env) env.push_back(absl::StrCat(key, "=", value));
  return env;
}

std::vector<char*> CStringArray(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

[[noreturn]] void ChildFail(int report_fd, ChildStage stage) {
  ChildFailure failure{static_cast<int>(stage), errno};
  ssize_t ignored = write(report_fd, &failure, sizeof(failure));
  (void)ignored;
  _exit(127);
}

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void ChildMain(int in_fd, int out_fd, int err_fd, int report_fd, const char* path,
                            char* const* argv, char* const* envp, const rlimit* memory_limit,
                            const char* working_dir) {
  setpgid(0, 0);
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  }
  // Lift every descriptor above 2 first so dup2 cannot clobber one that
  // happens to be 0..2 (a parent that closed its own stdin).
  int fds[4] = {in_fd, out_fd, err_fd, report_fd};
  for (int& fd : fds) {
    fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) ChildFail(report_fd, ChildStage::kDup);
  }
  report_fd = fds[3];
  for (int target = 0; target < 3; ++target) {
    if (dup2(fds[target], target) < 0) ChildFail(report_fd, ChildStage::kDup);
  }
  // Descriptors the caller opened without O_CLOEXEC must not leak into the
  // sandboxed program; failure (old kernel) is tolerated.
  syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  if (memory_limit != nullptr && setrlimit(RLIMIT_AS, memory_limit) != 0) {
    ChildFail(report_fd, ChildStage::kSetrlimit);
  }
  if (working_dir != nullptr && chdir(working_dir) != 0) ChildFail(report_fd, ChildStage::kChdir);
  execve(path, argv, envp);
  ChildFail(report_fd, ChildStage::kExec);
}

absl::Status ChildFailureStatus(const ChildFailure& failure, const std::string& program,
                                const SubprocessOptions& options) {
  std::string reason = ErrnoText(failure.err);
  switch (static_cast<ChildStage>(failure.stage)) {
  case ChildStage::kSetrlimit:
    return absl::InvalidArgumentError(absl::StrCat("cannot set memory limit of ",
                                                   options.memory_limit_bytes, " bytes for '",
                                                   program, "': ", reason));
  case ChildStage::kChdir:
    return absl::NotFoundError(absl::StrCat("cannot enter working directory '", options.working_dir,
                                            "' for '", program, "': ", reason));
  case ChildStage::kDup:
    return absl::InternalError(absl::StrCat("cannot set up stdio for '", program, "': ", reason));
  case ChildStage::kExec:
    break;
  }
  std::string message = absl::StrCat("cannot execute '", program, "': ", reason);
  if (failure.err == ENOENT) return absl::NotFoundError(message);
  if (failure.err == EACCES) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

// Blocks SIGPIPE in the calling thread for its lifetime, so writing to a
// child that closed its stdin yields EPIPE instead of killing the caller, and
// swallows a SIGPIPE this thread caused. Only this thread is affected.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask_);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ~ScopedSigpipeBlock() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      sigset_t pipe_set;
      sigemptyset(&pipe_set);
      sigaddset(&pipe_set, SIGPIPE);
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }

 private:
  sigset_t old_mask_;
  bool was_pending_ = false;
};

// Accumulates one output stream up to a cap.
struct Capture {
  std::string* data;
  bool* truncated;
  size_t cap;

  void Append(const char* bytes, size_t n) {
    size_t room = cap > data->size() ? cap - data->size() : 0;
    if (n > room) *truncated = true;
    data->append(bytes, std::min(n, room));
  }
};

// Reads what is available; returns false at EOF or on a hard error.
bool ReadInto(int fd, Capture& capture) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      capture.Append(buf, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    return false;
  }
}

// True once `pid` has exited; it stays a zombie (not reaped), so its pid and
// process group id cannot be reused while the group is killed.
bool HasExited(pid_t pid) {
  siginfo_t info;
  memset(&info, 0, sizeof(info));
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    return errno == ECHILD;
  }
  return info.si_pid == pid;
}

} // namespace

std::string SubprocessResult::DescribeTermination() const {
  if (timed_out) {
    char seconds[32];
    snprintf(seconds, sizeof(seconds), "%.2f", std::chrono::duration<double>(wall_time).count());
    return absl::StrCat("timed out after ", seconds, " s");
  }
  if (exited) return absl::StrCat("exit code ", exit_code);
  if (signaled) {
    const char* name = sigdescr_np(term_signal);
    return absl::StrCat("killed by signal ", term_signal, " (", name ? name : "unknown", ")");
  }
  return "unknown termination";
}

absl::StatusOr<SubprocessResult> RunSubprocess(const std::vector<std::string>& argv,
                                               const SubprocessOptions& options) {
  if (argv.empty() || argv[0].empty()) {
    return absl::InvalidArgumentError("RunSubprocess: empty argv");
  }
  if (options.memory_limit_bytes < 0) {
    return absl::InvalidArgumentError("RunSubprocess: negative memory limit");
  }
  for (const std::string& arg : argv) {
    if (arg.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError("RunSubprocess: argument contains a NUL byte");
    }
  }
  const std::string& program = argv[0];
  auto resolved = ResolveProgram(program, options);
  if (!resolved.ok()) return resolved.status();

  // Everything the child touches is built before fork().
  std::vector<char*> c_argv = CStringArray(argv);
  std::vector<std::string> env = BuildEnvironment(options);
  std::vector<char*> c_env = CStringArray(env);
  rlimit limit{};
  if (options.memory_limit_bytes > 0) {
    limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(options.memory_limit_bytes);
  }

  Fd in_read, in_write, out_read, out_write, err_read, err_write, report_read, report_write;
  for (auto [r, w] : {std::pair<Fd*, Fd*>{&in_read, &in_write},
                      {&out_read, &out_write},
                      {&err_read, &err_write},
                      {&report_read, &report_write}}) {
    if (absl::Status s = MakePipe(*r, *w); !s.ok()) return s;
  }

  ScopedSigpipeBlock sigpipe_block;
  const Clock::time_point start = Clock::now();
  pid_t pid = fork();
  if (pid < 0) return ErrnoStatus(errno, "fork");
  if (pid == 0) {
    ChildMain(in_read.get(), out_write.get(), err_write.get(), report_write.get(),
              resolved->c_str(), c_argv.data(), c_env.data(),
              options.memory_limit_bytes > 0 ? &limit : nullptr,
              options.working_dir.empty() ? nullptr : options.working_dir.c_str());
  }
  // Also set from the parent, so the group exists before a kill even if the
  // child has not yet run (either call may lose the race harmlessly).
  setpgid(pid, pid);
  in_read.Close();
  out_write.Close();
  err_write.Close();
  report_write.Close();

  // The report pipe closes on a successful exec (O_CLOEXEC) or carries why
  // the child could not get there.
  ChildFailure failure{};
  ssize_t got;
  do {
    got = read(report_read.get(), &failure, sizeof(failure));
  } while (got < 0 && errno == EINTR);
  report_read.Close();
  if (got == static_cast<ssize_t>(sizeof(failure))) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return ChildFailureStatus(failure, program, options);
  }

  SubprocessResult result;
  Capture out{&result.stdout_data, &result.stdout_truncated, options.max_output_bytes};
  Capture err{&result.stderr_data, &result.stderr_truncated, options.max_output_bytes};
  fcntl(in_write.get(), F_SETFL, O_NONBLOCK);
  fcntl(out_read.get(), F_SETFL, O_NONBLOCK);
  fcntl(err_read.get(), F_SETFL, O_NONBLOCK);
  size_t stdin_offset = 0;
  if (options.stdin_data.empty()) in_write.Close();

  // A pidfd turns "the child exited" into a poll() event; without one
  // (kernel < 5.3) the loop wakes every kExitPollTick to check.
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  const bool has_deadline = options.timeout.count() > 0;
  const Clock::time_point deadline = start + options.timeout;
  bool exited = false;
  Clock::time_point drain_deadline{};

  for (;;) {
    if (!exited && HasExited(pid)) {
      exited = true;
      // Stragglers in the group would hold the pipes open; the zombie keeps
      // the group id from being reused until we reap it below.
      kill(-pid, SIGKILL);
      in_write.Close();
      drain_deadline = Clock::now() + kDrainAfterExit;
    }
    if (exited && !out_read.open() && !err_read.open()) break;

    Clock::time_point wake = Clock::time_point::max();
    if (has_deadline) wake = deadline;
    if (exited) wake = std::min(wake, drain_deadline);
    if (!exited && !pidfd.open()) wake = std::min(wake, Clock::now() + kExitPollTick);
    const Clock::time_point now = Clock::now();
    if (wake != Clock::time_point::max() && now >= wake) {
      if (exited) break; // output held open by an escaped process
      if (has_deadline && now >= deadline) {
        kill(-pid, SIGKILL);
        result.timed_out = true;
        break;
      }
    }
    int timeout_ms = -1;
    if (wake != Clock::time_point::max()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(wake - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
    }

    pollfd fds[4];
    int nfds = 0;
    int in_idx = -1, out_idx = -1, err_idx = -1;
    if (in_write.open()) {
      in_idx = nfds;
      fds[nfds++] = {in_write.get(), POLLOUT, 0};
    }
    if (out_read.open()) {
      out_idx = nfds;
      fds[nfds++] = {out_read.get(), POLLIN, 0};
    }
    if (err_read.open()) {
      err_idx = nfds;
      fds[nfds++] = {err_read.get(), POLLIN, 0};
    }
    if (!exited && pidfd.open()) fds[nfds++] = {pidfd.get(), POLLIN, 0};
    int ready = poll(fds, static_cast<nfds_t>(nfds), timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      kill(-pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      return ErrnoStatus(saved, "poll");
    }
    if (in_idx >= 0 && fds[in_idx].revents != 0) {
      if (fds[in_idx].revents & (POLLERR | POLLHUP)) {
        in_write.Close();
      } else {
        const size_t chunk = std::min<size_t>(options.stdin_data.size() - stdin_offset, 65536);
        ssize_t n = write(in_write.get(), options.stdin_data.data() + stdin_offset, chunk);
        if (n > 0) stdin_offset += static_cast<size_t>(n);
        if ((n < 0 && errno != EAGAIN && errno != EINTR) ||
            stdin_offset == options.stdin_data.size()) {
          in_write.Close();
        }
      }
    }
    if (out_idx >= 0 && fds[out_idx].revents != 0 && !ReadInto(out_read.get(), out)) {
      out_read.Close();
    }
    if (err_idx >= 0 && fds[err_idx].revents != 0 && !ReadInto(err_read.get(), err)) {
      err_read.Close();
    }
  }

  int status = 0;
  pid_t waited;
  do {
    waited = waitpid(pid, &status, 0);
  } while (waited < 0 && errno == EINTR);
  result.wall_time = Clock::now() - start;
  if (waited == pid) {
    if (WIFEXITED(status)) {
      result.exited = true;
      result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      result.signaled = true;
      result.term_signal = WTERMSIG(status);
    }
  }
  if (result.stdout_truncated) result.stdout_data += kTruncationMarker;
  if (result.stderr_truncated) result.stderr_data += kTruncationMarker;
  return result;
}

} // namespace kiln::util
