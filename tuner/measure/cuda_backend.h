// A CUDA GPU as a kiln-worker device ("cuda:N"), through the driver API that
// cuda_driver.h loads with dlopen: a module is a cubin (or PTX), a launch
// goes to a stream of the device's primary context, and timing uses CUDA
// events around each launch, optionally after an L2 flush (a memset of a
// buffer twice the L2 size, outside the timed region) and optionally as
// CUDA-graph replays: the kernel is captured B times in a graph, B chosen so
// that B launches last about kGraphReplayTargetUs (at most kMaxGraphBatch;
// sized from the best of kGraphSizingRuns launches after the warm-up), and
// each sample is a replay's time divided by B, which removes the launch
// gaps that dominate short kernels. With the flush, each of the B launches
// follows its own flush inside the graph, and a graph of the B flushes alone
// is timed after each replay: a sample is (replay - the flushes' median) / B,
// so that every launch starts from a cold L2 whatever B is, as without graphs
// (replays no slower than the flushes are measured again, or the request
// fails: UNAVAILABLE, never a sample of zero).
//
// Arguments: generated inputs (ArgOrigin keys) are uploaded once and kept
// on the device as pristine copies (least recently used first out, within
// kResidentBytesLimit or an eighth of the device's memory); each launch
// starts from a device-to-device copy of them, and zero-filled tensors are
// zeroed on the device, so a sweep moves no input bytes over PCIe after its
// first candidate. The working buffers of one request are reused by the
// next. Only outputs are copied back.
//
// A fault that leaves the context unusable (IsContextFatal: illegal
// address, trap, ...) comes back marked as a launch failure: the worker then
// answers CODE_LAUNCH_FAILED and exits, and kilnd starts a fresh one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tuner/measure/cuda_driver.h"
#include "tuner/measure/device_backend.h"

namespace kiln::measure {

inline constexpr double kGraphReplayTargetUs = 200;
inline constexpr int kMaxGraphBatch = 100;
inline constexpr int kGraphSizingRuns = 3;
// Rounds of flushed replays (each twice the missing samples after the first)
// before a flushed graph measurement gives up on a kernel too short to time.
inline constexpr int kMaxFlushedGraphRounds = 4;
inline constexpr int kMaxTimedRepeats = 100000;
inline constexpr size_t kResidentBytesLimit = size_t{8} << 30;

class CudaBackend final : public DeviceBackend {
 public:
  // Loads the driver (`library`) and opens device `ordinal`.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Open(int ordinal, const std::string& library);

  absl::StatusOr<kiln::v1::DescribeDeviceResponse> Describe() override;
  absl::StatusOr<kiln::v1::LoadModuleResponse>
  Load(const kiln::v1::LoadModuleRequest& request) override;
  absl::Status Unload(const std::string& module_id) override;
  bool ResidentKey(const std::string& key) const override;
  bool ZeroesOnDevice() const override { return true; }
  absl::Status Preload(const std::vector<tools::HostParam>& params,
                       const std::vector<ArgOrigin>& origins) override;
  absl::StatusOr<double> Run(const kiln::v1::LaunchSpec& launch,
                             std::vector<tools::HostParam>& params,
                             const std::vector<ArgOrigin>& origins) override;
  absl::StatusOr<std::vector<double>> Measure(const kiln::v1::LaunchSpec& launch,
                                              std::vector<tools::HostParam>& params,
                                              const std::vector<ArgOrigin>& origins,
                                              const TimingOptions& options) override;

 private:
  struct LoadedModule {
    Module module;
    Function function;
    int64_t dynamic_smem_bytes = 0;
    // A program of several kernels: the functions launched after `function`,
    // in order, each with its dynamic shared memory.
    std::vector<std::pair<Function, int64_t>> next;
  };
  // What one launch of a loaded module on given arguments needs.
  struct Prepared {
    const LoadedModule* module = nullptr;
    LaunchConfig config;
    // A launch sequence (LaunchSpec.next_kernels): every kernel, the first
    // included, with its own argument array (its tensor maps differ); empty
    // for a one-kernel launch, which uses `config` and the caller's args.
    struct Step {
      const Function* function = nullptr;
      LaunchConfig config;
      void** args = nullptr;
    };
    std::vector<Step> steps;
  };
  // Queues `prepared`'s kernel, or each kernel of its sequence in order.
  absl::Status LaunchAll(const Prepared& prepared, void** args);

  CudaBackend(std::shared_ptr<Device> device, Stream stream, size_t resident_limit)
      : device_(std::move(device)), stream_(std::move(stream)), resident_limit_(resident_limit) {}
  absl::StatusOr<Prepared> Prepare(const kiln::v1::LaunchSpec& launch) const;
  absl::StatusOr<std::vector<double>> TimeLaunches(const Prepared& prepared, void** args,
                                                   const TimingOptions& options);
  absl::StatusOr<std::vector<double>> TimeGraphReplays(const Prepared& prepared, void** args,
                                                       const TimingOptions& options);
  // Times `repeats` rounds of `bodies` (each queues work on the stream),
  // every body between two events, after an L2 flush when `flush_before`
  // (outside the events): [body][round] in microseconds.
  absl::StatusOr<std::vector<std::vector<double>>>
  TimeEach(int repeats, bool flush_before,
           const std::vector<std::function<absl::Status()>>& bodies);
  absl::Status EnsureFlushBuffer();
  absl::Status FlushL2(); // queues the flush on the stream
  // A working buffer for param `index` of `params`, holding its starting
  // data (see the file comment).
  absl::StatusOr<DeviceBuffer> StartBuffer(const tools::HostParam& param, const ArgOrigin* origin,
                                           size_t bytes);
  // A buffer of `bytes`: a spare one, else a new one (dropping the spares
  // and the resident copies not used by this request when memory is short).
  absl::StatusOr<DeviceBuffer> TakeBuffer(size_t bytes);
  // Drops the least recently used resident copies not pinned by this
  // request until at most `keep_at_most` bytes are resident.
  void EvictResident(size_t keep_at_most);
  // Keeps a pristine device copy of `bytes` under `key` (pinned by this
  // request) when it fits the resident limit; false when it was not kept.
  bool KeepResident(const std::string& key, const std::string& bytes);

  struct Resident {
    std::string key;
    DeviceBuffer buffer;
    uint64_t last_request = 0;
  };

  std::shared_ptr<Device> device_;
  Stream stream_;
  std::map<std::string, std::unique_ptr<LoadedModule>> modules_;
  std::optional<DeviceBuffer> flush_buffer_; // allocated by the first flush
  std::list<Resident> resident_;             // most recently used first
  std::map<std::string, std::list<Resident>::iterator> resident_index_;
  size_t resident_bytes_ = 0;
  size_t resident_limit_;
  std::multimap<size_t, DeviceBuffer> spare_; // the last request's working buffers
  uint64_t request_ = 0;
};

} // namespace kiln::measure
