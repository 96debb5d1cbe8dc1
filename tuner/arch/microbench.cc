#include "tuner/arch/microbench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/toolchain/cuda_compile.h"
#include "compiler/toolchain/host_cc.h"
#include "compiler/toolchain/nvrtc.h"

namespace kiln::arch {
namespace {

namespace pb = kiln::v1;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;
// Threads per block of every CUDA probe (the sources' __launch_bounds__).
constexpr int kThreads = 256;
// uint4 elements each copy thread moves (kiln_probe_copy).
constexpr int kCopyPerThread = 4;
// Independent accumulators per thread in kiln_probe_mma (kMmaChains there).
constexpr int kMmaChains = 8;
constexpr int kMmaWarpsPerBlock = kThreads / 32;
constexpr double kMmaFlopsPerInstruction = 2.0 * 16 * 8 * 16;

// The CUDA probes. Every thread of kiln_probe_copy moves four 16-byte
// vectors, loads first, at a stride of the block size (each warp's access is
// 512 contiguous bytes); the grid covers the buffer exactly once, so there
// is no tail. kiln_probe_l2 sweeps a buffer that fits in L2 `passes` times
// with ld.global.cg (L2 only, not L1) and folds what it read into a value
// that is written only if it equals a constant the zero-filled buffer never
// gives, which keeps the loads without writing. kiln_probe_mma keeps
// kMmaChains independent mma.sync chains per warp (enough to cover the
// instruction's latency with 8 warps per block and 4 blocks per SM) on
// operands held in registers; the asm is volatile, so nothing is folded.
constexpr char kCudaSource[] = R"cuda(
// Kiln's micro-benchmarks (tuner/arch/microbench.h). Fixed source.
extern "C" __global__ void __launch_bounds__(256)
kiln_probe_copy(const uint4* __restrict__ src, uint4* __restrict__ dst, long long n) {
  const long long base = (long long)blockIdx.x * (blockDim.x * 4) + threadIdx.x;
  if (base + 3LL * blockDim.x >= n) return;
  uint4 v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) v[k] = __ldcs(src + base + (long long)k * blockDim.x);
#pragma unroll
  for (int k = 0; k < 4; ++k) __stcs(dst + base + (long long)k * blockDim.x, v[k]);
}

extern "C" __global__ void __launch_bounds__(256)
kiln_probe_l2(const uint4* __restrict__ buf, uint4* __restrict__ sink, long long n, int passes) {
  unsigned x = 0, y = 0, z = 0, w = 0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (int p = 0; p < passes; ++p) {
    for (long long i = first; i < n; i += stride) {
      const uint4 v = __ldcg(buf + i);
      x ^= v.x;
      y ^= v.y;
      z ^= v.z;
      w ^= v.w;
    }
  }
  if ((x ^ y ^ z ^ w) == 0x9e3779b9u) sink[first] = make_uint4(x, y, z, w);
}

#define KILN_MMA(i)                                                                    \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "                    \
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"      \
               : "+f"(c[i][0]), "+f"(c[i][1]), "+f"(c[i][2]), "+f"(c[i][3])            \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))

extern "C" __global__ void __launch_bounds__(256) kiln_probe_mma(float* __restrict__ sink,
                                                                  int iters) {
  // Small fp16 values (2^-10 and neighbours): the sums stay finite.
  const unsigned t = threadIdx.x & 7u;
  const unsigned a0 = 0x14001400u + t, a1 = 0x14001401u, a2 = 0x14011400u, a3 = 0x14001400u;
  const unsigned b0 = 0x14001400u + (t << 16), b1 = 0x14001402u;
  float c[8][4];
#pragma unroll
  for (int i = 0; i < 8; ++i) c[i][0] = c[i][1] = c[i][2] = c[i][3] = 0.0f;
  for (int it = 0; it < iters; ++it) {
    KILN_MMA(0);
    KILN_MMA(1);
    KILN_MMA(2);
    KILN_MMA(3);
    KILN_MMA(4);
    KILN_MMA(5);
    KILN_MMA(6);
    KILN_MMA(7);
  }
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += c[i][0] + c[i][1] + c[i][2] + c[i][3];
  if (s == -1.0f) sink[blockIdx.x] = s;
}
)cuda";

// The CPU device's copy probe, with the CPU target's entry point
// (toolchain::LoadedCpuKernel::EntryFn): args[i] points at the i-th
// argument's slot (a buffer pointer, or the scalar itself).
constexpr char kCpuSource[] = R"cpp(
// Kiln's micro-benchmarks (tuner/arch/microbench.h). Fixed source.
#include <cstdint>
extern "C" int kiln_probe_copy_cpu(void** args, const int64_t* grid3, char* error,
                                   int error_len) {
  (void)grid3;
  (void)error;
  (void)error_len;
  const uint64_t* src = *static_cast<const uint64_t* const*>(args[0]);
  uint64_t* dst = *static_cast<uint64_t* const*>(args[1]);
  const int64_t n = *static_cast<const int64_t*>(args[2]);
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  return 0;
}
)cpp";

pb::TensorSpec Buffer(const std::string& name, int64_t bytes, bool is_output) {
  pb::TensorSpec t;
  t.set_name(name);
  t.set_dtype(pb::DTYPE_UINT8);
  t.add_shape(bytes);
  t.set_init(pb::TensorSpec::INIT_ZEROS);
  t.set_is_output(is_output);
  return t;
}

pb::TensorSpec Scalar(const std::string& name, pb::DType dtype, int64_t value) {
  pb::TensorSpec t;
  t.set_name(name);
  t.set_dtype(dtype);
  t.mutable_scalar()->set_int_value(value);
  return t;
}

// The numeric part of "sm_90a" (90), or 0.
int SmNumber(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return 0;
  std::string digits;
  for (char c : arch.substr(3)) {
    if (c < '0' || c > '9') break;
    digits.push_back(c);
  }
  int v = 0;
  return absl::SimpleAtoi(digits, &v) ? v : 0;
}

// Loads, measures and unloads one probe kernel over `call`.
class Prober {
 public:
  Prober(const WorkerCall& call, const MicrobenchOptions& options)
      : call_(call), options_(options) {}

  // The worker went away (a crash, a timeout, a launch failure): nothing
  // more can run on this call.
  bool lost() const { return lost_; }

  absl::Status Load(const std::string& module_id, const std::string& image,
                    const std::string& symbol) {
    pb::WorkerRequest r;
    r.mutable_load()->set_module_id(module_id);
    r.mutable_load()->set_image(image);
    r.mutable_load()->set_kernel_symbol(symbol);
    return Send(r).status();
  }

  void Unload(const std::string& module_id) {
    if (lost_) return;
    pb::WorkerRequest r;
    r.mutable_unload()->set_module_id(module_id);
    (void)Send(r);
  }

  // The fastest of `repeats` timed launches (after `warmup`), microseconds.
  absl::StatusOr<double> BestUs(const pb::LaunchSpec& launch, int warmup, int repeats) {
    pb::WorkerRequest r;
    pb::MeasureRequest* m = r.mutable_measure();
    *m->mutable_launch() = launch;
    m->set_warmup(warmup);
    m->set_repeats(repeats);
    m->set_timeout_seconds(options_.timeout_seconds);
    absl::StatusOr<pb::WorkerResponse> answer = Send(r);
    if (!answer.ok()) return answer.status();
    const auto& samples = answer->measure().samples_us();
    if (samples.empty()) return absl::InternalError("the worker returned no samples");
    const double best = *std::min_element(samples.begin(), samples.end());
    if (!std::isfinite(best) || best <= 0) {
      return absl::InternalError(absl::StrCat("implausible kernel time ", best, " us"));
    }
    return best;
  }

 private:
  absl::StatusOr<pb::WorkerResponse> Send(const pb::WorkerRequest& request) {
    if (lost_) return absl::UnavailableError("the worker was lost in an earlier probe");
    absl::StatusOr<pb::WorkerResponse> answer = call_(request);
    if (!answer.ok()) {
      lost_ = true;
      return answer.status();
    }
    if (answer->has_error()) {
      const pb::WorkerError& e = answer->error();
      if (e.code() == pb::WorkerError::CODE_LAUNCH_FAILED ||
          e.code() == pb::WorkerError::CODE_TIMEOUT) {
        lost_ = true;
      }
      return absl::InternalError(
          absl::StrCat(pb::WorkerError::Code_Name(e.code()), ": ", e.message()));
    }
    return answer;
  }

  const WorkerCall& call_;
  const MicrobenchOptions& options_;
  bool lost_ = false;
};

pb::LaunchSpec Launch(const std::string& module_id, int64_t grid, int64_t block) {
  pb::LaunchSpec l;
  l.set_module_id(module_id);
  l.add_grid(grid);
  l.add_block(block);
  return l;
}

int64_t RoundDown(int64_t v, int64_t unit) { return v / unit * unit; }

absl::StatusOr<double> CudaCopyGbs(Prober& p, const pb::Device& device,
                                   const MicrobenchOptions& o) {
  int64_t bytes = o.copy_bytes;
  if (bytes <= 0) {
    bytes = std::max<int64_t>(kGiB, 8 * device.l2_bytes());
    if (device.memory_bytes() > 0) bytes = std::min(bytes, device.memory_bytes() / 8);
  }
  const int64_t unit = int64_t{16} * kThreads * kCopyPerThread;
  bytes = RoundDown(bytes, unit);
  if (bytes <= 0) return absl::InvalidArgumentError("the copy buffer would be empty");
  pb::LaunchSpec l = Launch("kiln-probe-copy", bytes / unit, kThreads);
  *l.add_args() = Buffer("src", bytes, false);
  *l.add_args() = Buffer("dst", bytes, true);
  *l.add_args() = Scalar("n", pb::DTYPE_INT64, bytes / 16);
  absl::StatusOr<double> us = p.BestUs(l, o.warmup, o.repeats);
  if (!us.ok()) return us.status();
  return 2.0 * static_cast<double>(bytes) / (*us * 1e3);
}

// Scales a work count from a calibration run to options.target_ms.
int64_t Calibrated(int64_t work, double us, const MicrobenchOptions& o, int64_t max_work) {
  const double scaled = static_cast<double>(work) * o.target_ms * 1e3 / us;
  return std::clamp<int64_t>(static_cast<int64_t>(scaled), work, max_work);
}

absl::StatusOr<double> CudaL2Gbs(Prober& p, const pb::Device& device, const MicrobenchOptions& o) {
  if (device.l2_bytes() <= 0) return absl::FailedPreconditionError("the device reports no L2");
  const int64_t bytes = RoundDown(device.l2_bytes() / 2, int64_t{16} * kThreads);
  if (bytes <= 0) return absl::FailedPreconditionError("the L2 is too small to probe");
  const int64_t grid = std::max(1, device.sm_count()) * 8;
  auto launch = [&](int64_t passes) {
    pb::LaunchSpec l = Launch("kiln-probe-l2", grid, kThreads);
    *l.add_args() = Buffer("buf", bytes, false);
    *l.add_args() = Buffer("sink", grid * kThreads * 16, true);
    *l.add_args() = Scalar("n", pb::DTYPE_INT64, bytes / 16);
    *l.add_args() = Scalar("passes", pb::DTYPE_INT32, passes);
    return l;
  };
  constexpr int64_t kFirst = 8;
  absl::StatusOr<double> first = p.BestUs(launch(kFirst), 1, 1);
  if (!first.ok()) return first.status();
  const int64_t passes = Calibrated(kFirst, *first, o, 1 << 20);
  absl::StatusOr<double> us = p.BestUs(launch(passes), o.warmup, o.repeats);
  if (!us.ok()) return us.status();
  return static_cast<double>(passes) * static_cast<double>(bytes) / (*us * 1e3);
}

absl::StatusOr<double> CudaMmaTflops(Prober& p, const pb::Device& device,
                                     const MicrobenchOptions& o) {
  if (SmNumber(device.arch()) < 80) {
    return absl::FailedPreconditionError(
        absl::StrCat("mma.sync.m16n8k16 needs sm_80 or later; the device is ", device.arch()));
  }
  const int64_t grid = std::max(1, device.sm_count()) * 4;
  auto launch = [&](int64_t iters) {
    pb::LaunchSpec l = Launch("kiln-probe-mma", grid, kThreads);
    *l.add_args() = Buffer("sink", grid * 4, true);
    *l.add_args() = Scalar("iters", pb::DTYPE_INT32, iters);
    return l;
  };
  constexpr int64_t kFirst = 512;
  absl::StatusOr<double> first = p.BestUs(launch(kFirst), 1, 1);
  if (!first.ok()) return first.status();
  const int64_t iters = Calibrated(kFirst, *first, o, int64_t{1} << 30);
  absl::StatusOr<double> us = p.BestUs(launch(iters), o.warmup, o.repeats);
  if (!us.ok()) return us.status();
  const double flops = static_cast<double>(grid) * kMmaWarpsPerBlock * static_cast<double>(iters) *
                       kMmaChains * kMmaFlopsPerInstruction;
  return flops / (*us * 1e6);
}

void RunCuda(const pb::Device& device, const WorkerCall& call, const MicrobenchOptions& o,
             MicrobenchResult& out) {
  auto fail_all = [&](const std::string& why) {
    out.notes.push_back(absl::StrCat(kDramGbs, ": not measured: ", why));
    if (o.run_l2) out.notes.push_back(absl::StrCat(kL2Gbs, ": not measured: ", why));
    if (o.run_mma) out.notes.push_back(absl::StrCat(kMmaF16Tflops, ": not measured: ", why));
  };
  toolchain::CudaCompileInput in;
  in.source = kCudaSource;
  in.program_name = "kiln_probes.cu";
  in.arch = device.arch();
  absl::StatusOr<toolchain::CompileOutput> built = toolchain::NvrtcCompile(in);
  if (!built.ok()) {
    fail_all(absl::StrCat("cannot compile the probes for ", device.arch(), ": ",
                          built.status().message()));
    return;
  }
  Prober p(call, o);
  struct Probe {
    const char* name;
    const char* module;
    const char* symbol;
    bool enabled;
    absl::StatusOr<double> (*run)(Prober&, const pb::Device&, const MicrobenchOptions&);
  };
  for (const Probe& probe :
       {Probe{kDramGbs, "kiln-probe-copy", "kiln_probe_copy", true, &CudaCopyGbs},
        Probe{kL2Gbs, "kiln-probe-l2", "kiln_probe_l2", o.run_l2, &CudaL2Gbs},
        Probe{kMmaF16Tflops, "kiln-probe-mma", "kiln_probe_mma", o.run_mma, &CudaMmaTflops}}) {
    if (!probe.enabled) continue;
    absl::StatusOr<double> value =
        absl::UnavailableError("the worker was lost in an earlier probe");
    if (!p.lost()) {
      absl::Status loaded = p.Load(probe.module, built->cubin, probe.symbol);
      value = loaded.ok() ? probe.run(p, device, o) : absl::StatusOr<double>(loaded);
      p.Unload(probe.module);
    }
    if (value.ok() && std::isfinite(*value) && *value > 0) {
      out.values[probe.name] = *value;
    } else {
      out.notes.push_back(absl::StrCat(probe.name, ": not measured: ",
                                       value.ok() ? absl::StrCat("implausible value ", *value)
                                                  : absl::StrCat(value.status().message())));
    }
  }
}

void RunCpu(const pb::Device& device, const WorkerCall& call, const MicrobenchOptions& o,
            MicrobenchResult& out) {
  if (o.run_l2) out.skipped.push_back(absl::StrCat(kL2Gbs, ": not measured: no CPU L2 probe"));
  if (o.run_mma) {
    out.skipped.push_back(
        absl::StrCat(kMmaF16Tflops, ": not measured: the CPU device has no tensor cores"));
  }
  toolchain::HostCompileInput in;
  in.source = kCpuSource;
  in.program_name = "kiln_probes.cc";
  in.include_cpu_runtime = false;
  in.opt_level = 2;
  absl::StatusOr<toolchain::HostCompileOutput> built = toolchain::HostCompile(in);
  if (!built.ok()) {
    out.notes.push_back(absl::StrCat(
        kDramGbs, ": not measured: cannot compile the probe: ", built.status().message()));
    return;
  }
  int64_t bytes = o.copy_bytes;
  if (bytes <= 0) bytes = std::clamp<int64_t>(4 * device.l2_bytes(), 32 * kMiB, 256 * kMiB);
  bytes = RoundDown(bytes, 64);
  Prober p(call, o);
  absl::StatusOr<double> gbs = absl::InvalidArgumentError("the copy buffer would be empty");
  if (bytes > 0) {
    absl::Status loaded =
        p.Load("kiln-probe-copy-cpu", built->shared_object, "kiln_probe_copy_cpu");
    if (loaded.ok()) {
      pb::LaunchSpec l = Launch("kiln-probe-copy-cpu", 1, 1);
      *l.add_args() = Buffer("src", bytes, false);
      *l.add_args() = Buffer("dst", bytes, true);
      *l.add_args() = Scalar("n", pb::DTYPE_INT64, bytes / 8);
      absl::StatusOr<double> us = p.BestUs(l, o.warmup, o.repeats);
      gbs = us.ok() ? absl::StatusOr<double>(2.0 * static_cast<double>(bytes) / (*us * 1e3))
                    : us.status();
    } else {
      gbs = loaded;
    }
    p.Unload("kiln-probe-copy-cpu");
  }
  if (gbs.ok()) {
    out.values[kDramGbs] = *gbs;
  } else {
    out.notes.push_back(absl::StrCat(kDramGbs, ": not measured: ", gbs.status().message()));
  }
}

} // namespace

std::string MicrobenchResult::State() const {
  if (values.empty()) return "failed";
  return notes.empty() ? "measured" : "partial";
}

std::string MicrobenchResult::Note() const {
  std::vector<std::string> all = notes;
  all.insert(all.end(), skipped.begin(), skipped.end());
  return absl::StrJoin(all, "; ");
}

MicrobenchResult RunMicrobenchmarks(const pb::Device& device, const WorkerCall& call,
                                    const MicrobenchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  MicrobenchResult out;
  MicrobenchOptions o = options;
  o.warmup = std::max(0, o.warmup);
  o.repeats = std::clamp(o.repeats, 1, 1000);
  if (!(o.target_ms > 0)) o.target_ms = 20;
  if (IsCpuDeviceId(device.id())) {
    RunCpu(device, call, o, out);
  } else if (device.id().rfind("cuda:", 0) == 0) {
    RunCuda(device, call, o, out);
  } else {
    out.skipped.push_back(absl::StrCat("no micro-benchmarks for device '", device.id(), "'"));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

Measured MeasuredFromValues(const std::map<std::string, double>& values) {
  Measured m;
  auto get = [&](const char* name) -> std::optional<double> {
    auto it = values.find(name);
    if (it == values.end() || !std::isfinite(it->second) || it->second <= 0) return std::nullopt;
    return it->second;
  };
  m.dram_gbs = get(kDramGbs);
  m.l2_gbs = get(kL2Gbs);
  m.mma_f16_tflops = get(kMmaF16Tflops);
  return m;
}

std::string_view CudaProbeSource() { return kCudaSource; }
std::string_view CpuProbeSource() { return kCpuSource; }

} // namespace kiln::arch
