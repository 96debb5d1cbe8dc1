// What kiln-worker needs from one device: describe it, load and unload
// kernel modules, run a launch once and time it. WorkerSession turns worker
// requests into calls on a DeviceBackend; CpuBackend (the CPU target: shared
// objects from the host compiler) and CudaBackend (cubins through the driver
// API) implement it.
//
// Thread-safety: a backend is used by one thread (the worker's loop).
//
// Errors: InvalidArgument / NotFound for bad requests (an unknown module, a
// launch the device cannot take), ResourceExhausted when memory or another
// device resource runs out, Unavailable when there is no usable device, and
// a status marked with MarkLaunchFailure when the kernel itself failed (a
// fault, a trap, the CPU kernel's own error report): the worker answers
// CODE_LAUNCH_FAILED and exits, since the device may be unusable after it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/tools/kernel_inputs.h"
#include "kiln/v1/worker.pb.h"

namespace kiln::measure {

// Timing options of MeasureRequest, resolved.
struct TimingOptions {
  int warmup = 1;
  int repeats = 10;
  bool flush_l2 = false;
  bool use_cuda_graph = false;
  // Copy the outputs back into the params' `after` (what a validation needs;
  // a timing run does not, and the copy costs as much as a launch for large
  // outputs).
  bool copy_out = true;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual absl::StatusOr<kiln::v1::DescribeDeviceResponse> Describe() = 0;
  // Loads (or replaces) module `module_id`.
  virtual absl::StatusOr<kiln::v1::LoadModuleResponse>
  Load(const kiln::v1::LoadModuleRequest& request) = 0;
  // NotFound when no such module is loaded.
  virtual absl::Status Unload(const std::string& module_id) = 0;
  // Runs `launch` once on `params` (launch.args made host-side), fills every
  // parameter's `after`, and returns the kernel's time in microseconds.
  virtual absl::StatusOr<double> Run(const kiln::v1::LaunchSpec& launch,
                                     std::vector<tools::HostParam>& params) = 0;
  // Times `launch`: `warmup` untimed runs, then `repeats` samples in
  // microseconds. Outputs are left as the last run made them.
  virtual absl::StatusOr<std::vector<double>> Measure(const kiln::v1::LaunchSpec& launch,
                                                      std::vector<tools::HostParam>& params,
                                                      const TimingOptions& options) = 0;
};

// A launch's grid and block, padded to three extents with 1.
struct LaunchDims {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
};
// InvalidArgument unless `launch` has 1..3 positive grid extents and 0..3
// positive block extents.
absl::StatusOr<LaunchDims> GetLaunchDims(const kiln::v1::LaunchSpec& launch);

// `status` marked as a failure of the kernel itself.
absl::Status MarkLaunchFailure(absl::Status status);
bool IsLaunchFailure(const absl::Status& status);

} // namespace kiln::measure
