#include "util/child_process.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace kiln::util {
namespace {

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

std::string ErrnoText(int err) {
  char buf[256];
  return std::string(strerror_r(err, buf, sizeof(buf)));
}

// Why the child could not reach exec, sent through a close-on-exec pipe.
struct ChildFailure {
  int stage;
  int err;
};
enum Stage : int { kStageDup = 1, kStageRlimit = 2, kStageExec = 3, kStageParentGone = 4 };

[[noreturn]] void ChildFail(int report_fd, int stage) {
  ChildFailure failure{stage, errno};
  ssize_t ignored = write(report_fd, &failure, sizeof(failure));
  (void)ignored;
  _exit(127);
}

struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  int null_fd;
  int output_fd; // write end, or -1
  int report_fd;
  const std::vector<std::pair<int, int>>* inherit;
  const rlimit* memory_limit;
  int death_signal;
  pid_t parent;
};

// Runs in the forked child: async-signal-safe calls only (everything was
// prepared before fork).
[[noreturn]] void ChildMain(const ChildPlan& plan) {
  setpgid(0, 0);
  if (plan.death_signal != 0) {
    prctl(PR_SET_PDEATHSIG, plan.death_signal);
    // The parent may have gone before prctl took effect.
    if (getppid() != plan.parent) ChildFail(plan.report_fd, kStageParentGone);
  }
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  }
  // Lift every source above every target first, so that a dup2 cannot
  // clobber a descriptor still to be moved.
  int highest = 2;
  for (const auto& [from, to] : *plan.inherit) highest = std::max(highest, to);
  int report_fd = fcntl(plan.report_fd, F_DUPFD_CLOEXEC, highest + 1);
  if (report_fd < 0) ChildFail(plan.report_fd, kStageDup);
  const int null_fd = fcntl(plan.null_fd, F_DUPFD_CLOEXEC, highest + 1);
  const int out_fd = plan.output_fd >= 0 ? fcntl(plan.output_fd, F_DUPFD_CLOEXEC, highest + 1) : -1;
  if (null_fd < 0 || (plan.output_fd >= 0 && out_fd < 0)) ChildFail(report_fd, kStageDup);
  int lifted[64];
  const size_t n = std::min<size_t>(plan.inherit->size(), 64);
  for (size_t i = 0; i < n; ++i) {
    lifted[i] = fcntl((*plan.inherit)[i].first, F_DUPFD_CLOEXEC, highest + 1);
    if (lifted[i] < 0) ChildFail(report_fd, kStageDup);
  }
  if (dup2(null_fd, STDIN_FILENO) < 0) ChildFail(report_fd, kStageDup);
  if (out_fd >= 0 && (dup2(out_fd, STDOUT_FILENO) < 0 || dup2(out_fd, STDERR_FILENO) < 0)) {
    ChildFail(report_fd, kStageDup);
  }
  // Everything above stderr closes on exec, except the inherited numbers
  // (dup2 clears close-on-exec on its target).
  syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  for (size_t i = 0; i < n; ++i) {
    if (dup2(lifted[i], (*plan.inherit)[i].second) < 0) ChildFail(report_fd, kStageDup);
  }
  if (plan.memory_limit != nullptr && setrlimit(RLIMIT_AS, plan.memory_limit) != 0) {
    ChildFail(report_fd, kStageRlimit);
  }
  execve(plan.path, plan.argv, plan.envp);
  ChildFail(report_fd, kStageExec);
}

std::vector<std::string> BuildEnvironment(const ChildProcessOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    const bool replaced = std::any_of(options.extra_env.begin(), options.extra_env.end(),
                                      [&](const auto& kv) { return kv.first == name; });
    if (!replaced) env.push_back(std::move(entry));
  }
  for (const auto& [key, value] : options.extra_env) env.push_back(absl::StrCat(key, "=", value));
  return env;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

void CloseIfOpen(int fd) {
  if (fd >= 0) close(fd);
}

} // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>>
ChildProcess::Spawn(const std::vector<std::string>& argv, const ChildProcessOptions& options) {
  if (argv.empty() || argv[0].find('/') == std::string::npos) {
    return absl::InvalidArgumentError("ChildProcess: argv[0] must be a path containing '/'");
  }
  for (const std::string& arg : argv) {
    if (arg.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError("ChildProcess: an argument contains a NUL byte");
    }
  }
  if (options.inherit.size() > 64 || options.memory_limit_bytes < 0) {
    return absl::InvalidArgumentError("ChildProcess: too many descriptors or a negative limit");
  }
  std::vector<int> targets;
  for (const auto& [from, to] : options.inherit) {
    if (from < 0 || to < 3 || fcntl(from, F_GETFD) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("ChildProcess: cannot pass descriptor ", from, " as ", to));
    }
    if (std::find(targets.begin(), targets.end(), to) != targets.end()) {
      return absl::InvalidArgumentError(absl::StrCat("ChildProcess: descriptor ", to, " twice"));
    }
    targets.push_back(to);
  }

  std::vector<char*> c_argv = CStrings(argv);
  std::vector<std::string> env = BuildEnvironment(options);
  std::vector<char*> c_env = CStrings(env);
  rlimit limit{};
  limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(options.memory_limit_bytes);

  // The child's stdin: the read end of a pipe whose write end is closed, so
  // a read sees end-of-file at once. Not /dev/null: a sandbox may have a
  // regular file there that other processes write into (seen on a CI
  // machine: `cat` in a child printed a stray byte).
  int stdin_pipe[2] = {-1, -1};
  if (pipe2(stdin_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe2: ", ErrnoText(errno)));
  }
  close(stdin_pipe[1]);
  const int null_fd = stdin_pipe[0];
  int out_pipe[2] = {-1, -1};
  int report_pipe[2] = {-1, -1};
  if ((options.capture_output && pipe2(out_pipe, O_CLOEXEC) != 0) ||
      pipe2(report_pipe, O_CLOEXEC) != 0) {
    const int err = errno;
    for (int fd : {null_fd, out_pipe[0], out_pipe[1], report_pipe[0], report_pipe[1]}) {
      CloseIfOpen(fd);
    }
    return absl::InternalError(absl::StrCat("pipe2: ", ErrnoText(err)));
  }
  ChildPlan plan{argv[0].c_str(),
                 c_argv.data(),
                 c_env.data(),
                 null_fd,
                 out_pipe[1],
                 report_pipe[1],
                 &options.inherit,
                 options.memory_limit_bytes > 0 ? &limit : nullptr,
                 options.parent_death_signal,
                 getpid()};
  const pid_t pid = fork();
  if (pid == 0) ChildMain(plan);
  const int fork_errno = errno;
  close(null_fd);
  CloseIfOpen(out_pipe[1]);
  close(report_pipe[1]);
  if (pid < 0) {
    CloseIfOpen(out_pipe[0]);
    close(report_pipe[0]);
    return absl::InternalError(absl::StrCat("fork: ", ErrnoText(fork_errno)));
  }
  // Also from here, so the group exists before anyone signals it.
  setpgid(pid, pid);

  ChildFailure failure{};
  ssize_t got;
  do {
    got = read(report_pipe[0], &failure, sizeof(failure));
  } while (got < 0 && errno == EINTR);
  close(report_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof(failure))) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    CloseIfOpen(out_pipe[0]);
    const std::string reason = ErrnoText(failure.err);
    switch (failure.stage) {
    case kStageExec: {
      const std::string message = absl::StrCat("cannot execute '", argv[0], "': ", reason);
      if (failure.err == ENOENT) return absl::NotFoundError(message);
      if (failure.err == EACCES) return absl::PermissionDeniedError(message);
      return absl::InternalError(message);
    }
    case kStageRlimit:
      return absl::InvalidArgumentError(
          absl::StrCat("cannot set a memory limit for '", argv[0], "': ", reason));
    case kStageParentGone:
      return absl::InternalError(absl::StrCat("'", argv[0], "' lost its parent while starting"));
    default:
      return absl::InternalError(
          absl::StrCat("cannot set up descriptors for '", argv[0], "': ", reason));
    }
  }
  if (out_pipe[0] >= 0) fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) fcntl(pidfd, F_SETFD, FD_CLOEXEC);
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, out_pipe[0], pidfd < 0 ? -1 : pidfd));
}

ChildProcess::~ChildProcess() {
  KillAndWait();
  CloseIfOpen(output_fd_);
  CloseIfOpen(pidfd_);
}

void ChildProcess::Signal(int sig) {
  std::lock_guard<std::mutex> lock(mu_);
  if (reaped_) return;
  kill(-pid_, sig);
  kill(pid_, sig); // in case it is still between fork and setpgid
}

bool ChildProcess::PollLocked() {
  if (reaped_) return true;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    reaped_ = true;
    status_ = r == pid_ ? status : 0;
  }
  return reaped_;
}

bool ChildProcess::Poll() {
  std::lock_guard<std::mutex> lock(mu_);
  return PollLocked();
}

bool ChildProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (Poll()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    } else {
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(5)));
    }
  }
}

void ChildProcess::KillAndWait() {
  Signal(SIGKILL);
  while (!Wait(std::chrono::hours(1))) {
  }
}

bool ChildProcess::exited() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reaped_ && WIFEXITED(status_);
}

int ChildProcess::exit_code() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reaped_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
}

int ChildProcess::term_signal() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reaped_ && WIFSIGNALED(status_) ? WTERMSIG(status_) : 0;
}

std::string ChildProcess::DescribeExit() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!reaped_) return "running";
  if (WIFEXITED(status_)) return absl::StrCat("exit code ", WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) {
    const int sig = WTERMSIG(status_);
    const char* name = sigdescr_np(sig);
    return absl::StrCat("killed by signal ", sig, " (", name != nullptr ? name : "unknown", ")");
  }
  return "ended";
}

} // namespace kiln::util
