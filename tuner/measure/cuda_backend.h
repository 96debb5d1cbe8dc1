// A CUDA GPU as a kiln-worker device ("cuda:N"), through the driver API that
// cuda_driver.h loads with dlopen: a module is a cubin (or PTX), a launch
// goes to a stream of the device's primary context, and timing uses CUDA
// events around each launch, optionally after an L2 flush (a memset of a
// buffer twice the L2 size, outside the timed region) and optionally as
// CUDA-graph replays: the kernel is captured B times in a graph, B chosen so
// that one replay lasts about kGraphReplayTargetUs (at most kMaxGraphBatch),
// and each sample is a replay's time divided by B, which removes the launch
// gaps that dominate short kernels.
//
// A fault that leaves the context unusable (IsContextFatal: illegal
// address, trap, ...) comes back marked as a launch failure: the worker then
// answers CODE_LAUNCH_FAILED and exits, and kilnd starts a fresh one.
#pragma once

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
inline constexpr int kMaxTimedRepeats = 100000;

class CudaBackend final : public DeviceBackend {
 public:
  // Loads the driver (`library`) and opens device `ordinal`.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Open(int ordinal, const std::string& library);

  absl::StatusOr<kiln::v1::DescribeDeviceResponse> Describe() override;
  absl::StatusOr<kiln::v1::LoadModuleResponse>
  Load(const kiln::v1::LoadModuleRequest& request) override;
  absl::Status Unload(const std::string& module_id) override;
  absl::StatusOr<double> Run(const kiln::v1::LaunchSpec& launch,
                             std::vector<tools::HostParam>& params) override;
  absl::StatusOr<std::vector<double>> Measure(const kiln::v1::LaunchSpec& launch,
                                              std::vector<tools::HostParam>& params,
                                              const TimingOptions& options) override;

 private:
  struct LoadedModule {
    Module module;
    Function function;
    int64_t dynamic_smem_bytes = 0;
  };
  // What one launch of a loaded module on given arguments needs.
  struct Prepared {
    const LoadedModule* module = nullptr;
    LaunchConfig config;
  };

  CudaBackend(std::shared_ptr<Device> device, Stream stream)
      : device_(std::move(device)), stream_(std::move(stream)) {}
  absl::StatusOr<Prepared> Prepare(const kiln::v1::LaunchSpec& launch) const;
  absl::StatusOr<std::vector<double>> TimeLaunches(const Prepared& prepared, void** args,
                                                   const TimingOptions& options);
  absl::StatusOr<std::vector<double>> TimeGraphReplays(const Prepared& prepared, void** args,
                                                       const TimingOptions& options);
  absl::Status FlushL2();

  std::shared_ptr<Device> device_;
  Stream stream_;
  std::map<std::string, std::unique_ptr<LoadedModule>> modules_;
  std::optional<DeviceBuffer> flush_buffer_; // allocated by the first flush
};

} // namespace kiln::measure
