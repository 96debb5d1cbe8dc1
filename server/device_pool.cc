#include "server/device_pool.h"

#include <algorithm>
#include <utility>

#include <sched.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tuner/arch/arch_model.h"
#include "util/subprocess.h"

namespace kiln::server {

namespace pb = kiln::v1;

// One device and its worker. Every field is guarded by DevicePool::mu_.
struct DevicePool::Slot {
  std::string id;
  std::shared_ptr<WorkerProcess> worker; // null while down
  uint64_t generation = 0;               // workers started so far
  bool leased = false;
  bool starting = false; // the supervisor is starting a worker
  bool failed = false;   // the last start failed
  absl::Time restart_at = absl::InfinitePast();
  int consecutive_failures = 0;
  std::deque<uint64_t> queue; // waiting callers' tickets, in arrival order
  pb::Device device;          // as the worker described it
  DeviceStats stats;
};

namespace {

// The request's own time limit, if it has one.
absl::Duration RequestTimeout(const pb::WorkerRequest& request) {
  double seconds = 0;
  if (request.has_run()) seconds = request.run().timeout_seconds();
  if (request.has_measure()) seconds = request.measure().timeout_seconds();
  return seconds > 0 ? absl::Seconds(seconds) : absl::ZeroDuration();
}

std::string StateOf(bool shutdown, bool has_worker, bool starting, bool failed,
                    uint64_t generation) {
  if (shutdown) return "stopped";
  if (starting) return generation == 0 ? "starting" : "restarting";
  if (has_worker) return "running";
  if (failed) return "failed";
  return "restarting";
}

// Calls `stop` (which must not block long) when `token` is stopped, for as
// long as it lives; the callback only exists while a caller waits.
using StopWake = std::stop_callback<std::function<void()>>;

} // namespace

// --- DeviceLease ---------------------------------------------------------------

DeviceLease::DeviceLease(DeviceLease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)), slot_(other.slot_),
      device_id_(std::move(other.device_id_)), generation_(other.generation_) {}

DeviceLease& DeviceLease::operator=(DeviceLease&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::exchange(other.pool_, nullptr);
    slot_ = other.slot_;
    device_id_ = std::move(other.device_id_);
    generation_ = other.generation_;
  }
  return *this;
}

DeviceLease::~DeviceLease() { Release(); }

void DeviceLease::Release() {
  if (pool_ != nullptr) std::exchange(pool_, nullptr)->ReleaseSlot(slot_);
}

absl::StatusOr<pb::WorkerResponse> DeviceLease::Call(const pb::WorkerRequest& request,
                                                     absl::Duration timeout,
                                                     std::stop_token cancel) {
  if (pool_ == nullptr) return absl::FailedPreconditionError("the lease was released");
  return pool_->CallOnSlot(slot_, generation_, request, timeout, std::move(cancel));
}

// --- DevicePool ------------------------------------------------------------------

DevicePool::DevicePool(DevicePoolOptions options) : options_(std::move(options)) {}

DevicePool::~DevicePool() { Shutdown(); }

int DevicePool::CountGpus(const std::string& worker_path, std::string* note) {
  util::SubprocessOptions run;
  run.timeout = std::chrono::seconds(60);
  run.max_output_bytes = 1 << 16;
  absl::StatusOr<util::SubprocessResult> result = util::RunSubprocess({worker_path, "--list"}, run);
  if (!result.ok()) {
    *note = absl::StrCat("GPU discovery failed: ", result.status().message());
    return 0;
  }
  int count = 0;
  for (absl::string_view line : absl::StrSplit(result->stdout_data, '\n')) {
    if (absl::ConsumePrefix(&line, "cuda ")) {
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &count)) count = 0;
    }
  }
  const std::string why(absl::StripAsciiWhitespace(result->stderr_data));
  *note = absl::StrCat("cuda ", count, why.empty() ? "" : ": ", why);
  if (!result->success()) {
    *note = absl::StrCat("GPU discovery: ", worker_path, " --list ", result->DescribeTermination(),
                         why.empty() ? "" : ": ", why);
    return 0;
  }
  return std::max(count, 0);
}

absl::StatusOr<std::unique_ptr<DevicePool>> DevicePool::Start(DevicePoolOptions options) {
  if (options.worker_path.find('/') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("DevicePool: worker_path must be a path, got '", options.worker_path, "'"));
  }
  if (access(options.worker_path.c_str(), X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("DevicePool: no executable kiln-worker at ", options.worker_path));
  }
  if (options.restart_backoff <= absl::ZeroDuration() ||
      options.max_restart_backoff < options.restart_backoff ||
      options.health_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("DevicePool: backoff and health interval must be positive");
  }
  if (options.cpu_workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("DevicePool: cpu_workers must be at least 1, got ", options.cpu_workers));
  }
  // Each device once, with the core its workers are pinned to (-1: none).
  std::vector<std::pair<std::string, int>> devices;
  auto add = [&devices](std::string id, int core) {
    for (const auto& [have, unused] : devices) {
      if (have == id) return;
    }
    devices.emplace_back(std::move(id), core);
  };
  if (options.offer_cpu) {
    std::vector<int> allowed;
    if (options.cpu_workers > 1) {
      cpu_set_t set;
      CPU_ZERO(&set);
      if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE; ++c) {
          if (CPU_ISSET(c, &set)) allowed.push_back(c);
        }
      }
    }
    for (int k = 0; k < options.cpu_workers; ++k) {
      add(k == 0 ? std::string("cpu") : absl::StrCat("cpu:", k),
          allowed.empty() ? -1 : allowed[static_cast<size_t>(k) % allowed.size()]);
    }
  }
  std::string note = "GPU discovery off";
  if (options.discover_gpus) {
    const int gpus = CountGpus(options.worker_path, &note);
    for (int i = 0; i < gpus; ++i) add(absl::StrCat("cuda:", i), -1);
  }
  for (const std::string& id : options.extra_devices) add(id, -1);
  if (devices.empty()) return absl::InvalidArgumentError("DevicePool: no devices to offer");

  std::unique_ptr<DevicePool> pool(new DevicePool(std::move(options)));
  pool->discovery_note_ = note;
  for (const auto& [id, core] : devices) {
    auto slot = std::make_unique<Slot>();
    slot->id = id;
    slot->stats.device_id = id;
    slot->stats.cpu_core = core;
    slot->device.set_id(id);
    pool->slots_.push_back(std::move(slot));
  }
  pool->supervisor_ = std::thread([p = pool.get()] { p->SupervisorLoop(); });
  // Wait for the first start of every device, successful or not.
  absl::MutexLock lock(&pool->mu_);
  auto all_tried = [p = pool.get()]() {
    return std::all_of(p->slots_.begin(), p->slots_.end(), [](const std::unique_ptr<Slot>& s) {
      return !s->starting && (s->worker != nullptr || s->failed);
    });
  };
  pool->mu_.AwaitWithTimeout(absl::Condition(&all_tried),
                             pool->options_.start_timeout + absl::Seconds(5));
  return pool;
}

void DevicePool::Shutdown() {
  std::vector<std::shared_ptr<WorkerProcess>> workers;
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return;
    shutdown_ = true;
  }
  stop_.request_stop(); // ends a worker start in progress
  if (supervisor_.joinable()) supervisor_.join();
  {
    absl::MutexLock lock(&mu_);
    for (const std::unique_ptr<Slot>& slot : slots_) {
      if (slot->worker != nullptr) workers.push_back(std::move(slot->worker));
    }
  }
  // Calls in flight hold their own reference; killing ends them.
  for (const std::shared_ptr<WorkerProcess>& w : workers) w->Kill();
}

size_t DevicePool::FindSlot(std::string_view device_id) const {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i]->id == device_id) return i;
  }
  return std::string::npos;
}

absl::Duration DevicePool::BackoffFor(int consecutive_failures) const {
  absl::Duration backoff = options_.restart_backoff;
  for (int i = 1; i < consecutive_failures && backoff < options_.max_restart_backoff; ++i) {
    backoff *= 2;
  }
  return std::min(backoff, options_.max_restart_backoff);
}

void DevicePool::RecordLoss(Slot& slot, WorkerErrorKind kind, const absl::Status& status) {
  switch (kind) {
  case WorkerErrorKind::kCrash:
    ++slot.stats.crashes;
    break;
  case WorkerErrorKind::kTimeout:
    ++slot.stats.timeouts;
    break;
  case WorkerErrorKind::kLaunchFailed:
    ++slot.stats.launch_failures;
    break;
  case WorkerErrorKind::kProtocol:
    ++slot.stats.protocol_errors;
    break;
  case WorkerErrorKind::kCancelled:
    ++slot.stats.cancellations;
    break;
  default:
    break;
  }
  slot.stats.last_error = absl::StrCat(status.message());
  // A cancellation says nothing about the kernel: restart at once.
  if (kind != WorkerErrorKind::kCancelled) ++slot.consecutive_failures;
  slot.restart_at = kind == WorkerErrorKind::kCancelled
                        ? absl::Now()
                        : absl::Now() + BackoffFor(slot.consecutive_failures);
  ++supervisor_epoch_;
}

absl::StatusOr<DeviceLease> DevicePool::Acquire(std::string_view device_id,
                                                absl::Duration queue_timeout,
                                                std::stop_token cancel) {
  const size_t index = FindSlot(device_id);
  if (index == std::string::npos) {
    std::vector<std::string> known;
    for (const std::unique_ptr<Slot>& s : slots_) known.push_back(s->id);
    return absl::NotFoundError(absl::StrCat("no device '", std::string(device_id),
                                            "'; devices: ", absl::StrJoin(known, ", ")));
  }
  const absl::Time deadline =
      absl::Now() +
      (queue_timeout > absl::ZeroDuration() ? queue_timeout : options_.max_queue_wait);
  // Wakes this waiter when the token stops: locking and unlocking the mutex
  // makes it evaluate the wait condition again. Constructed before the lock
  // is taken (it may run at once) and destroyed after it is released.
  StopWake wake(cancel, std::function<void()>([this] { absl::MutexLock touch(&mu_); }));
  std::vector<std::shared_ptr<WorkerProcess>> dead;
  absl::StatusOr<DeviceLease> result = absl::UnknownError("unset");
  std::vector<absl::Status> idle_losses;
  {
    absl::MutexLock lock(&mu_);
    Slot& slot = *slots_[index];
    if (shutdown_) {
      return MakeWorkerError(WorkerErrorKind::kUnavailable, absl::StatusCode::kUnavailable,
                             "the device pool is shutting down");
    }
    if (slot.queue.size() >= options_.max_queue_depth) {
      return MakeWorkerError(
          WorkerErrorKind::kQueueFull, absl::StatusCode::kResourceExhausted,
          absl::StrCat(slot.queue.size(), " callers already wait for ", slot.id));
    }
    const uint64_t ticket = next_ticket_++;
    slot.queue.push_back(ticket);
    auto turn = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      if (shutdown_ || cancel.stop_requested()) return true;
      if (slot.failed && slot.worker == nullptr && !slot.starting) return true;
      return slot.queue.front() == ticket && !slot.leased && !slot.starting &&
             slot.worker != nullptr;
    };
    for (;;) {
      const bool in_time = mu_.AwaitWithDeadline(absl::Condition(&turn), deadline);
      if (!in_time || shutdown_ || cancel.stop_requested() ||
          (slot.failed && slot.worker == nullptr)) {
        slot.queue.erase(std::find(slot.queue.begin(), slot.queue.end(), ticket));
        if (shutdown_) {
          result = MakeWorkerError(WorkerErrorKind::kUnavailable, absl::StatusCode::kUnavailable,
                                   "the device pool is shutting down");
        } else if (cancel.stop_requested()) {
          result = MakeWorkerError(WorkerErrorKind::kCancelled, absl::StatusCode::kCancelled,
                                   absl::StrCat("cancelled while waiting for ", slot.id));
        } else if (!in_time) {
          result =
              MakeWorkerError(WorkerErrorKind::kQueueTimeout, absl::StatusCode::kDeadlineExceeded,
                              absl::StrCat("no turn on ", slot.id, " within the queue wait (",
                                           slot.queue.size(), " other callers waiting)"));
        } else {
          result = MakeWorkerError(
              WorkerErrorKind::kUnavailable, absl::StatusCode::kUnavailable,
              absl::StrCat("the worker for ", slot.id, " cannot start: ", slot.stats.last_error));
        }
        break;
      }
      // Our turn. A worker that died while idle is not handed out.
      if (!slot.worker->alive()) {
        absl::Status lost =
            MakeWorkerError(WorkerErrorKind::kCrash, absl::StatusCode::kAborted,
                            absl::StrCat("worker for ", slot.id, " died while idle (",
                                         slot.worker->DescribeExit(), ")"),
                            slot.worker->StderrTail());
        RecordLoss(slot, WorkerErrorKind::kCrash, lost);
        dead.push_back(std::move(slot.worker));
        idle_losses.push_back(lost);
        continue;
      }
      slot.queue.pop_front();
      slot.leased = true;
      result = DeviceLease(this, index, slot.id, slot.generation);
      break;
    }
  }
  for (const absl::Status& lost : idle_losses) {
    if (options_.observer != nullptr) {
      options_.observer->OnWorkerFailed(std::string(device_id), WorkerErrorKind::kCrash, lost);
    }
  }
  dead.clear(); // outside the lock: joins the reader thread
  return result;
}

void DevicePool::ReleaseSlot(size_t slot) {
  absl::MutexLock lock(&mu_);
  slots_[slot]->leased = false;
  ++supervisor_epoch_;
}

absl::StatusOr<pb::WorkerResponse> DevicePool::CallOnSlot(size_t index, uint64_t generation,
                                                          const pb::WorkerRequest& request,
                                                          absl::Duration timeout,
                                                          std::stop_token cancel) {
  std::shared_ptr<WorkerProcess> worker;
  std::string id;
  {
    absl::MutexLock lock(&mu_);
    Slot& slot = *slots_[index];
    id = slot.id;
    if (shutdown_) {
      return MakeWorkerError(WorkerErrorKind::kUnavailable, absl::StatusCode::kUnavailable,
                             "the device pool is shutting down");
    }
    if (slot.worker == nullptr || slot.generation != generation) {
      return MakeWorkerError(
          WorkerErrorKind::kUnavailable, absl::StatusCode::kUnavailable,
          absl::StrCat("the worker for ", slot.id,
                       " was lost earlier in this lease; release it and acquire the device again"));
    }
    worker = slot.worker;
  }
  if (timeout <= absl::ZeroDuration()) timeout = RequestTimeout(request);
  if (timeout <= absl::ZeroDuration()) timeout = options_.default_timeout;
  const absl::Time start = absl::Now();
  absl::StatusOr<pb::WorkerResponse> response =
      worker->Call(request, start + timeout, std::move(cancel));
  const absl::Duration busy = absl::Now() - start;
  const WorkerErrorKind kind = WorkerErrorKindOf(response.status());
  std::shared_ptr<WorkerProcess> dead;
  {
    absl::MutexLock lock(&mu_);
    Slot& slot = *slots_[index];
    ++slot.stats.requests;
    slot.stats.busy_seconds += absl::ToDoubleSeconds(busy);
    if (!response.ok()) ++slot.stats.failed_requests;
    if (!response.ok() && LostWorker(kind)) {
      RecordLoss(slot, kind, response.status());
      if (slot.worker == worker) dead = std::move(slot.worker);
    } else if (response.ok()) {
      slot.consecutive_failures = 0;
    }
  }
  if (options_.observer != nullptr) {
    options_.observer->OnRequestFinished(id, busy, response.status());
    if (dead != nullptr) options_.observer->OnWorkerFailed(id, kind, response.status());
  }
  return response;
}

absl::StatusOr<pb::WorkerResponse> DevicePool::Call(std::string_view device_id,
                                                    const pb::WorkerRequest& request,
                                                    absl::Duration timeout,
                                                    std::stop_token cancel) {
  absl::StatusOr<DeviceLease> lease = Acquire(device_id, absl::ZeroDuration(), cancel);
  if (!lease.ok()) return lease.status();
  return lease->Call(request, timeout, std::move(cancel));
}

absl::StatusOr<std::unique_ptr<WorkerProcess>> DevicePool::SpawnWorker(size_t index) {
  std::string id;
  int cpu_core = -1;
  {
    absl::MutexLock lock(&mu_);
    id = slots_[index]->id;
    cpu_core = slots_[index]->stats.cpu_core; // kiln-worker --cpu-core; -1: not pinned
  }
  WorkerProcessOptions wopts;
  wopts.worker_path = options_.worker_path;
  wopts.device_id = id;
  wopts.extra_args = options_.extra_worker_args;
  if (cpu_core >= 0) {
    wopts.extra_args.emplace_back("--cpu-core");
    wopts.extra_args.push_back(absl::StrCat(cpu_core));
  }
  wopts.memory_limit_bytes = arch::IsCpuDeviceId(id) ? options_.cpu_worker_memory_limit_bytes : 0;
  wopts.max_frame_bytes = options_.max_frame_bytes;
  wopts.stderr_tail_bytes = options_.stderr_tail_bytes;
  wopts.stderr_sink = options_.stderr_sink;
  return WorkerProcess::Spawn(wopts);
}

void DevicePool::FinishStart(size_t index, absl::StatusOr<std::unique_ptr<WorkerProcess>> spawned) {
  const std::string& id = slots_[index]->id; // fixed after Start
  absl::Status status = spawned.status();
  pb::Device described;
  if (status.ok()) {
    pb::WorkerRequest describe;
    describe.mutable_describe();
    absl::StatusOr<pb::WorkerResponse> answer =
        (*spawned)->Call(describe, absl::Now() + options_.start_timeout, stop_.get_token());
    if (answer.ok() && answer->has_describe()) {
      described = answer->describe().device();
      // Keys the micro-benchmark results (server/device_profiles.h).
      described.set_driver_version(answer->describe().driver_version());
    } else {
      status = answer.ok() ? absl::InternalError("Describe: an answer without a device")
                           : answer.status();
    }
  }
  bool restart = false;
  std::unique_ptr<WorkerProcess> failed_worker;
  {
    absl::MutexLock lock(&mu_);
    Slot& slot = *slots_[index];
    slot.starting = false;
    if (status.ok()) {
      restart = slot.generation > 0;
      ++slot.generation;
      if (restart) ++slot.stats.restarts;
      slot.failed = false;
      slot.worker = std::shared_ptr<WorkerProcess>(std::move(*spawned));
      described.set_id(slot.id);
      slot.device = described;
    } else {
      if (spawned.ok()) failed_worker = std::move(*spawned);
      slot.failed = true;
      ++slot.stats.start_failures;
      ++slot.consecutive_failures;
      slot.stats.last_error = absl::StrCat(status.message());
      slot.restart_at = absl::Now() + BackoffFor(slot.consecutive_failures);
    }
  }
  failed_worker.reset();
  if (options_.observer == nullptr) return;
  if (status.ok()) {
    options_.observer->OnWorkerStarted(id, restart);
  } else {
    options_.observer->OnWorkerFailed(id, WorkerErrorKind::kUnavailable, status);
  }
}

void DevicePool::SupervisorLoop() {
  for (;;) {
    std::vector<size_t> to_start;
    std::vector<std::shared_ptr<WorkerProcess>> dead;
    std::vector<std::pair<std::string, absl::Status>> losses;
    {
      absl::MutexLock lock(&mu_);
      if (shutdown_) return;
      const absl::Time now = absl::Now();
      for (size_t i = 0; i < slots_.size(); ++i) {
        Slot& slot = *slots_[i];
        if (slot.worker != nullptr && !slot.leased && !slot.worker->alive()) {
          absl::Status lost =
              MakeWorkerError(WorkerErrorKind::kCrash, absl::StatusCode::kAborted,
                              absl::StrCat("worker for ", slot.id, " died while idle (",
                                           slot.worker->DescribeExit(), ")"),
                              slot.worker->StderrTail());
          RecordLoss(slot, WorkerErrorKind::kCrash, lost);
          dead.push_back(std::move(slot.worker));
          losses.emplace_back(slot.id, lost);
        }
        if (slot.worker == nullptr && !slot.starting && !slot.leased && now >= slot.restart_at) {
          slot.starting = true;
          to_start.push_back(i);
        }
      }
    }
    dead.clear();
    if (options_.observer != nullptr) {
      for (const auto& [id, status] : losses) {
        options_.observer->OnWorkerFailed(id, WorkerErrorKind::kCrash, status);
      }
    }
    // Spawned on this thread, so that their parent-death signal (which
    // follows the spawning thread, not the process) fires only when the pool
    // goes; their first Describe (slow on a GPU) runs in parallel.
    std::vector<absl::StatusOr<std::unique_ptr<WorkerProcess>>> spawned;
    for (size_t i : to_start) spawned.push_back(SpawnWorker(i));
    if (to_start.size() == 1) {
      FinishStart(to_start[0], std::move(spawned[0]));
    } else {
      std::vector<std::thread> starters;
      for (size_t k = 0; k < to_start.size(); ++k) {
        starters.emplace_back([this, i = to_start[k], w = std::move(spawned[k])]() mutable {
          FinishStart(i, std::move(w));
        });
      }
      for (std::thread& t : starters) t.join();
    }

    absl::MutexLock lock(&mu_);
    if (shutdown_) return;
    // Sleep until the next restart is due, a loss needs a restart, or the
    // next health check.
    absl::Time wake = absl::Now() + options_.health_interval;
    for (const std::unique_ptr<Slot>& s : slots_) {
      if (s->worker == nullptr && !s->starting && !s->leased) {
        wake = std::min(wake, s->restart_at);
      }
    }
    const uint64_t epoch = supervisor_epoch_;
    auto wanted = [this, epoch]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      if (shutdown_ || supervisor_epoch_ != epoch) return true;
      const absl::Time now = absl::Now();
      for (const std::unique_ptr<Slot>& s : slots_) {
        if (s->worker == nullptr && !s->starting && !s->leased && now >= s->restart_at) {
          return true;
        }
      }
      return false;
    };
    mu_.AwaitWithDeadline(absl::Condition(&wanted), wake);
  }
}

DeviceStats DevicePool::StatsLocked(const Slot& slot) const {
  DeviceStats stats = slot.stats;
  stats.state =
      StateOf(shutdown_, slot.worker != nullptr, slot.starting, slot.failed, slot.generation);
  stats.busy = slot.leased;
  stats.queue_depth = static_cast<int>(slot.queue.size());
  stats.generation = slot.generation;
  stats.worker_pid = slot.worker != nullptr ? slot.worker->pid() : 0;
  return stats;
}

std::vector<DeviceStats> DevicePool::Stats() const {
  absl::MutexLock lock(&mu_);
  std::vector<DeviceStats> out;
  for (const std::unique_ptr<Slot>& slot : slots_) out.push_back(StatsLocked(*slot));
  return out;
}

absl::StatusOr<DeviceStats> DevicePool::Stats(std::string_view device_id) const {
  const size_t index = FindSlot(device_id);
  if (index == std::string::npos) {
    return absl::NotFoundError(absl::StrCat("no device '", std::string(device_id), "'"));
  }
  absl::MutexLock lock(&mu_);
  return StatsLocked(*slots_[index]);
}

std::vector<pb::Device> DevicePool::Devices() const {
  absl::MutexLock lock(&mu_);
  std::vector<pb::Device> out;
  for (const std::unique_ptr<Slot>& slot : slots_) {
    pb::Device d = slot->device;
    d.set_id(slot->id);
    d.set_busy(slot->leased);
    d.set_worker_state(StateOf(shutdown_, slot->worker != nullptr, slot->starting, slot->failed,
                               slot->generation));
    out.push_back(std::move(d));
  }
  return out;
}

} // namespace kiln::server
