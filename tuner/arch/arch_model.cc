#include "tuner/arch/arch_model.h"

#include <algorithm>
#include <cctype>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::arch {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGB = 1000LL * 1000 * 1000;

// Banks x bank width x clock x SMs, in GB/s.
double SmemGbs(const ArchModel& m) {
  return static_cast<double>(m.smem_banks) * m.smem_bank_bytes * m.sm_clock_mhz * 1e6 * m.sm_count /
         1e9;
}

// Sources for the presets below: the vendors' product briefs and data sheets
// (NVIDIA A100 and H100/H200 data sheets and the Hopper and Ampere
// architecture white papers; AMD's Instinct MI250X and MI300X data sheets and
// the CDNA 2 / CDNA 3 white papers) for SM/CU counts, clocks, memory sizes,
// bandwidth and dense (non-sparse) peak throughput; the CUDA programming
// guide's table of per-compute-capability limits for shared memory and
// registers. L2 bandwidth and DRAM latency are not published: the values are
// round estimates in line with public micro-benchmark studies (L2 roughly 2-3x
// DRAM bandwidth; a few hundred ns for a DRAM miss) and are meant to be
// replaced by measurement (WithMeasured).

ArchModel A100() {
  ArchModel m;
  m.name = "a100";
  m.model = "NVIDIA A100-SXM4-80GB";
  m.target = "cuda:sm_80";
  m.compute_capability_major = 8;
  m.sm_count = 108;
  m.max_threads_per_sm = 2048;
  m.shared_bytes_optin = 163 * kKiB; // 227 KB on Hopper, 163 KB on GA100
  m.shared_bytes_per_sm = 164 * kKiB;
  m.l2_bytes = 40 * kMiB;
  m.memory_bytes = 80 * kGB;
  m.sm_clock_mhz = 1410;
  m.memory_clock_mhz = 1593;
  m.memory_bus_bits = 5120;
  m.dram_gbs = 2039; // HBM2e
  m.l2_gbs = 5000;
  m.fp16_tflops = 312;
  m.bf16_tflops = 312;
  m.tf32_tflops = 156;
  m.int8_tops = 624;
  m.fp32_tflops = 19.5;
  m.fp64_tflops = 19.5; // FP64 tensor core
  // Not measured on an A100 yet: mma.sync is Ampere's native tensor path,
  // so a well-pipelined kernel gets most of the peak.
  m.mma_efficiency = 0.7;
  m.dram_latency_ns = 600;
  return m;
}

// GH100 as shipped in the H100 SXM5 and the H200 (same SM count, clocks and
// tensor throughput; the H200 has six HBM3e stacks instead of five HBM3).
ArchModel Gh100() {
  ArchModel m;
  m.target = "cuda:sm_90";
  m.compute_capability_major = 9;
  m.sm_count = 132;
  m.max_threads_per_sm = 2048;
  m.shared_bytes_optin = 227 * kKiB;
  m.shared_bytes_per_sm = 228 * kKiB;
  m.l2_bytes = 50 * kMiB;
  m.sm_clock_mhz = 1980;
  m.fp16_tflops = 989.4;
  m.bf16_tflops = 989.4;
  m.tf32_tflops = 494.7;
  m.int8_tops = 1978.9;
  m.fp32_tflops = 66.9;
  m.fp64_tflops = 66.9; // FP64 tensor core
  // Measured: Kiln's mma.sync GEMM reaches ~400 of the 989 dense TFLOP/s
  // on an H200 (docs/benchmarks.md); Hopper's full rate needs wgmma.
  m.mma_efficiency = 0.42;
  // Kiln's wgmma GEMM (TMA + warp specialization, the Hopper default) on an
  // H100: 588-701 TFLOP/s at 128x256x64 tiles with two consumer warpgroups
  // (docs/benchmarks.md, Hopper GEMM run 3). 700 also predicts the grids of
  // one block per SM at M = 128 best (bench/model_fit.py).
  m.wgmma_tflops = 700;
  m.dram_latency_ns = 650;
  return m;
}

ArchModel H100() {
  ArchModel m = Gh100();
  m.name = "h100";
  m.model = "NVIDIA H100 80GB HBM3";
  m.memory_bytes = 80 * kGB;
  m.memory_clock_mhz = 2619;
  m.memory_bus_bits = 5120;
  m.dram_gbs = 3350;
  m.l2_gbs = 9000;
  return m;
}

ArchModel H200() {
  ArchModel m = Gh100();
  m.name = "h200";
  m.model = "NVIDIA H200";
  m.memory_bytes = 141 * kGB;
  m.memory_clock_mhz = 3125;
  m.memory_bus_bits = 6144;
  m.dram_gbs = 4800; // HBM3e
  m.l2_gbs = 11000;
  return m;
}

// AMD: numbers are per device as HIP enumerates it. An MI250X is two GCDs,
// each its own device, so the MI250X preset is one GCD (half the card's
// published totals).
ArchModel Mi250x() {
  ArchModel m;
  m.name = "mi250x";
  m.model = "AMD Instinct MI250X (one GCD)";
  m.target = "hip:gfx90a";
  m.vendor = Vendor::kAmd;
  m.sm_count = 110;
  m.warp_size = 64;
  m.max_threads_per_sm = 2048;
  m.registers_per_sm = 131072; // 512 KB of VGPRs per CU
  m.registers_per_block = 131072;
  m.registers_per_thread = 512;
  m.shared_bytes_per_block = 64 * kKiB; // LDS
  m.shared_bytes_optin = 64 * kKiB;
  m.shared_bytes_per_sm = 64 * kKiB;
  m.l2_bytes = 8 * kMiB;
  m.memory_bytes = 64 * kGB;
  m.sm_clock_mhz = 1700;
  m.memory_clock_mhz = 1600;
  m.memory_bus_bits = 4096;
  m.dram_gbs = 1638.4;
  m.l2_gbs = 4000;
  m.fp16_tflops = 191.5;
  m.bf16_tflops = 191.5;
  m.tf32_tflops = 0; // CDNA 2 has no tf32 matrix instructions
  m.int8_tops = 191.5;
  m.fp32_tflops = 23.95;
  m.fp64_tflops = 47.9;   // FP64 matrix
  m.mma_efficiency = 0.6; // no HIP code generation yet: a placeholder
  m.dram_latency_ns = 700;
  return m;
}

ArchModel Mi300x() {
  ArchModel m;
  m.name = "mi300x";
  m.model = "AMD Instinct MI300X";
  m.target = "hip:gfx942";
  m.vendor = Vendor::kAmd;
  m.sm_count = 304;
  m.warp_size = 64;
  m.max_threads_per_sm = 2048;
  m.registers_per_sm = 131072;
  m.registers_per_block = 131072;
  m.registers_per_thread = 512;
  m.shared_bytes_per_block = 64 * kKiB;
  m.shared_bytes_optin = 64 * kKiB;
  m.shared_bytes_per_sm = 64 * kKiB;
  m.l2_bytes = 32 * kMiB; // 4 MB per XCD; the 256 MB Infinity Cache is not modelled
  m.memory_bytes = 192 * kGB;
  m.sm_clock_mhz = 2100;
  m.memory_clock_mhz = 2600;
  m.memory_bus_bits = 8192;
  m.dram_gbs = 5300;
  m.l2_gbs = 14000;
  m.fp16_tflops = 1307.4;
  m.bf16_tflops = 1307.4;
  m.tf32_tflops = 653.7;
  m.int8_tops = 2614.9;
  m.fp32_tflops = 163.4;
  m.fp64_tflops = 163.4;
  m.mma_efficiency = 0.6;
  m.dram_latency_ns = 700;
  return m;
}

// The host running the CPU target, which emulates one block per core with
// CUDA's per-block limits (compiler/passes/target.cc). Throughput numbers are
// a rough placeholder for a server core; measure them for real planning.
ArchModel Cpu() {
  ArchModel m;
  m.name = "cpu";
  m.model = "host CPU";
  m.target = "cpu";
  m.vendor = Vendor::kCpu;
  m.sm_count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  m.max_threads_per_sm = 1024;
  m.max_blocks_per_sm = 1;
  m.shared_bytes_optin = 232448;
  m.shared_bytes_per_sm = 232448;
  m.l2_bytes = 32 * kMiB;
  m.sm_clock_mhz = 2500;
  m.dram_gbs = 20;
  m.l2_gbs = 100;
  m.fp32_tflops = 0.01 * m.sm_count;
  m.fp64_tflops = 0.005 * m.sm_count;
  m.mma_efficiency = 1.0;
  m.dram_latency_ns = 100;
  m.launch_overhead_us = 50;
  return m;
}

std::vector<ArchModel> Presets() {
  std::vector<ArchModel> out = {A100(), H100(), H200(), Mi250x(), Mi300x(), Cpu()};
  for (ArchModel& m : out) m.smem_gbs = SmemGbs(m);
  return out;
}

// Lower case with spaces, dashes, underscores and vendor words removed.
std::string Normalize(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '-' || c == '_') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (std::string_view word : {"nvidia", "amd", "instinct", "tesla"}) {
    size_t pos = 0;
    while ((pos = out.find(word, pos)) != std::string::npos) out.erase(pos, word.size());
  }
  return out;
}

// The preset key a normalized name refers to ("" when none). The AMD keys
// also match without their "x" (MI250, MI300).
std::string KeyIn(const std::string& normalized, bool prefix_only) {
  static constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
      {"h200", "h200"},    {"h100", "h100"},  {"a100", "a100"}, {"mi250", "mi250x"},
      {"mi300", "mi300x"}, {"gh100", "h100"}, {"host", "cpu"},  {"x8664", "cpu"},
      {"aarch64", "cpu"},  {"cpu", "cpu"},
  };
  for (const auto& [alias, key] : kAliases) {
    const size_t pos = normalized.find(alias);
    if (pos == std::string::npos || (prefix_only && pos != 0)) continue;
    return std::string(key);
  }
  return "";
}

double Scale(double value, double factor) { return value * factor; }

} // namespace

std::vector<std::string> PresetNames() {
  std::vector<std::string> out;
  for (const ArchModel& m : Presets()) out.push_back(m.name);
  return out;
}

absl::StatusOr<ArchModel> FindPreset(std::string_view name) {
  const std::string key = KeyIn(Normalize(name), /*prefix_only=*/true);
  for (ArchModel& m : Presets()) {
    if (m.name == key) return std::move(m);
  }
  return absl::NotFoundError(absl::StrCat("unknown arch '", std::string(name),
                                          "'; known: ", absl::StrJoin(PresetNames(), ", ")));
}

std::optional<ArchModel> PresetForDeviceModel(std::string_view model) {
  const std::string key = KeyIn(Normalize(model), /*prefix_only=*/false);
  for (ArchModel& m : Presets()) {
    if (m.name == key) return std::move(m);
  }
  return std::nullopt;
}

namespace {

absl::StatusOr<ArchModel> FromDeviceAndDescribe(const kiln::v1::Device& d,
                                                const kiln::v1::DescribeDeviceResponse* describe) {
  if (d.sm_count() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device '", d.id(), "' reports sm_count ", d.sm_count()));
  }
  const bool is_cpu = IsCpuDeviceId(d.id()) || d.arch() == "x86_64" || d.arch() == "aarch64";
  std::optional<ArchModel> preset =
      is_cpu ? PresetForDeviceModel("cpu") : PresetForDeviceModel(d.model());
  ArchModel m = preset ? *preset : ArchModel{};
  if (!preset) {
    m.name = d.arch();
    m.throughput_source = "unknown";
    m.bandwidth_source = "estimated";
  }
  const double old_rate = static_cast<double>(m.sm_count) * m.sm_clock_mhz;
  if (!d.model().empty()) m.model = d.model();
  if (!d.arch().empty() && !is_cpu) {
    m.target = absl::StrCat(d.arch().rfind("gfx", 0) == 0 ? "hip:" : "cuda:", d.arch());
  }
  m.sm_count = d.sm_count();
  if (d.shared_memory_per_block() > 0) m.shared_bytes_per_block = d.shared_memory_per_block();
  if (d.shared_memory_per_block_optin() > 0) {
    m.shared_bytes_optin = d.shared_memory_per_block_optin();
  }
  if (d.max_threads_per_block() > 0) m.max_threads_per_block = d.max_threads_per_block();
  if (d.clock_mhz() > 0) m.sm_clock_mhz = d.clock_mhz();
  if (d.l2_bytes() > 0) m.l2_bytes = d.l2_bytes();
  if (d.memory_bytes() > 0) m.memory_bytes = d.memory_bytes();
  if (describe != nullptr) {
    const kiln::v1::DescribeDeviceResponse& r = *describe;
    if (r.compute_capability_major() > 0) {
      m.compute_capability_major = r.compute_capability_major();
      m.compute_capability_minor = r.compute_capability_minor();
    }
    if (r.regs_per_block() > 0) m.registers_per_block = r.regs_per_block();
    if (r.regs_per_sm() > 0) m.registers_per_sm = r.regs_per_sm();
    if (r.shared_memory_per_sm() > 0) m.shared_bytes_per_sm = r.shared_memory_per_sm();
    if (r.max_threads_per_sm() > 0) m.max_threads_per_sm = r.max_threads_per_sm();
    if (r.warp_size() > 0) m.warp_size = r.warp_size();
    if (r.memory_clock_mhz() > 0) m.memory_clock_mhz = r.memory_clock_mhz();
    if (r.memory_bus_width() > 0) m.memory_bus_bits = r.memory_bus_width();
  }

  // Compute throughput follows SMs x clock (a cut-down part or a different
  // boost clock than the preset's).
  const double new_rate = static_cast<double>(m.sm_count) * m.sm_clock_mhz;
  if (preset && old_rate > 0 && new_rate > 0 && !is_cpu) {
    const double f = new_rate / old_rate;
    m.fp16_tflops = Scale(m.fp16_tflops, f);
    m.bf16_tflops = Scale(m.bf16_tflops, f);
    m.tf32_tflops = Scale(m.tf32_tflops, f);
    m.int8_tops = Scale(m.int8_tops, f);
    m.fp32_tflops = Scale(m.fp32_tflops, f);
    m.fp64_tflops = Scale(m.fp64_tflops, f);
    m.wgmma_tflops = Scale(m.wgmma_tflops, f);
  }
  if (!preset && m.memory_clock_mhz > 0 && m.memory_bus_bits > 0) {
    // Double data rate: two transfers per memory clock.
    m.dram_gbs = 2.0 * m.memory_clock_mhz * 1e6 * (m.memory_bus_bits / 8.0) / 1e9;
    m.l2_gbs = 2.5 * m.dram_gbs;
  }
  m.smem_gbs = SmemGbs(m);
  return m;
}

} // namespace

absl::StatusOr<ArchModel> FromDescribe(const kiln::v1::DescribeDeviceResponse& describe) {
  if (!describe.has_device()) {
    return absl::InvalidArgumentError("describe response has no device");
  }
  return FromDeviceAndDescribe(describe.device(), &describe);
}

bool IsCpuDeviceId(std::string_view id) {
  if (id == "cpu") return true;
  if (id.substr(0, 4) != "cpu:" || id.size() == 4) return false;
  return std::all_of(id.begin() + 4, id.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         id[4] != '0';
}

absl::StatusOr<ArchModel> FromDevice(const kiln::v1::Device& device) {
  return FromDeviceAndDescribe(device, nullptr);
}

ArchModel WithMeasured(ArchModel model, const Measured& measured) {
  auto set = [](double* field, const std::optional<double>& v, bool* touched) {
    if (v && *v > 0) {
      *field = *v;
      *touched = true;
    }
  };
  bool bw = false;
  bool tput = false;
  if (measured.mma_f16_tflops && *measured.mma_f16_tflops > 0) {
    const double rate = *measured.mma_f16_tflops;
    if (model.fp16_tflops > 0) {
      const double calibrated = model.fp16_tflops * model.mma_efficiency;
      if (model.bf16_tflops > 0) model.bf16_tflops = rate * model.bf16_tflops / model.fp16_tflops;
      model.mma_efficiency = std::min(1.0, calibrated / rate);
    } else {
      model.bf16_tflops = rate;
    }
    model.fp16_tflops = rate;
    tput = true;
  }
  set(&model.dram_gbs, measured.dram_gbs, &bw);
  set(&model.l2_gbs, measured.l2_gbs, &bw);
  set(&model.smem_gbs, measured.smem_gbs, &bw);
  set(&model.dram_latency_ns, measured.dram_latency_ns, &bw);
  set(&model.fp16_tflops, measured.fp16_tflops, &tput);
  set(&model.bf16_tflops, measured.bf16_tflops, &tput);
  set(&model.tf32_tflops, measured.tf32_tflops, &tput);
  set(&model.int8_tops, measured.int8_tops, &tput);
  set(&model.fp32_tflops, measured.fp32_tflops, &tput);
  set(&model.mma_efficiency, measured.mma_efficiency, &tput);
  set(&model.launch_overhead_us, measured.launch_overhead_us, &tput);
  if (bw) model.bandwidth_source = "measured";
  if (tput) model.throughput_source = "measured";
  return model;
}

double TensorTflops(const ArchModel& model, std::string_view input_dtype) {
  if (input_dtype == "float16") return model.fp16_tflops;
  if (input_dtype == "bfloat16") return model.bf16_tflops;
  if (input_dtype == "float32") return model.tf32_tflops;
  if (input_dtype == "int8" || input_dtype == "uint8") return model.int8_tops;
  if (input_dtype == "float64") return model.fp64_tflops;
  // fp8 runs at int8's rate on the tensor cores that take it; Kiln lowers it
  // to tensor instructions only on Hopper's wgmma (elsewhere: the scalar path).
  if ((input_dtype == "float8_e4m3" || input_dtype == "float8_e5m2") && model.wgmma_tflops > 0) {
    return model.int8_tops;
  }
  return 0;
}

} // namespace kiln::arch
