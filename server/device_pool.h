// The devices kilnd measures on, one supervised kiln-worker process each
// (ARCHITECTURE.md decision 4; docs/design/worker.md).
//
// Start discovers CUDA GPUs by running `kiln-worker --list` (the worker
// dlopens the driver, so kilnd never links it and starts where there is
// none), offers the host CPU as device "cpu" (and as "cpu:1" ... "cpu:N-1"
// with cpu_workers = N > 1, each worker then pinned to its own core of
// kilnd's affinity set, so that a sweep measures CPU kernels on several
// cores at once), and starts one worker per device. Without GPUs the pool
// has just the CPU devices.
//
// Exclusive use: a device serves one request at a time. Callers queue per
// device in arrival order, for at most their queue timeout, and a cancelled
// stop token takes a waiting caller out of the queue at once. A Lease holds
// a device across several requests (load, validate, measure, unload) so that
// nobody else runs on it in between.
//
// Supervision: a worker that crashes (EOF on its socket, any signal), runs
// past a request's timeout (killed with SIGKILL), answers CODE_LAUNCH_FAILED
// (and exits), breaks the protocol, is killed to honour a cancellation, or
// dies while idle, is replaced by the pool's supervisor thread after a
// backoff that doubles with each consecutive failure (restart_backoff ..
// max_restart_backoff; a success resets it). The failing call gets an error
// whose WorkerErrorKind says which of these happened, with the worker's
// stderr tail (worker_error.h); callers queued behind it wait for the
// replacement. A replacement that cannot start (its binary is missing, the
// GPU is gone) makes the device "failed": callers get kUnavailable at once
// until a later attempt succeeds. Loaded modules do not survive a restart:
// a Lease reports the worker generation so callers can tell.
//
// Thread-safety: every method may be called from any thread. Leases must not
// outlive the pool. The observer is called without the pool's lock held, from
// the thread that saw the event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kiln/v1/service.pb.h"
#include "kiln/v1/worker.pb.h"
#include "server/worker_error.h"
#include "server/worker_process.h"

namespace kiln::server {

// Events for metrics and logs (another component turns them into Prometheus
// series). Default implementations do nothing.
class DevicePoolObserver {
 public:
  virtual ~DevicePoolObserver() = default;
  // A worker for `device_id` is up; `restart` is false for the first one.
  virtual void OnWorkerStarted(const std::string& device_id, bool restart) {}
  // A worker was lost (`kind` says how) or could not start (kUnavailable).
  virtual void OnWorkerFailed(const std::string& device_id, WorkerErrorKind kind,
                              const absl::Status& status) {}
  // A request finished on `device_id` after `busy` on the device.
  virtual void OnRequestFinished(const std::string& device_id, absl::Duration busy,
                                 const absl::Status& status) {}
};

struct DevicePoolOptions {
  std::string worker_path;   // the kiln-worker binary (a path with '/')
  bool discover_gpus = true; // run `kiln-worker --list`
  bool offer_cpu = true;
  // CPU-target workers when offer_cpu: "cpu", "cpu:1", ... Above 1, worker
  // k is pinned to the k-th CPU (round robin) of the affinity set the pool
  // starts with; 1 leaves the single worker unpinned.
  int cpu_workers = 1;
  // Extra devices ("cuda:1") to start whatever discovery says; for tests
  // and for pinning.
  std::vector<std::string> extra_devices;
  std::vector<std::string> extra_worker_args;

  // A request's run limit when the caller gives none: the request's own
  // timeout_seconds when set, else this.
  absl::Duration default_timeout = absl::Seconds(120);
  // The longest a caller waits for its turn when it gives no queue timeout.
  absl::Duration max_queue_wait = absl::Minutes(10);
  // Callers that may wait per device; more get kQueueFull.
  size_t max_queue_depth = 256;
  absl::Duration restart_backoff = absl::Milliseconds(100);
  absl::Duration max_restart_backoff = absl::Seconds(10);
  // Spawning a worker and its first Describe.
  absl::Duration start_timeout = absl::Seconds(60);
  // How often idle workers are checked for having died.
  absl::Duration health_interval = absl::Seconds(1);
  // RLIMIT_AS of the CPU worker (CUDA workers get none); 0: none.
  int64_t cpu_worker_memory_limit_bytes = 0;
  size_t stderr_tail_bytes = 16 << 10;
  size_t max_frame_bytes = size_t{1} << 30;
  // Each line the workers write to stderr (optional).
  std::function<void(std::string_view device_id, std::string_view line)> stderr_sink;
  DevicePoolObserver* observer = nullptr; // not owned; outlives the pool
};

// Counters of one device since the pool started.
struct DeviceStats {
  std::string device_id;
  std::string state; // "running", "starting", "restarting", "failed", "stopped"
  bool busy = false;
  int queue_depth = 0;
  uint64_t generation = 0; // workers started so far (1 after the first start)
  int64_t worker_pid = 0;  // the current worker's pid; 0 while none runs
  int cpu_core = -1;       // the logical CPU its workers are pinned to; -1: none
  int64_t restarts = 0;    // replacement workers started
  int64_t crashes = 0;
  int64_t timeouts = 0;
  int64_t launch_failures = 0;
  int64_t protocol_errors = 0;
  int64_t cancellations = 0; // in-flight requests killed to cancel them
  int64_t start_failures = 0;
  int64_t requests = 0;
  int64_t failed_requests = 0;
  double busy_seconds = 0; // time requests spent on the device
  std::string last_error;
};

class DevicePool;

// Exclusive use of one device until destroyed (or Release()).
class DeviceLease {
 public:
  DeviceLease(DeviceLease&& other) noexcept;
  DeviceLease& operator=(DeviceLease&& other) noexcept;
  DeviceLease(const DeviceLease&) = delete;
  DeviceLease& operator=(const DeviceLease&) = delete;
  ~DeviceLease();

  // One request on the leased device; `timeout` as in DevicePool::Call.
  // After a failure that lost the worker, later calls on this lease get
  // kUnavailable: the replacement starts once the lease is released.
  absl::StatusOr<kiln::v1::WorkerResponse> Call(const kiln::v1::WorkerRequest& request,
                                                absl::Duration timeout = absl::ZeroDuration(),
                                                std::stop_token cancel = {});
  const std::string& device_id() const { return device_id_; }
  // The worker this lease talks to (a restart makes a new generation).
  uint64_t worker_generation() const { return generation_; }
  void Release();

 private:
  friend class DevicePool;
  DeviceLease(DevicePool* pool, size_t slot, std::string device_id, uint64_t generation)
      : pool_(pool), slot_(slot), device_id_(std::move(device_id)), generation_(generation) {}
  DevicePool* pool_ = nullptr;
  size_t slot_ = 0;
  std::string device_id_;
  uint64_t generation_ = 0;
};

class DevicePool {
 public:
  // Discovers the devices and starts their workers; returns once each has
  // answered Describe or failed to start (start_timeout). InvalidArgument
  // for bad options; NotFound when worker_path does not exist. A device
  // whose worker cannot start is kept as "failed" and retried with backoff.
  static absl::StatusOr<std::unique_ptr<DevicePool>> Start(DevicePoolOptions options);
  ~DevicePool(); // Shutdown()
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  // The devices, "cpu" ("cpu:N") first then "cuda:N" in order, as their workers
  // described them, with busy and worker_state filled in.
  std::vector<kiln::v1::Device> Devices() const;

  // Waits for `device_id` (up to the pool's max_queue_wait), sends
  // `request`, returns the answer. `timeout` limits the request's run (zero:
  // the request's timeout_seconds, else default_timeout); past it the worker
  // is killed. Errors: NotFound for an unknown device, Unavailable after
  // Shutdown, and the kinds of worker_error.h.
  absl::StatusOr<kiln::v1::WorkerResponse> Call(std::string_view device_id,
                                                const kiln::v1::WorkerRequest& request,
                                                absl::Duration timeout = absl::ZeroDuration(),
                                                std::stop_token cancel = {});

  // Waits for exclusive use of `device_id`: at most `queue_timeout` (zero:
  // the pool's max_queue_wait). Errors: NotFound, kQueueTimeout, kQueueFull,
  // kCancelled, kUnavailable (worker failed, or Shutdown).
  absl::StatusOr<DeviceLease> Acquire(std::string_view device_id,
                                      absl::Duration queue_timeout = absl::ZeroDuration(),
                                      std::stop_token cancel = {});

  std::vector<DeviceStats> Stats() const;
  absl::StatusOr<DeviceStats> Stats(std::string_view device_id) const;
  // What GPU discovery found or why it found nothing ("cuda 0: CUDA driver
  // not found: ...").
  std::string discovery_note() const { return discovery_note_; }

  // Stops the supervisor, fails waiting callers with Unavailable and kills
  // the workers (in-flight requests end as crashes). Idempotent.
  void Shutdown();

  // Runs `worker_path --list` and returns the CUDA device count (0 when the
  // probe fails; `note` says why).
  static int CountGpus(const std::string& worker_path, std::string* note);

 private:
  friend class DeviceLease;
  struct Slot;

  explicit DevicePool(DevicePoolOptions options);
  size_t FindSlot(std::string_view device_id) const; // npos when absent
  absl::StatusOr<kiln::v1::WorkerResponse> CallOnSlot(size_t slot, uint64_t generation,
                                                      const kiln::v1::WorkerRequest& request,
                                                      absl::Duration timeout,
                                                      std::stop_token cancel);
  void ReleaseSlot(size_t slot);
  void SupervisorLoop();
  // Spawns a worker for `slot`; on the supervisor thread only (the worker's
  // parent-death signal follows the thread that spawned it).
  absl::StatusOr<std::unique_ptr<WorkerProcess>> SpawnWorker(size_t slot);
  // Asks a spawned worker to Describe itself and installs it (or records
  // why it could not start); any thread.
  void FinishStart(size_t slot, absl::StatusOr<std::unique_ptr<WorkerProcess>> spawned);
  absl::Duration BackoffFor(int consecutive_failures) const;
  void RecordLoss(Slot& slot, WorkerErrorKind kind, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  DeviceStats StatsLocked(const Slot& slot) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const DevicePoolOptions options_;
  std::string discovery_note_; // set before the supervisor starts

  mutable absl::Mutex mu_;
  // Lock order: mu_ only; no lock is held while talking to a worker.
  std::vector<std::unique_ptr<Slot>> slots_; // fixed after Start; contents guarded by mu_
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  // Bumped when a worker is lost or a lease released: wakes the supervisor.
  uint64_t supervisor_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::stop_source stop_; // stopped by Shutdown
  std::thread supervisor_;
};

} // namespace kiln::server
