#include "tuner/measure/cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <fstream>
#include <utility>

#include <sys/utsname.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "tuner/measure/crash_report.h"
#include "tuner/measure/kernel_launch.h"

namespace kiln::measure {
namespace {

namespace pb = kiln::v1;

// The value of the first "key : value" line of /proc/cpuinfo with `key`.
std::string CpuInfoField(absl::string_view key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view view(line);
    if (!absl::StartsWith(view, key)) continue;
    const size_t colon = view.find(':');
    if (colon == absl::string_view::npos) continue;
    if (absl::StripAsciiWhitespace(view.substr(0, colon)) != key) continue;
    return absl::StrCat(absl::StripAsciiWhitespace(view.substr(colon + 1)));
  }
  return "";
}

// Evicts the caches between timed runs by writing a buffer twice the
// last-level cache (at least 32 MiB; at most 512 MiB, as a server's L3
// sum over all its chiplets can be large while one core sees a part).
void FlushCaches() {
  static std::vector<char>* buffer = [] {
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE); // NOLINT(google-runtime-int): the API type
    const size_t bytes = std::clamp<size_t>(l3 > 0 ? 2 * static_cast<size_t>(l3) : 0,
                                            size_t{32} << 20, size_t{512} << 20);
    return new std::vector<char>(bytes);
  }();
  std::memset(buffer->data(), 1, buffer->size());
  asm volatile("" : : "r"(buffer->data()) : "memory");
}

// The calling thread's CPU time in microseconds. A CPU kernel runs on the
// calling thread (its GPU threads are fibers of it), so this is the
// kernel's own work: a co-tenant that takes the core (another build, a CI
// job beside it) delays it but does not lengthen it, where wall time would
// count the wait. Regress verdicts on shared CI runners depend on that.
double ThreadCpuMicros() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) * 1e-3;
}

} // namespace

absl::StatusOr<pb::DescribeDeviceResponse> CpuBackend::Describe() {
  pb::DescribeDeviceResponse out;
  pb::Device* d = out.mutable_device();
  d->set_id(device_id_);
  const std::string model = CpuInfoField("model name");
  d->set_model(model.empty() ? "host CPU" : model);
  utsname names{};
  d->set_arch(uname(&names) == 0 ? names.machine : "unknown");
  d->set_sm_count(static_cast<int32_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))));
  const long pages = sysconf(_SC_PHYS_PAGES);   // NOLINT(google-runtime-int): the API type
  const long page_size = sysconf(_SC_PAGESIZE); // NOLINT(google-runtime-int): the API type
  if (pages > 0 && page_size > 0) d->set_memory_bytes(int64_t{pages} * page_size);
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); // NOLINT(google-runtime-int): the API type
  if (l2 > 0) d->set_l2_bytes(l2);
  double mhz = 0;
  if (absl::SimpleAtod(CpuInfoField("cpu MHz"), &mhz)) d->set_clock_mhz(static_cast<int32_t>(mhz));
  d->set_worker_state("running");
  // The CPU target emulates the GPU's thread program, warps of 32 included.
  out.set_warp_size(32);
  out.set_driver_version(names.release);
  return out;
}

absl::StatusOr<pb::LoadModuleResponse> CpuBackend::Load(const pb::LoadModuleRequest& request) {
  if (request.module_id().empty()) return absl::InvalidArgumentError("LoadModule: no module_id");
  if (request.kernel_symbol().empty()) {
    return absl::InvalidArgumentError("LoadModule: no kernel_symbol");
  }
  absl::StatusOr<toolchain::LoadedCpuKernel> kernel =
      toolchain::LoadedCpuKernel::Load(request.image(), request.kernel_symbol());
  if (!kernel.ok()) return kernel.status();
  auto module = std::make_unique<Module>(Module{*std::move(kernel), request.kernel_symbol(), {}});
  for (const std::string& symbol : request.next_kernel_symbols()) {
    absl::StatusOr<toolchain::LoadedCpuKernel> next =
        toolchain::LoadedCpuKernel::Load(request.image(), symbol);
    if (!next.ok()) return next.status();
    module->next.push_back(*std::move(next));
  }
  modules_[request.module_id()] = std::move(module);
  pb::LoadModuleResponse out;
  out.set_module_id(request.module_id());
  return out;
}

absl::Status CpuBackend::Unload(const std::string& module_id) {
  if (modules_.erase(module_id) == 0) {
    return absl::NotFoundError(absl::StrCat("no module '", module_id, "' is loaded"));
  }
  return absl::OkStatus();
}

absl::StatusOr<const CpuBackend::Module*> CpuBackend::Find(const std::string& module_id) const {
  auto it = modules_.find(module_id);
  if (it == modules_.end()) {
    return absl::NotFoundError(absl::StrCat("no module '", module_id, "' is loaded"));
  }
  return it->second.get();
}

absl::StatusOr<double> CpuBackend::Run(const pb::LaunchSpec& launch,
                                       std::vector<tools::HostParam>& params,
                                       const std::vector<ArgOrigin>& origins) {
  TimingOptions once;
  once.warmup = 0;
  once.repeats = 1;
  absl::StatusOr<std::vector<double>> samples = Measure(launch, params, origins, once);
  if (!samples.ok()) return samples.status();
  return samples->front();
}

absl::StatusOr<std::vector<double>> CpuBackend::Measure(const pb::LaunchSpec& launch,
                                                        std::vector<tools::HostParam>& params,
                                                        const std::vector<ArgOrigin>& /*origins*/,
                                                        const TimingOptions& options) {
  absl::StatusOr<std::vector<LaunchDims>> dims = GetSequenceDims(launch);
  if (!dims.ok()) return dims.status();
  absl::StatusOr<const Module*> module = Find(launch.module_id());
  if (!module.ok()) return module.status();
  if ((*module)->next.size() + 1 != dims->size()) {
    return absl::InvalidArgumentError(absl::StrCat("the launch has ", dims->size(),
                                                   " kernels, module '", launch.module_id(), "' ",
                                                   (*module)->next.size() + 1));
  }
  absl::StatusOr<CpuLaunchArgs> args = CpuLaunchArgs::Make(params, {});
  if (!args.ok()) return args.status();
  const std::vector<size_t> workspaces(launch.workspace_bytes().begin(),
                                       launch.workspace_bytes().end());
  if (absl::Status s = args->AddWorkspaces(workspaces); !s.ok()) return s;

  SetCrashContext(
      absl::StrCat("running module '", launch.module_id(), "' (", (*module)->symbol, ")"));
  // The whole sequence, in order (docs/design/multi-kernel.md).
  auto run = [&]() -> absl::Status {
    for (size_t k = 0; k < dims->size(); ++k) {
      const toolchain::LoadedCpuKernel& kernel =
          k == 0 ? (*module)->kernel : (*module)->next[k - 1];
      absl::Status s = kernel.Run(args->args(), (*dims)[k].grid.data());
      if (!s.ok()) return MarkLaunchFailure(std::move(s));
    }
    return absl::OkStatus();
  };
  for (int i = 0; i < options.warmup; ++i) {
    if (absl::Status s = run(); !s.ok()) return s;
  }
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(options.repeats));
  for (int i = 0; i < options.repeats; ++i) {
    if (options.flush_l2) FlushCaches();
    const double start = ThreadCpuMicros();
    if (absl::Status s = run(); !s.ok()) return s;
    samples.push_back(ThreadCpuMicros() - start);
  }
  SetCrashContext("waiting for a request");
  if (options.copy_out) args->CopyOut(params);
  return samples;
}

} // namespace kiln::measure
