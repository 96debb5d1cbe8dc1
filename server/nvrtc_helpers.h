// kilnd's NVRTC helper processes: a pool of `kiln-worker --compile`
// children (tuner/measure/compile_helper.h), each building one CUDA program
// at a time with its own NVRTC, so that a sweep's candidates really build in
// parallel. Builds on threads of one process contend inside NVRTC: on a
// 16-core H200 host, 16 distinct builds at once on 16 threads took 2.1-2.3x
// one build, in 16 helpers 1.2-1.5x (docs/design/toolchain.md, "NVRTC
// helper processes"). A crash or hang inside NVRTC also costs one helper
// and that build, never the daemon.
//
// Helpers start on demand up to `max_helpers` and then stay, each keeping
// its NVRTC loaded and warm (the first build in a process costs 0.3-0.6 s
// more); Prewarm starts them ahead of the first build. A helper found dead
// is replaced; one that dies or overruns `build_timeout` during a build is
// killed and that build fails (Internal, DeadlineExceeded) naming the
// program, the helper's pid and how it ended. When no helper can be started
// (the binary is missing, fork fails), the build runs in this process with
// toolchain::NvrtcLibrary, a warning is logged once, and no start is tried
// again for `spawn_backoff`.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "compiler/toolchain/cuda_compile.h"
#include "util/child_process.h"

namespace kiln::server {

struct NvrtcHelperOptions {
  std::string worker_path; // kiln-worker (a path with '/')
  int max_helpers = 1;     // >= 1
  // Passed as --warm-arch: each helper builds a small kernel for it first.
  std::string warm_arch;
  // One build's limit (NVRTC's own time; Kiln's kernels take 0.03-2 s).
  absl::Duration build_timeout = absl::Minutes(5);
  size_t max_frame_bytes = size_t{1} << 30;
  absl::Duration spawn_backoff = absl::Seconds(30);
};

struct NvrtcHelperStats {
  int64_t started = 0;    // helpers spawned
  int64_t lost = 0;       // died or were killed (idle or during a build)
  int64_t builds = 0;     // builds a helper answered (successful or not)
  int64_t in_process = 0; // builds run in this process for want of a helper
  int idle = 0;
  int live = 0; // idle + building + starting
};

class NvrtcHelpers {
 public:
  // InvalidArgument for max_helpers < 1 or a worker_path without '/'.
  // Starts no process.
  static absl::StatusOr<std::unique_ptr<NvrtcHelpers>> Create(NvrtcHelperOptions options);
  ~NvrtcHelpers(); // waits for Prewarm's thread; kills the idle helpers
  NvrtcHelpers(const NvrtcHelpers&) = delete;
  NvrtcHelpers& operator=(const NvrtcHelpers&) = delete;

  // Builds `in` in a helper (waiting for a free one when all are busy).
  absl::StatusOr<toolchain::CompileOutput> Compile(const toolchain::CudaCompileInput& in);

  // Starts helpers, on a thread of its own, until `n` (at most max_helpers)
  // are live. Returns at once.
  void Prewarm(int n);

  const NvrtcHelperOptions& options() const { return options_; }
  NvrtcHelperStats stats() const;
  // The pids of the idle helpers (tests).
  std::vector<pid_t> IdlePids() const;

 private:
  struct Helper {
    std::unique_ptr<util::ChildProcess> child;
    int fd = -1; // our end of the socketpair
    uint64_t next_request_id = 1;
    ~Helper();
  };
  explicit NvrtcHelpers(NvrtcHelperOptions options) : options_(std::move(options)) {}
  absl::StatusOr<std::unique_ptr<Helper>> Spawn() const;
  // A live helper, or the reason none could be had (Spawn's error).
  absl::StatusOr<std::unique_ptr<Helper>> Acquire();
  // Starts one helper with `lock` (on mu_) released meanwhile, counting it
  // live; a failure starts the spawn backoff.
  absl::StatusOr<std::unique_ptr<Helper>> SpawnCounted(std::unique_lock<std::mutex>& lock);
  void Release(std::unique_ptr<Helper> helper);
  void Lose(std::unique_ptr<Helper> helper); // kill, reap, count
  // For a helper whose stream broke: waits briefly for it to exit, then
  // Lose; returns how it ended (DescribeExit).
  std::string LoseAfterExit(std::unique_ptr<Helper> helper);
  absl::StatusOr<toolchain::CompileOutput> InProcess(const toolchain::CudaCompileInput& in,
                                                     const absl::Status& why);

  const NvrtcHelperOptions options_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<Helper>> idle_; // guarded by mu_
  int live_ = 0;                              // guarded by mu_
  bool stopping_ = false;                     // guarded by mu_
  bool warned_ = false;                       // guarded by mu_
  absl::Time no_spawn_until_;                 // guarded by mu_
  absl::Status spawn_error_;                  // guarded by mu_: why, until then
  NvrtcHelperStats stats_;                    // guarded by mu_ (idle, live filled on read)
  std::thread prewarm_;                       // guarded by mu_
};

} // namespace kiln::server
