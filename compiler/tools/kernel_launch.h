// Runs a generated kernel once for kiln-run: checks the code generator's
// launch metadata against the program, evaluates the grid, then compiles and
// launches the kernel on the host CPU (host compiler, dlopen) or a CUDA device
// (NVRTC, driver API), copying each parameter's `before` data in and its
// `after` data out.
//
// A CPU kernel runs in this process, so while it runs the fatal signals
// (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) are caught on an alternate
// stack: the handler writes "kiln-run: the kernel crashed with ..." to stderr
// and ends the process with _exit(2), kiln-run's error status. The previous
// handlers and stack are restored after the run.
//
// Thread-safety: RunOnCpu changes process-wide signal handlers while the
// kernel runs; call it from one thread at a time. The other functions are
// pure or touch only their arguments (and the given device).
//
// Errors: CheckLaunchSpec and EvalGrid return Internal when the launch
// metadata does not match the program, InvalidArgument for a grid extent that
// is not a positive constant (see EvalInt). RunOnCpu / RunOnCuda pass on the
// compiler's, loader's and driver's errors, ResourceExhausted when host memory
// runs out and InvalidArgument for launch dimensions the driver cannot take.
#pragma once

#include <array>
#include <cstdint>
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

namespace kiln::tools {

// What one run measured.
struct RunResult {
  double kernel_ms = 0;
  std::string timing_kind;
  std::string compile_note;
};

// Checks the code generator's launch metadata against the program: one
// argument per parameter (same name, dtype and kind) then one per symbol.
absl::Status CheckLaunchSpec(const codegen::LaunchSpec& spec, const ir::Program& program,
                             const std::vector<HostParam>& params,
                             const std::map<std::string, int64_t>& symbols);

// The grid extents of `spec` under `symbols`, padded to three with 1.
absl::StatusOr<std::array<int64_t, 3>> EvalGrid(const codegen::LaunchSpec& spec,
                                                const std::map<std::string, int64_t>& symbols);

// Compiles `kernel` with the host compiler, runs it once on `params` (then
// the symbols' values) and fills each parameter's `after`.
absl::StatusOr<RunResult> RunOnCpu(const codegen::EmittedKernel& kernel,
                                   std::vector<HostParam>& params,
                                   const std::vector<int32_t>& symbol_values,
                                   const std::array<int64_t, 3>& grid);

// The same on `device`, compiled with NVRTC and timed with CUDA events.
absl::StatusOr<RunResult> RunOnCuda(const codegen::EmittedKernel& kernel,
                                    const std::shared_ptr<measure::Device>& device,
                                    std::vector<HostParam>& params,
                                    const std::vector<int32_t>& symbol_values,
                                    const std::array<int64_t, 3>& grid);

// Whether a cubin for `arch` ("sm_86", "sm_90a") loads on a device of
// compute capability major.minor: same major version and no newer minor;
// the arch-specific "a" variants only on exactly their version.
bool CubinRunsOn(const std::string& arch, int major, int minor);

} // namespace kiln::tools
