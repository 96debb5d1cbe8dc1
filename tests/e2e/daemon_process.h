// Test helper: runs the real kilnd binary as a child process on a loopback
// port chosen by the kernel (--listen=127.0.0.1:0), waits for its
// "listening on HOST:PORT" line, and stops it with SIGTERM.
#pragma once

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kiln::testing {

// The kilnd an e2e test starts: this build's, or the one KILN_E2E_KILND
// names (an older build, to show that a test fails without its fix).
inline std::string KilndUnderTest() {
  const char* other = std::getenv("KILN_E2E_KILND");
  return other != nullptr && *other != '\0' ? other : std::string(KILN_BINARY_DIR) + "/kilnd";
}

class DaemonProcess {
 public:
  DaemonProcess() = default;
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;
  ~DaemonProcess() { Stop(); }

  // Starts `binary args...`; returns false (with output() holding what it
  // printed) if it exits or prints nothing useful within `timeout`.
  bool Start(const std::string& binary, const std::vector<std::string>& args,
             std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    int fds[2];
    if (pipe(fds) != 0) return false;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(binary.c_str()));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    close(fds[1]);
    out_fd_ = fds[0];
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_fd_, POLLIN, 0};
      if (poll(&p, 1, 100) > 0) {
        char buf[4096];
        ssize_t n = read(out_fd_, buf, sizeof(buf));
        if (n <= 0) return false; // exited
        output_.append(buf, static_cast<size_t>(n));
        size_t at = output_.find("listening on ");
        if (at != std::string::npos) {
          size_t end = output_.find_first_of(" \n", at + 13);
          if (end != std::string::npos) {
            address_ = output_.substr(at + 13, end - (at + 13));
            return true;
          }
        }
      }
    }
    return false;
  }

  // Sends SIGTERM and waits; returns the exit status (or -1).
  int Stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    DrainOutput();
    if (out_fd_ >= 0) close(out_fd_);
    out_fd_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // SIGKILL (a crash: no shutdown code runs) and waits.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    DrainOutput();
    if (out_fd_ >= 0) close(out_fd_);
    out_fd_ = -1;
  }

  // Waits for the process to exit by itself; returns its exit status.
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    DrainOutput();
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  const std::string& output() const { return output_; }

 private:
  void DrainOutput() {
    if (out_fd_ < 0) return;
    char buf[4096];
    ssize_t n;
    while ((n = read(out_fd_, buf, sizeof(buf))) > 0) output_.append(buf, static_cast<size_t>(n));
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string output_;
  std::string address_;
};

} // namespace kiln::testing
