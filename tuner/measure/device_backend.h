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

// Where a parameter's starting data comes from, parallel to the params of a
// Run or Measure: generated data has the InputCache key it is kept under, and
// zero-filled tensors say so. A backend with memory of its own (CUDA) keeps a
// pristine device copy of keyed data between requests and starts each launch
// from a device-side copy of it, and zeroes on the device; such params may
// then come with `before.data` left empty (see ResidentKey). Every launch
// still starts from exactly the bytes the spec describes, whatever the
// kernel wrote into its arguments last time.
struct ArgOrigin {
  std::string key;    // InputCache::KeyFor; "" for data that came with the request
  bool zeros = false; // all zero bytes
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
  // Runs `launch` once on `params` (launch.args made host-side), fills the
  // `after` of every output (is_output) parameter, and returns the kernel's
  // time in microseconds. `origins` is empty or parallel to `params`.
  virtual absl::StatusOr<double> Run(const kiln::v1::LaunchSpec& launch,
                                     std::vector<tools::HostParam>& params,
                                     const std::vector<ArgOrigin>& origins) = 0;
  // Times `launch`: `warmup` untimed runs, then `repeats` samples in
  // microseconds. Outputs are left as the last run made them.
  virtual absl::StatusOr<std::vector<double>> Measure(const kiln::v1::LaunchSpec& launch,
                                                      std::vector<tools::HostParam>& params,
                                                      const std::vector<ArgOrigin>& origins,
                                                      const TimingOptions& options) = 0;
  // Whether data with this ArgOrigin key is resident in the backend, so that
  // a param of that origin may come without its bytes. Default: never.
  virtual bool ResidentKey(const std::string& key) const {
    (void)key;
    return false;
  }
  // Whether zero-filled params may come without their bytes. Default: no.
  virtual bool ZeroesOnDevice() const { return false; }
  // Ahead of any launch: keeps the keyed generated data among `params`
  // (those with bytes) resident, so that the first launch on them copies
  // device to device. Default: nothing to do (the bytes stay in the worker's
  // input cache).
  virtual absl::Status Preload(const std::vector<tools::HostParam>& params,
                               const std::vector<ArgOrigin>& origins) {
    (void)params;
    (void)origins;
    return absl::OkStatus();
  }
};

// A launch's grid and block, padded to three extents with 1.
struct LaunchDims {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
};
// InvalidArgument unless `launch` has 1..3 positive grid extents and 0..3
// positive block extents.
absl::StatusOr<LaunchDims> GetLaunchDims(const kiln::v1::LaunchSpec& launch);
// The same for every kernel of a launch sequence (LaunchSpec.next_kernels:
// docs/design/multi-kernel.md), the first kernel's first; InvalidArgument
// naming the kernel, or for a workspace size outside 0..kMaxWorkspaceBytes.
absl::StatusOr<std::vector<LaunchDims>> GetSequenceDims(const kiln::v1::LaunchSpec& launch);

// `status` marked as a failure of the kernel itself.
absl::Status MarkLaunchFailure(absl::Status status);
bool IsLaunchFailure(const absl::Status& status);

} // namespace kiln::measure
