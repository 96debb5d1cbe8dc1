// Micro-benchmarks that measure what the hardware model cannot read from the
// device: DRAM bandwidth (a streaming copy over buffers far larger than L2),
// L2 bandwidth (reads of a buffer that fits in L2) and tensor throughput
// (mma.sync.m16n8k16 f16 -> f32 from registers on every SM). The daemon runs
// them once per device model and keeps the results in the cache
// (server/device_profiles.h); WithMeasured applies them to the model the
// Roller policy plans with.
//
// The kernels are Kiln's own fixed sources (CudaProbeSource, CpuProbeSource,
// reviewed like any other code): the caller compiles them in its own process
// (NVRTC for CUDA, the host compiler for the CPU device) and runs them
// through the worker's ordinary load / measure / unload requests, so no
// client code is involved and the daemon still never touches the driver.
// On the CPU device only the copy probe runs; the others are "not measured".
//
// Thread-safety: RunMicrobenchmarks may run concurrently for different
// devices; `call` is used from the calling thread only.
// Errors: none as a whole. Each probe that cannot compile, load or run
// leaves its value unset and says why in `notes`; a probe whose worker was
// lost stops the remaining ones.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kiln/v1/service.pb.h"
#include "kiln/v1/worker.pb.h"
#include "tuner/arch/arch_model.h"

namespace kiln::arch {

// Sends one request to the worker of the device being measured and returns
// its answer; an answer carrying a WorkerError is returned as is.
using WorkerCall =
    std::function<absl::StatusOr<kiln::v1::WorkerResponse>(const kiln::v1::WorkerRequest&)>;

struct MicrobenchOptions {
  // Bytes of each copy buffer (source and destination). 0: on a GPU 1 GiB,
  // raised to 8x L2 and lowered to an eighth of the device memory; on the
  // CPU 4x L2, within 32..256 MiB.
  int64_t copy_bytes = 0;
  int warmup = 2;
  int repeats = 10; // the best of them counts
  // The mma and L2 probes are sized (after one calibration run) to run about
  // this long.
  double target_ms = 20;
  double timeout_seconds = 60; // per worker request
  bool run_l2 = true;
  bool run_mma = true;
};

// Value names, as stored in the cache and in DeviceMeasurements.
inline constexpr char kDramGbs[] = "dram_gbs";
inline constexpr char kL2Gbs[] = "l2_gbs";
inline constexpr char kMmaF16Tflops[] = "mma_f16_tflops";

struct MicrobenchResult {
  // Measured values by name (kDramGbs, ...): only those that were measured.
  std::map<std::string, double> values;
  // One line per probe that failed: "dram_gbs: not measured: LOAD_FAILED ...".
  std::vector<std::string> notes;
  // One line per probe that does not apply to the device: "mma_f16_tflops:
  // not measured: the CPU device has no tensor cores".
  std::vector<std::string> skipped;
  double seconds = 0; // wall time of the whole run, compiles included
  // "measured" (every probe that applies ran), "partial" or "failed"
  // (nothing measured): DeviceMeasurements.state.
  std::string State() const;
  // notes then skipped, "; "-separated.
  std::string Note() const;
};

// Runs the probes on `device` (its id, arch, SM count, L2 and memory size as
// ListDevices reports them) through `call`.
MicrobenchResult RunMicrobenchmarks(const kiln::v1::Device& device, const WorkerCall& call,
                                    const MicrobenchOptions& options = {});

// The overrides for WithMeasured from stored values (unknown names ignored).
Measured MeasuredFromValues(const std::map<std::string, double>& values);

// The fixed probe sources.
std::string_view CudaProbeSource();
std::string_view CpuProbeSource();

} // namespace kiln::arch
