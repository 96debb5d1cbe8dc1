// The CPU target as a kiln-worker device ("cpu", or "cpu:N" for the extra
// CPU workers of `worker.cpu_workers`): a module is the shared
// object the host compiler made for a kernel (toolchain::HostCompile), written
// to a private temporary file and dlopened (toolchain::LoadedCpuKernel); a
// launch calls the CPU entry point of compiler/codegen/kernel_spec.h with
// the grid (the block size is fixed in the emitted code); timing is the
// calling thread's CPU time around each call (the kernel runs on it).
//
// The kernel runs in this process: a segfault in it kills the worker, which
// is the isolation kilnd relies on. A kernel that reports an error (its
// return value) is a launch failure.
//
// Describe reports the host: the first "model name" of /proc/cpuinfo, the
// machine architecture (uname), online processors as sm_count, physical
// memory, the L2 size sysconf knows and the clock /proc/cpuinfo gives.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/toolchain/host_cc.h"
#include "tuner/measure/device_backend.h"

namespace kiln::measure {

class CpuBackend final : public DeviceBackend {
 public:
  // `device_id` is what Describe reports: "cpu" or "cpu:N".
  explicit CpuBackend(std::string device_id = "cpu") : device_id_(std::move(device_id)) {}

  absl::StatusOr<kiln::v1::DescribeDeviceResponse> Describe() override;
  absl::StatusOr<kiln::v1::LoadModuleResponse>
  Load(const kiln::v1::LoadModuleRequest& request) override;
  absl::Status Unload(const std::string& module_id) override;
  absl::StatusOr<double> Run(const kiln::v1::LaunchSpec& launch,
                             std::vector<tools::HostParam>& params,
                             const std::vector<ArgOrigin>& origins) override;
  absl::StatusOr<std::vector<double>> Measure(const kiln::v1::LaunchSpec& launch,
                                              std::vector<tools::HostParam>& params,
                                              const std::vector<ArgOrigin>& origins,
                                              const TimingOptions& options) override;

 private:
  struct Module {
    toolchain::LoadedCpuKernel kernel;
    std::string symbol;
    // A program of several kernels: the entry points run after `kernel`.
    std::vector<toolchain::LoadedCpuKernel> next;
  };
  absl::StatusOr<const Module*> Find(const std::string& module_id) const;

  std::string device_id_;
  std::map<std::string, std::unique_ptr<Module>> modules_;
};

} // namespace kiln::measure
