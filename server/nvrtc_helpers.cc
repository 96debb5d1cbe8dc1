#include "server/nvrtc_helpers.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include <sys/socket.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler/toolchain/nvrtc.h"
#include "kiln/v1/toolchain.pb.h"
#include "tuner/measure/compile_helper.h"
#include "tuner/measure/frame_io.h"
#include "util/log.h"

namespace kiln::server {
namespace {

constexpr auto kExitGrace = std::chrono::milliseconds(2000);

std::string Who(pid_t pid) {
  return absl::StrCat("NVRTC helper (kiln-worker --compile, pid ", pid, ")");
}

std::string What(const toolchain::CudaCompileInput& in) {
  return absl::StrCat("'", in.program_name, "' for ", in.arch);
}

} // namespace

NvrtcHelpers::Helper::~Helper() {
  if (fd >= 0) close(fd);
  // child's destructor kills the process group and reaps it.
}

absl::StatusOr<std::unique_ptr<NvrtcHelpers>> NvrtcHelpers::Create(NvrtcHelperOptions options) {
  if (options.max_helpers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("NvrtcHelpers: max_helpers must be >= 1, got ", options.max_helpers));
  }
  if (options.worker_path.find('/') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("NvrtcHelpers: worker_path must be a path, got '", options.worker_path, "'"));
  }
  return std::unique_ptr<NvrtcHelpers>(new NvrtcHelpers(std::move(options)));
}

NvrtcHelpers::~NvrtcHelpers() {
  std::thread prewarm;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    prewarm = std::move(prewarm_);
  }
  freed_.notify_all();
  if (prewarm.joinable()) prewarm.join();
  std::vector<std::unique_ptr<Helper>> idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle.swap(idle_);
  }
  // Each one's socket closes and its process group is killed.
}

absl::StatusOr<std::unique_ptr<NvrtcHelpers::Helper>> NvrtcHelpers::Spawn() const {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return absl::InternalError(absl::StrCat("socketpair for an NVRTC helper: ", strerror(errno)));
  }
  std::vector<std::string> argv = {options_.worker_path,
                                   "--compile",
                                   "--fd",
                                   "3",
                                   "--max-frame-bytes",
                                   absl::StrCat(options_.max_frame_bytes)};
  if (!options_.warm_arch.empty()) {
    argv.emplace_back("--warm-arch");
    argv.push_back(options_.warm_arch);
  }
  util::ChildProcessOptions co;
  co.inherit = {{sv[1], 3}};
  // Its stderr (a crash report) goes to kilnd's. No parent-death signal:
  // helpers outlive the thread that happened to start them, and one whose
  // kilnd died reads end-of-file on its socket and exits.
  co.capture_output = false;
  co.parent_death_signal = 0;
  absl::StatusOr<std::unique_ptr<util::ChildProcess>> child = util::ChildProcess::Spawn(argv, co);
  close(sv[1]);
  if (!child.ok()) {
    close(sv[0]);
    return child.status();
  }
  auto helper = std::make_unique<Helper>();
  helper->child = *std::move(child);
  helper->fd = sv[0];
  return helper;
}

absl::StatusOr<std::unique_ptr<NvrtcHelpers::Helper>> NvrtcHelpers::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (stopping_) return absl::FailedPreconditionError("the NVRTC helpers are shutting down");
    while (!idle_.empty()) {
      // Last in, first out: the most recently used helper is the warmest.
      std::unique_ptr<Helper> helper = std::move(idle_.back());
      idle_.pop_back();
      if (!helper->child->Poll()) return helper;
      util::LogWarning(absl::StrCat(Who(helper->child->pid()), " ended while idle (",
                                    helper->child->DescribeExit(), "); starting another"),
                       {{"component", "compile"}});
      --live_;
      ++stats_.lost;
    }
    if (live_ < options_.max_helpers) {
      if (absl::Now() < no_spawn_until_) return spawn_error_;
      return SpawnCounted(lock);
    }
    freed_.wait(lock);
  }
}

absl::StatusOr<std::unique_ptr<NvrtcHelpers::Helper>>
NvrtcHelpers::SpawnCounted(std::unique_lock<std::mutex>& lock) {
  ++live_; // the slot is taken while the helper starts, outside the lock
  lock.unlock();
  absl::StatusOr<std::unique_ptr<Helper>> helper = Spawn();
  lock.lock();
  if (!helper.ok()) {
    --live_;
    no_spawn_until_ = absl::Now() + options_.spawn_backoff;
    spawn_error_ = helper.status();
    freed_.notify_one();
    return helper.status();
  }
  ++stats_.started;
  return helper;
}

void NvrtcHelpers::Release(std::unique_ptr<Helper> helper) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.builds;
    idle_.push_back(std::move(helper));
  }
  freed_.notify_one();
}

void NvrtcHelpers::Lose(std::unique_ptr<Helper> helper) {
  helper->child->KillAndWait();
  helper.reset();
  {
    std::lock_guard<std::mutex> lock(mu_);
    --live_;
    ++stats_.lost;
  }
  freed_.notify_one();
}

std::string NvrtcHelpers::LoseAfterExit(std::unique_ptr<Helper> helper) {
  helper->child->Wait(kExitGrace);
  std::string how = helper->child->DescribeExit();
  Lose(std::move(helper));
  return how;
}

absl::StatusOr<toolchain::CompileOutput>
NvrtcHelpers::InProcess(const toolchain::CudaCompileInput& in, const absl::Status& why) {
  bool warn = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.in_process;
    warn = !std::exchange(warned_, true);
  }
  if (warn) {
    util::LogWarning(absl::StrCat("no NVRTC helper could be started (", why.message(),
                                  "): CUDA builds run in kilnd's process until one can"),
                     {{"component", "compile"}});
  }
  absl::StatusOr<const toolchain::NvrtcLibrary*> library = toolchain::DefaultNvrtc();
  if (!library.ok()) return library.status();
  return (*library)->Compile(in);
}

absl::StatusOr<toolchain::CompileOutput>
NvrtcHelpers::Compile(const toolchain::CudaCompileInput& in) {
  const auto start = std::chrono::steady_clock::now();
  kiln::v1::ToolchainCompileRequest request = measure::ToCompileRequest(in);
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<std::unique_ptr<Helper>> acquired = Acquire();
    if (!acquired.ok()) return InProcess(in, acquired.status());
    std::unique_ptr<Helper> helper = *std::move(acquired);
    const pid_t pid = helper->child->pid();
    request.set_request_id(helper->next_request_id++);
    measure::FrameIoOptions io;
    io.max_frame_bytes = options_.max_frame_bytes;
    io.deadline = absl::Now() + options_.build_timeout;

    if (absl::Status sent = measure::WriteMessage(helper->fd, request, io); !sent.ok()) {
      // It did not take the request: it died since it was last checked.
      // Another helper builds it, once.
      const std::string how = LoseAfterExit(std::move(helper));
      if (attempt == 0) continue;
      return absl::InternalError(absl::StrCat("cannot send the build of ", What(in), " to ",
                                              Who(pid), ": ", sent.message(), " (", how, ")"));
    }

    kiln::v1::ToolchainCompileResponse response;
    if (absl::Status got = measure::ReadMessage(helper->fd, &response, io); !got.ok()) {
      if (absl::IsDeadlineExceeded(got)) {
        Lose(std::move(helper));
        return absl::DeadlineExceededError(absl::StrCat(
            "the NVRTC build of ", What(in), " did not finish within ",
            absl::FormatDuration(options_.build_timeout), "; ", Who(pid), " was killed"));
      }
      // A crash inside NVRTC ends the stream; see how the helper ended.
      const std::string how = LoseAfterExit(std::move(helper));
      return absl::InternalError(absl::StrCat("the ", Who(pid), " building ", What(in),
                                              " failed: ", how, " (", got.message(),
                                              "); kilnd's log has its report"));
    }
    if (response.request_id() != request.request_id()) {
      Lose(std::move(helper));
      return absl::InternalError(absl::StrCat(Who(pid), " answered request ", response.request_id(),
                                              ", expected ", request.request_id()));
    }
    Release(std::move(helper));
    absl::StatusOr<toolchain::CompileOutput> out = measure::FromCompileResponse(response);
    if (out.ok()) out->elapsed = std::chrono::steady_clock::now() - start;
    return out;
  }
}

void NvrtcHelpers::Prewarm(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || prewarm_.joinable()) return;
  const int target = std::min(n, options_.max_helpers);
  prewarm_ = std::thread([this, target] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_ && live_ < target) {
      absl::StatusOr<std::unique_ptr<Helper>> helper = SpawnCounted(lock);
      if (!helper.ok()) {
        util::LogWarning(absl::StrCat("cannot start an NVRTC helper: ", helper.status().message()),
                         {{"component", "compile"}});
        break;
      }
      idle_.push_back(*std::move(helper));
      freed_.notify_one();
    }
  });
}

NvrtcHelperStats NvrtcHelpers::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  NvrtcHelperStats s = stats_;
  s.idle = static_cast<int>(idle_.size());
  s.live = live_;
  return s;
}

std::vector<pid_t> NvrtcHelpers::IdlePids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<pid_t> pids;
  for (const std::unique_ptr<Helper>& h : idle_) pids.push_back(h->child->pid());
  return pids;
}

} // namespace kiln::server
