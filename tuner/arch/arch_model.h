// Hardware models for the tuner: what the Roller policy needs to know about
// a device to size tiles and predict their time. A model comes from a preset
// (published spec-sheet numbers, so planning works on a machine without the
// GPU), from a worker's `describe` answer merged with the matching preset
// (describe reports the limits but not bandwidth or tensor throughput), and
// later from micro-benchmarks (WithMeasured).
//
// Units: bytes, MHz, GB/s (1e9 bytes per second), TFLOP/s (1e12 per second),
// nanoseconds. A throughput of 0 means "the device has no such unit" (for
// example tf32 on CDNA2).
// Thread-safety: plain data and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kiln/v1/worker.pb.h"

namespace kiln::arch {

enum class Vendor : uint8_t { kNvidia, kAmd, kCpu };

struct ArchModel {
  std::string name;   // preset key: "a100", "h100", "h200", "mi250x", "mi300x", "cpu"
  std::string model;  // marketing name: "NVIDIA H200"
  std::string target; // compiler target string: "cuda:sm_90", "hip:gfx942", "cpu"
  Vendor vendor = Vendor::kNvidia;
  int compute_capability_major = 0; // CUDA only
  int compute_capability_minor = 0;

  // Compute resources. For AMD an "SM" is a compute unit and a warp a wavefront.
  int sm_count = 0;
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int64_t registers_per_sm = 65536; // 32-bit registers
  int64_t registers_per_block = 65536;
  int registers_per_thread = 255;

  // Memory hierarchy.
  int64_t shared_bytes_per_block = 48 * 1024; // without opt-in
  int64_t shared_bytes_optin = 48 * 1024;     // the most one block may ask for
  int64_t shared_bytes_per_sm = 64 * 1024;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  int smem_banks = 32;
  int smem_bank_bytes = 4;
  int transaction_bytes = 128; // one coalesced global-memory line

  // Clocks.
  int sm_clock_mhz = 0; // boost clock
  int memory_clock_mhz = 0;
  int memory_bus_bits = 0;

  // Throughput (dense, no sparsity).
  double dram_gbs = 0;
  double l2_gbs = 0;   // estimate (vendors do not publish it)
  double smem_gbs = 0; // whole device: banks x bank width x clock x SMs
  double fp16_tflops = 0;
  double bf16_tflops = 0;
  double tf32_tflops = 0;
  double int8_tops = 0;
  double fp32_tflops = 0; // CUDA cores / vector ALUs
  double fp64_tflops = 0;
  // The fraction of the dense tensor peak that Kiln's generated MMA code
  // reaches today (mma.sync on every CUDA arch: no wgmma yet).
  double mma_efficiency = 0.8;
  // The fp16 / bf16 rate of Kiln's wgmma GEMMs (cuda:sm_90a with the pass
  // option gemm=wgmma), TFLOP/s over the device, calibrated on its best
  // tiles; 0: the device has no wgmma. Not scaled by the mma.sync
  // measurement (a different instruction).
  double wgmma_tflops = 0;
  // Latency of a global load that misses L2 (used through Little's law: how
  // many bytes must be in flight per SM to keep DRAM busy).
  double dram_latency_ns = 600;
  double launch_overhead_us = 3; // launch plus ramp-up and drain of one kernel

  // Where each throughput number came from: "preset" or "measured".
  std::string bandwidth_source = "preset";
  std::string throughput_source = "preset";
};

// Preset names in a fixed order.
std::vector<std::string> PresetNames();

// Looks a preset up by a loose name: the key ("h200"), the marketing name
// ("NVIDIA H200", "H200 SXM 141GB"), any case, spaces / dashes / underscores
// ignored. NotFound lists the known names.
absl::StatusOr<ArchModel> FindPreset(std::string_view name);

// The preset whose key occurs in a device model string ("NVIDIA H100 80GB
// HBM3" -> h100), or nullopt.
std::optional<ArchModel> PresetForDeviceModel(std::string_view model);

// A model from a worker's describe answer. Limits, SM count, clocks and
// caches come from the device; what describe cannot report (bandwidth,
// tensor throughput, latency) from the preset matching the device model
// name, scaled by the SM count and clock when those differ from the
// preset's. With no matching preset the bandwidth is estimated from the
// memory clock and bus width (double data rate) and the throughputs stay 0,
// which the policy reads as "memory-bound model only". InvalidArgument for
// a response without a device or with sm_count <= 0.
absl::StatusOr<ArchModel> FromDescribe(const kiln::v1::DescribeDeviceResponse& describe);

// The same from the daemon's Device record alone (ListDevices, a Tune
// request's device): SM count, shared memory, threads, clock, L2 and memory
// size from the device, the rest from the matching preset.
absl::StatusOr<ArchModel> FromDevice(const kiln::v1::Device& device);

// Whether a device id names a worker that runs the CPU target: "cpu", or
// "cpu:N" (N >= 1) for the extra CPU workers of `worker.cpu_workers`.
bool IsCpuDeviceId(std::string_view id);

// What micro-benchmarks measure once per device model (cached later in the
// cache DB). Unset fields keep the model's value.
struct Measured {
  std::optional<double> dram_gbs;
  std::optional<double> l2_gbs;
  std::optional<double> smem_gbs;
  std::optional<double> fp16_tflops;
  std::optional<double> bf16_tflops;
  std::optional<double> tf32_tflops;
  std::optional<double> int8_tops;
  std::optional<double> fp32_tflops;
  std::optional<double> mma_efficiency;
  std::optional<double> dram_latency_ns;
  std::optional<double> launch_overhead_us;
  // The measured rate of mma.sync.m16n8k16 f16 -> f32 over all SMs
  // (microbench.h): the instruction Kiln's generated GEMMs issue, so the
  // real ceiling of its code, which on Hopper is below the dense peak (that
  // needs wgmma). It replaces fp16_tflops and bf16_tflops (bf16 keeps the
  // model's bf16 / fp16 ratio) and re-expresses mma_efficiency relative to
  // it: the calibrated rate fp16_tflops x mma_efficiency is kept, capped at
  // the measured rate (efficiency at most 1), so a device that cannot
  // sustain the preset's figure is modelled at what it does sustain. A model
  // without tensor throughput (no preset) gets the measured rate with its
  // own mma_efficiency. An explicit fp16_tflops / mma_efficiency above wins.
  std::optional<double> mma_f16_tflops;
};

// `model` with the measured numbers replacing the preset ones (and the
// sources set to "measured").
ArchModel WithMeasured(ArchModel model, const Measured& measured);

// The dense tensor throughput for an MMA input dtype name ("float16",
// "bfloat16", "float32" = tf32, "int8"); 0 when there is no tensor unit
// for it.
double TensorTflops(const ArchModel& model, std::string_view input_dtype);

} // namespace kiln::arch
