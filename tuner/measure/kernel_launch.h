// Launching a generated kernel: checks the code generator's launch metadata
// against the program, evaluates the grid, lays out the argument block of one
// launch (host memory for the CPU target, device memory for CUDA), and, for
// kiln-run, compiles and runs a kernel once on the host CPU (host compiler,
// dlopen) or a CUDA device (NVRTC, driver API), copying each parameter's
// `before` data in and its `after` data out. kiln-run and kiln-worker share
// the argument layout (CpuLaunchArgs, CudaLaunchArgs).
//
// A CPU kernel run by RunOnCpu runs in this process, so while it runs the
// fatal signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) are caught on an
// alternate stack: the handler writes "kiln-run: the kernel crashed with ..."
// to stderr and ends the process with _exit(2), kiln-run's error status. The
// previous handlers and stack are restored after the run. (kiln-worker has
// its own handler: there a crash ends the worker, which is the isolation.)
//
// Thread-safety: RunOnCpu changes process-wide signal handlers while the
// kernel runs; call it from one thread at a time. The other functions are
// pure or touch only their arguments (and the given device); a launch-args
// object is used by one thread at a time.
//
// Errors: CheckLaunchSpec and EvalGrid return Internal when the launch
// metadata does not match the program, InvalidArgument for a grid extent that
// is not a positive constant (see EvalInt). RunOnCpu / RunOnCuda pass on the
// compiler's, loader's and driver's errors, ResourceExhausted when host memory
// runs out and InvalidArgument for launch dimensions the driver cannot take.
// The launch-args factories return ResourceExhausted when memory runs out and
// the driver's errors.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/codegen/kernel_spec.h"
#include "compiler/ir/ir.h"
#include "compiler/tools/kernel_inputs.h"
#include "tuner/measure/cuda_driver.h"

namespace kiln::measure {

// What one run measured.
struct RunResult {
  double kernel_ms = 0;
  std::string timing_kind;
  std::string compile_note;
};

// Checks the code generator's launch metadata against the program: one
// argument per parameter (same name, dtype and kind) then one per symbol,
// by the user's names (ir::UserName); `params` and `symbols` use them too.
absl::Status CheckLaunchSpec(const codegen::LaunchSpec& spec, const ir::Program& program,
                             const std::vector<tools::HostParam>& params,
                             const std::map<std::string, int64_t>& symbols);

// The grid extents of `spec` under `symbols`, padded to three with 1.
absl::StatusOr<std::array<int64_t, 3>> EvalGrid(const codegen::LaunchSpec& spec,
                                                const std::map<std::string, int64_t>& symbols);

// One kernel of a program's launch sequence (kernel_spec.h) with its grid
// evaluated: what a launcher needs to launch it after the ones before.
struct LaunchStep {
  std::string symbol;
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  int64_t dynamic_smem_bytes = 0;
  std::vector<codegen::TensorMapSpec> tensor_maps;
};

// Every kernel of `spec` in launch order, the first with `first_grid` (the
// caller's EvalGrid), the others' grids evaluated under `symbols`
// (InvalidArgument as EvalGrid).
absl::StatusOr<std::vector<LaunchStep>> EvalSequence(const codegen::LaunchSpec& spec,
                                                     const std::array<int64_t, 3>& first_grid,
                                                     const std::map<std::string, int64_t>& symbols);

// The byte size of each of `spec`'s global workspaces under `symbols`;
// InvalidArgument for a negative extent or a size past 2^40 bytes
// (kMaxWorkspaceBytes, all workspaces together).
inline constexpr int64_t kMaxWorkspaceBytes = int64_t{1} << 40;
absl::StatusOr<std::vector<size_t>> WorkspaceBytes(const codegen::LaunchSpec& spec,
                                                   const std::map<std::string, int64_t>& symbols);

// The argument block of one CPU kernel launch (kernel_spec.h's convention):
// each tensor parameter's bytes in host memory aligned to tools::kHostAlign,
// each scalar parameter and each symbol by value in an 8-byte slot, and
// args() pointing at them in kernel order. Move-only; moving keeps args()
// valid (the storage stays where it is).
class CpuLaunchArgs {
 public:
  // Copies every tensor parameter's `before` bytes in.
  static absl::StatusOr<CpuLaunchArgs> Make(const std::vector<tools::HostParam>& params,
                                            const std::vector<int32_t>& symbol_values);
  CpuLaunchArgs(CpuLaunchArgs&&) noexcept = default;
  CpuLaunchArgs& operator=(CpuLaunchArgs&&) noexcept = default;
  CpuLaunchArgs(const CpuLaunchArgs&) = delete;
  CpuLaunchArgs& operator=(const CpuLaunchArgs&) = delete;
  ~CpuLaunchArgs() = default;

  void** args() { return args_.data(); }
  // Appends one zero-filled buffer of bytes[w] per global workspace to
  // args(), after the symbols (kernel_spec.h). Call at most once, after
  // Make. ResourceExhausted when host memory runs out.
  absl::Status AddWorkspaces(const std::vector<size_t>& bytes);
  // Sets each parameter's `after` to what the kernel left (scalars: `before`).
  void CopyOut(std::vector<tools::HostParam>& params) const;
  // Copies each tensor's `before` into its buffer again (the params Make
  // took); the workspaces keep what the kernels left in them.
  void Reload(const std::vector<tools::HostParam>& params);

 private:
  CpuLaunchArgs() = default;
  std::vector<tools::AlignedBytes> workspaces_;
  std::unique_ptr<void*[]> workspace_pointers_; // args_ points into it
  std::vector<tools::AlignedBytes> buffers_;    // per parameter; null for scalars
  std::vector<void*> pointers_;                 // per parameter
  std::vector<uint64_t> slots_;                 // per parameter, then per symbol
  std::vector<void*> args_;
};

// The same in device memory: tensors in DeviceBuffers (copied from
// `before`), scalars and symbols in 8-byte slots, args() as cuLaunchKernel's
// kernelParams; after AddTensorMaps, the kernel's CUtensorMaps follow the
// symbols (kernel_spec.h).
class CudaLaunchArgs {
 public:
  static absl::StatusOr<CudaLaunchArgs> Make(const std::shared_ptr<Device>& device,
                                             const std::vector<tools::HostParam>& params,
                                             const std::vector<int32_t>& symbol_values);
  // The same with each tensor's buffer, already holding its starting data,
  // from `provide(index, bytes)` (bytes from the param's dtype and shape, so
  // `before.data` may be empty when the provider does not need it).
  using BufferProvider = std::function<absl::StatusOr<DeviceBuffer>(size_t index, size_t bytes)>;
  static absl::StatusOr<CudaLaunchArgs> Make(const std::vector<tools::HostParam>& params,
                                             const std::vector<int32_t>& symbol_values,
                                             const BufferProvider& provide);
  CudaLaunchArgs(CudaLaunchArgs&&) noexcept = default;
  CudaLaunchArgs& operator=(CudaLaunchArgs&&) noexcept = default;
  CudaLaunchArgs(const CudaLaunchArgs&) = delete;
  CudaLaunchArgs& operator=(const CudaLaunchArgs&) = delete;
  ~CudaLaunchArgs() = default;

  void** args() { return args_.data(); }
  // Appends one zero-filled device buffer of bytes[w] per global workspace
  // to args(), after the symbols (kernel_spec.h). Call at most once, after
  // Make and before AddTensorMaps. The driver's errors.
  absl::Status AddWorkspaces(const std::shared_ptr<Device>& device,
                             const std::vector<size_t>& bytes);
  // Appends one CUtensorMap per entry of `maps` to args(), in order, each
  // encoded with `driver` (tensor_map.h) for the tensor params[map.arg] at
  // its buffer's address and its `before` shape. The maps live (64-byte
  // aligned) as long as this object. A later call replaces the maps of the
  // one before (the next kernel of a sequence takes its own; a launch has
  // copied the arguments it was given).
  // InvalidArgument naming the tensor for a map the TMA cannot take or the
  // driver refuses, or one whose `arg` is not a tensor parameter;
  // Unimplemented when the driver has no cuTensorMapEncodeTiled.
  absl::Status AddTensorMaps(const CudaDriver& driver,
                             const std::vector<codegen::TensorMapSpec>& maps,
                             const std::vector<tools::HostParam>& params);
  // For a launch sequence (docs/design/multi-kernel.md): per kernel, an
  // argument array of args() followed by that kernel's tensor maps (encoded
  // as AddTensorMaps does, kept alive and in place by this object). Call at
  // most once, after AddWorkspaces, instead of AddTensorMaps; the errors are
  // AddTensorMaps'.
  absl::StatusOr<std::vector<void**>>
  AddTensorMapsPerKernel(const CudaDriver& driver,
                         const std::vector<std::vector<codegen::TensorMapSpec>>& maps,
                         const std::vector<tools::HostParam>& params);
  // Copies each tensor back into its parameter's `after` (synchronous); with
  // `outputs_only`, only the is_output tensors (the others' `after` is left
  // empty).
  absl::Status CopyOut(std::vector<tools::HostParam>& params, bool outputs_only = false) const;
  // Copies each tensor's `before` into its buffer again (the params Make
  // took); the workspaces keep what the kernels left in them.
  absl::Status Reload(const std::vector<tools::HostParam>& params);
  // The tensor buffers, in parameter order, for reuse.
  std::vector<DeviceBuffer> TakeBuffers() && { return std::move(buffers_); }

 private:
  CudaLaunchArgs() = default;
  std::vector<DeviceBuffer> buffers_; // one per tensor parameter, in order
  std::vector<uint64_t> slots_;       // per parameter (a tensor: its address), then per symbol
  std::unique_ptr<CuTensorMap[]> tensor_maps_; // args_ points into it: never reallocated
  size_t tensor_map_count_ = 0;                // at the end of args_
  std::vector<DeviceBuffer> workspaces_;
  std::unique_ptr<uint64_t[]> workspace_slots_; // args_ points into it
  std::vector<void*> args_;
  // AddTensorMapsPerKernel: per kernel, its maps and its argument array.
  std::vector<std::unique_ptr<CuTensorMap[]>> kernel_maps_;
  std::vector<std::vector<void*>> kernel_args_;
};

// The launch configuration of `block` threads on `grid` with `dynamic_smem`
// bytes of dynamic shared memory; InvalidArgument for extents the driver
// cannot take (a grid extent over 2^32 - 1, a block extent outside 1..1024).
absl::StatusOr<LaunchConfig> MakeLaunchConfig(const std::array<int64_t, 3>& grid,
                                              const std::array<int64_t, 3>& block,
                                              int64_t dynamic_smem);

// Compiles `kernel` with the host compiler, runs it once on `params` (then
// the symbols' values) and fills each parameter's `after`. A program of
// several kernels runs them all in order (the first on `grid`, the others
// on their grids under `symbols`), with its workspaces allocated for the
// sequence; the time is the whole sequence's. With `runs` > 1 the sequence
// runs that many times on the same workspaces, the tensors reloaded from
// `before` ahead of each run after the first (what a launcher that keeps
// its workspaces sees: split-K's tickets must be back at 0); `after` and
// the time are the last run's.
absl::StatusOr<RunResult>
RunOnCpu(const codegen::EmittedKernel& kernel, std::vector<tools::HostParam>& params,
         const std::vector<int32_t>& symbol_values, const std::array<int64_t, 3>& grid,
         const std::map<std::string, int64_t>& symbols = {}, int runs = 1);

// The same on `device`, compiled with NVRTC and timed with CUDA events.
absl::StatusOr<RunResult>
RunOnCuda(const codegen::EmittedKernel& kernel, const std::shared_ptr<Device>& device,
          std::vector<tools::HostParam>& params, const std::vector<int32_t>& symbol_values,
          const std::array<int64_t, 3>& grid, const std::map<std::string, int64_t>& symbols = {},
          int runs = 1);

// Whether a cubin for `arch` ("sm_86", "sm_90a") loads on a device of
// compute capability major.minor: same major version and no newer minor;
// the arch-specific "a" variants only on exactly their version.
bool CubinRunsOn(const std::string& arch, int major, int minor);

} // namespace kiln::measure
