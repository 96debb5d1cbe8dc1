#include "tuner/measure/kernel_launch.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <utility>

#include <signal.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "compiler/ir/ir_util.h"
#include "compiler/passes/fold_grid.h"
#include "compiler/runtime/runtime_headers.h"
#include "compiler/toolchain/cuda_compile.h"
#include "compiler/toolchain/host_cc.h"
#include "compiler/toolchain/nvrtc.h"

namespace kiln::measure {
namespace {

using tools::HostParam;

// kiln-run's exit status for anything but a check mismatch (kExitError in
// kiln_run_main.cc).
constexpr int kCrashExitStatus = 2;

// A generated kernel runs in this process: a crash in it (a code generator
// bug) must still end with the documented exit status and a message, so
// fatal signals are caught, on their own stack (a fiber's stack may be the
// one that overflowed), while the kernel runs.
extern "C" void OnKernelCrash(int sig) {
  const char* name = sig == SIGSEGV  ? "SIGSEGV (invalid memory access)"
                     : sig == SIGBUS ? "SIGBUS"
                     : sig == SIGFPE ? "SIGFPE (arithmetic error, e.g. integer division by zero)"
                     : sig == SIGILL ? "SIGILL"
                                     : "SIGABRT";
  static constexpr char kPrefix[] = "kiln-run: the kernel crashed with ";
  static constexpr char kSuffix[] = "; --emit-dir DIR writes the generated source\n";
  ssize_t ignored = write(STDERR_FILENO, kPrefix, sizeof(kPrefix) - 1);
  ignored = write(STDERR_FILENO, name, strlen(name));
  ignored = write(STDERR_FILENO, kSuffix, sizeof(kSuffix) - 1);
  (void)ignored;
  _exit(kCrashExitStatus);
}

class CrashGuard {
 public:
  CrashGuard() : stack_(kStackBytes) {
    stack_t alt{};
    alt.ss_sp = stack_.data();
    alt.ss_size = stack_.size();
    sigaltstack(&alt, &old_stack_);
    struct sigaction action {};
    action.sa_handler = OnKernelCrash;
    action.sa_flags = SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &action, &old_[i]);
  }
  ~CrashGuard() {
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
    sigaltstack(&old_stack_, nullptr);
  }
  CrashGuard(const CrashGuard&) = delete;
  CrashGuard& operator=(const CrashGuard&) = delete;

 private:
  static constexpr size_t kStackBytes = 64 * 1024;
  static constexpr std::array<int, 5> kSignals = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  std::vector<char> stack_;
  stack_t old_stack_{};
  std::array<struct sigaction, 5> old_{};
};

// Scalars and symbols by value, in 8-byte slots (little-endian: a narrower
// value sits at the slot's start, which is what args[i] points to).
uint64_t ScalarSlot(const kiln::tools::NpyArray& a) {
  uint64_t slot = 0;
  std::memcpy(&slot, a.data.data(), std::min<size_t>(a.data.size(), sizeof(slot)));
  return slot;
}

} // namespace

absl::Status CheckLaunchSpec(const kiln::codegen::LaunchSpec& spec, const ir::Program& program,
                             const std::vector<HostParam>& params,
                             const std::map<std::string, int64_t>& symbols) {
  const size_t want = program.params.size() + program.symbols.size();
  auto mismatch = [](absl::string_view detail) {
    return absl::InternalError(
        absl::StrCat("the code generator's launch metadata does not match the program: ", detail));
  };
  if (spec.args.size() != want) {
    return mismatch(
        absl::StrCat(spec.args.size(), " kernel arguments for ", want, " parameters and symbols"));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const kiln::codegen::KernelArg& arg = spec.args[i];
    const HostParam& p = params[i];
    if (arg.name != p.name || arg.dtype != p.dtype || arg.is_scalar != p.is_scalar ||
        arg.is_symbol) {
      return mismatch(absl::StrCat("argument ", i, " is '", arg.name, "' (",
                                   std::string(ir::DTypeName(arg.dtype)), "), parameter '", p.name,
                                   "' (", std::string(ir::DTypeName(p.dtype)), ")"));
    }
    if (!p.is_scalar) {
      absl::StatusOr<std::vector<int64_t>> shape =
          tools::EvalShape(arg.shape, symbols, absl::StrCat("kernel argument '", arg.name, "'"));
      if (!shape.ok()) return mismatch(shape.status().message());
      if (*shape != p.before.shape) {
        return mismatch(absl::StrCat("argument '", arg.name, "' has shape ",
                                     kiln::tools::FormatShape(*shape), ", the parameter ",
                                     kiln::tools::FormatShape(p.before.shape)));
      }
    }
  }
  for (size_t s = 0; s < program.symbols.size(); ++s) {
    const kiln::codegen::KernelArg& arg = spec.args[params.size() + s];
    const std::string& name = ir::UserName(program.symbols[s]);
    if (!arg.is_symbol || arg.name != name) {
      return mismatch(absl::StrCat("argument ", params.size() + s, " is '", arg.name, "', symbol '",
                                   name, "'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::array<int64_t, 3>> EvalGrid(const kiln::codegen::LaunchSpec& spec,
                                                const std::map<std::string, int64_t>& symbols) {
  if (spec.grid.empty() || spec.grid.size() > 3) {
    return absl::InternalError(
        absl::StrCat("the code generator gave a grid of ", spec.grid.size(), " extents"));
  }
  std::array<int64_t, 3> grid = {1, 1, 1};
  for (size_t d = 0; d < spec.grid.size(); ++d) {
    absl::StatusOr<int64_t> v =
        tools::EvalInt(spec.grid[d], symbols, absl::StrCat("grid extent ", d));
    if (!v.ok()) return v.status();
    if (*v <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("grid extent ", d, " is ", *v));
    }
    // Constant extents past CUDA's limits are folded at compile time
    // (compiler/passes/fold_grid.h); these sizes came with the launch.
    const int64_t limit = d == 0 ? kiln::passes::kMaxGridX : kiln::passes::kMaxGridYZ;
    if (*v > limit) {
      return absl::InvalidArgumentError(
          absl::StrCat("grid extent ", d, " is ", *v, " for these sizes; CUDA launches at most ",
                       limit, " blocks along ",
                       d == 0   ? "x"
                       : d == 1 ? "y"
                                : "z",
                       " (put the long dimension along x, or bind it at compile time so that "
                       "Kiln folds it)"));
    }
    grid[d] = *v;
  }
  return grid;
}

absl::StatusOr<std::vector<LaunchStep>>
EvalSequence(const kiln::codegen::LaunchSpec& spec, const std::array<int64_t, 3>& first_grid,
             const std::map<std::string, int64_t>& symbols) {
  std::vector<LaunchStep> out;
  for (const kiln::codegen::KernelLaunch& k : kiln::codegen::LaunchSequence(spec)) {
    LaunchStep step;
    step.symbol = k.symbol;
    step.block = k.block;
    step.dynamic_smem_bytes = k.dynamic_smem_bytes;
    step.tensor_maps = k.tensor_maps;
    if (out.empty()) {
      step.grid = first_grid;
    } else {
      kiln::codegen::LaunchSpec one;
      one.grid = k.grid;
      absl::StatusOr<std::array<int64_t, 3>> grid = EvalGrid(one, symbols);
      if (!grid.ok()) {
        return absl::Status(grid.status().code(),
                            absl::StrCat("kernel ", out.size() + 1, " (", k.symbol,
                                         "): ", grid.status().message()));
      }
      step.grid = *grid;
    }
    out.push_back(std::move(step));
  }
  return out;
}

absl::StatusOr<std::vector<size_t>> WorkspaceBytes(const kiln::codegen::LaunchSpec& spec,
                                                   const std::map<std::string, int64_t>& symbols) {
  std::vector<size_t> out;
  int64_t total = 0;
  for (const kiln::codegen::WorkspaceSpec& w : spec.workspaces) {
    const std::string what = absl::StrCat("workspace '", w.name, "'");
    absl::StatusOr<std::vector<int64_t>> shape = tools::EvalShape(w.shape, symbols, what);
    if (!shape.ok()) return shape.status();
    int64_t bytes = kiln::tools::DTypeBytes(w.dtype);
    for (int64_t e : *shape) {
      if (e < 0 || (e > 0 && bytes > kMaxWorkspaceBytes / e)) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " has shape ", kiln::tools::FormatShape(*shape), ": more than the ",
                         kMaxWorkspaceBytes, " bytes a launch may allocate"));
      }
      bytes *= e;
    }
    total += bytes;
    if (total > kMaxWorkspaceBytes) {
      return absl::InvalidArgumentError(absl::StrCat("the workspaces need more than the ",
                                                     kMaxWorkspaceBytes,
                                                     " bytes a launch may allocate"));
    }
    out.push_back(static_cast<size_t>(bytes));
  }
  return out;
}

absl::Status CpuLaunchArgs::AddWorkspaces(const std::vector<size_t>& bytes) {
  if (workspace_pointers_ != nullptr) {
    return absl::FailedPreconditionError("AddWorkspaces: the workspaces were already added");
  }
  workspace_pointers_ = std::make_unique<void*[]>(bytes.size() + 1);
  for (size_t w = 0; w < bytes.size(); ++w) {
    workspaces_.push_back(tools::AllocateAligned(std::max<size_t>(bytes[w], 1)));
    if (workspaces_.back() == nullptr) return absl::ResourceExhaustedError("out of host memory");
    std::memset(workspaces_.back().get(), 0, bytes[w]);
    workspace_pointers_[w] = workspaces_.back().get();
    args_.push_back(&workspace_pointers_[w]);
  }
  return absl::OkStatus();
}

absl::Status CudaLaunchArgs::AddWorkspaces(const std::shared_ptr<Device>& device,
                                           const std::vector<size_t>& bytes) {
  if (workspace_slots_ != nullptr || tensor_maps_ != nullptr) {
    return absl::FailedPreconditionError(
        "AddWorkspaces: call it once, before the tensor maps are added");
  }
  workspace_slots_ = std::make_unique<uint64_t[]>(bytes.size() + 1);
  for (size_t w = 0; w < bytes.size(); ++w) {
    absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(device, bytes[w]);
    if (!buffer.ok()) return buffer.status();
    if (bytes[w] > 0) {
      const std::string zeros(bytes[w], '\0');
      if (absl::Status s = buffer->CopyFromHost(zeros.data(), bytes[w]); !s.ok()) return s;
    }
    workspace_slots_[w] = buffer->address();
    workspaces_.push_back(*std::move(buffer));
    args_.push_back(&workspace_slots_[w]);
  }
  return absl::OkStatus();
}

absl::StatusOr<CpuLaunchArgs> CpuLaunchArgs::Make(const std::vector<HostParam>& params,
                                                  const std::vector<int32_t>& symbol_values) {
  CpuLaunchArgs out;
  out.buffers_.resize(params.size());
  out.pointers_.assign(params.size(), nullptr);
  out.slots_.assign(params.size() + symbol_values.size(), 0);
  for (size_t i = 0; i < params.size(); ++i) {
    const HostParam& p = params[i];
    if (p.is_scalar) {
      out.slots_[i] = ScalarSlot(p.before);
      out.args_.push_back(&out.slots_[i]);
      continue;
    }
    out.buffers_[i] = tools::AllocateAligned(p.before.data.size());
    if (out.buffers_[i] == nullptr) return absl::ResourceExhaustedError("out of host memory");
    std::memcpy(out.buffers_[i].get(), p.before.data.data(), p.before.data.size());
    out.pointers_[i] = out.buffers_[i].get();
    out.args_.push_back(&out.pointers_[i]);
  }
  for (size_t s = 0; s < symbol_values.size(); ++s) {
    const int32_t v = symbol_values[s];
    std::memcpy(&out.slots_[params.size() + s], &v, sizeof(v));
    out.args_.push_back(&out.slots_[params.size() + s]);
  }
  return out;
}

void CpuLaunchArgs::CopyOut(std::vector<HostParam>& params) const {
  for (size_t i = 0; i < params.size() && i < buffers_.size(); ++i) {
    params[i].after = params[i].before;
    if (buffers_[i] != nullptr) {
      std::memcpy(params[i].after.data.data(), buffers_[i].get(), params[i].after.data.size());
    }
  }
}

void CpuLaunchArgs::Reload(const std::vector<HostParam>& params) {
  for (size_t i = 0; i < params.size() && i < buffers_.size(); ++i) {
    if (buffers_[i] != nullptr) {
      std::memcpy(buffers_[i].get(), params[i].before.data.data(), params[i].before.data.size());
    }
  }
}

absl::Status CudaLaunchArgs::Reload(const std::vector<HostParam>& params) {
  size_t b = 0;
  for (const HostParam& p : params) {
    if (p.is_scalar) continue;
    if (b >= buffers_.size()) break;
    DeviceBuffer& buffer = buffers_[b++];
    if (p.before.data.size() != buffer.size()) {
      return absl::InvalidArgumentError(absl::StrCat("parameter ", p.name, " has ",
                                                     p.before.data.size(),
                                                     " bytes for a tensor of ", buffer.size()));
    }
    if (absl::Status s = buffer.CopyFromHost(p.before.data.data(), buffer.size()); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CudaLaunchArgs> CudaLaunchArgs::Make(const std::shared_ptr<Device>& device,
                                                    const std::vector<HostParam>& params,
                                                    const std::vector<int32_t>& symbol_values) {
  return Make(params, symbol_values, [&](size_t i, size_t bytes) -> absl::StatusOr<DeviceBuffer> {
    const std::string& data = params[i].before.data;
    if (data.size() != bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter ", params[i].name, " has ", data.size(), " bytes for a tensor of ", bytes));
    }
    absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(device, bytes);
    if (!buffer.ok()) return buffer.status();
    if (absl::Status s = buffer->CopyFromHost(data.data(), bytes); !s.ok()) return s;
    return buffer;
  });
}

absl::StatusOr<CudaLaunchArgs> CudaLaunchArgs::Make(const std::vector<HostParam>& params,
                                                    const std::vector<int32_t>& symbol_values,
                                                    const BufferProvider& provide) {
  CudaLaunchArgs out;
  out.slots_.assign(params.size() + symbol_values.size(), 0);
  for (size_t i = 0; i < params.size(); ++i) {
    const HostParam& p = params[i];
    if (p.is_scalar) {
      out.slots_[i] = ScalarSlot(p.before);
    } else {
      const auto bytes =
          static_cast<size_t>(p.before.num_elements() * kiln::tools::DTypeBytes(p.dtype));
      absl::StatusOr<DeviceBuffer> buffer = provide(i, bytes);
      if (!buffer.ok()) return buffer.status();
      if (buffer->size() != bytes) {
        return absl::InternalError(absl::StrCat("parameter ", p.name, ": a buffer of ",
                                                buffer->size(), " bytes for ", bytes));
      }
      out.slots_[i] = buffer->address();
      out.buffers_.push_back(*std::move(buffer));
    }
    out.args_.push_back(&out.slots_[i]);
  }
  for (size_t s = 0; s < symbol_values.size(); ++s) {
    const int32_t v = symbol_values[s];
    std::memcpy(&out.slots_[params.size() + s], &v, sizeof(v));
    out.args_.push_back(&out.slots_[params.size() + s]);
  }
  return out;
}

absl::Status CudaLaunchArgs::AddTensorMaps(const CudaDriver& driver,
                                           const std::vector<kiln::codegen::TensorMapSpec>& maps,
                                           const std::vector<HostParam>& params) {
  // The previous kernel's maps, if any, make way for these.
  args_.resize(args_.size() - tensor_map_count_);
  tensor_map_count_ = 0;
  tensor_maps_.reset();
  if (maps.empty()) return absl::OkStatus();
  auto encoded = std::make_unique<CuTensorMap[]>(maps.size());
  for (size_t m = 0; m < maps.size(); ++m) {
    const kiln::codegen::TensorMapSpec& spec = maps[m];
    if (spec.arg < 0 || static_cast<size_t>(spec.arg) >= params.size() ||
        params[static_cast<size_t>(spec.arg)].is_scalar) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor map ", m, " is for argument ", spec.arg, ", which is not a tensor parameter"));
    }
    const auto arg = static_cast<size_t>(spec.arg);
    const HostParam& p = params[arg];
    absl::StatusOr<TensorMapEncoding> plan =
        PlanTensorMap(p.name, slots_[arg], p.before.shape, kiln::tools::DTypeBytes(p.dtype),
                      spec.box, spec.swizzle_bytes);
    if (!plan.ok()) return plan.status();
    absl::StatusOr<CuTensorMap> map = EncodeTensorMap(driver, p.name, *plan);
    if (!map.ok()) return map.status();
    encoded[m] = *map;
  }
  tensor_maps_ = std::move(encoded);
  for (size_t m = 0; m < maps.size(); ++m) args_.push_back(&tensor_maps_[m]);
  tensor_map_count_ = maps.size();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<void**>> CudaLaunchArgs::AddTensorMapsPerKernel(
    const CudaDriver& driver, const std::vector<std::vector<kiln::codegen::TensorMapSpec>>& maps,
    const std::vector<HostParam>& params) {
  if (!kernel_args_.empty() || tensor_maps_ != nullptr) {
    return absl::FailedPreconditionError(
        "AddTensorMapsPerKernel: the tensor maps were already added");
  }
  const std::vector<void*> prefix = args_;
  for (const std::vector<kiln::codegen::TensorMapSpec>& kernel : maps) {
    // AddTensorMaps encodes into tensor_maps_ and appends to args_; both are
    // taken over for this kernel and reset for the next.
    if (absl::Status s = AddTensorMaps(driver, kernel, params); !s.ok()) return s;
    kernel_maps_.push_back(std::move(tensor_maps_));
    kernel_args_.push_back(args_);
    args_ = prefix;
    tensor_map_count_ = 0;
  }
  std::vector<void**> out;
  for (std::vector<void*>& a : kernel_args_) out.push_back(a.data());
  return out;
}

absl::Status CudaLaunchArgs::CopyOut(std::vector<HostParam>& params, bool outputs_only) const {
  size_t next = 0;
  for (HostParam& p : params) {
    if (p.is_scalar) {
      p.after = p.before;
      continue;
    }
    if (next >= buffers_.size()) {
      return absl::InvalidArgumentError("CopyOut: more tensor parameters than buffers");
    }
    const DeviceBuffer& buffer = buffers_[next++];
    p.after.dtype = p.before.dtype;
    p.after.shape = p.before.shape;
    p.after.data.clear();
    if (outputs_only && !p.is_output) continue;
    p.after.data.resize(buffer.size());
    if (absl::Status s = buffer.CopyToHost(p.after.data.data(), p.after.data.size()); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LaunchConfig> MakeLaunchConfig(const std::array<int64_t, 3>& grid,
                                              const std::array<int64_t, 3>& block,
                                              int64_t dynamic_smem) {
  LaunchConfig config;
  for (int d = 0; d < 3; ++d) {
    if (grid[d] <= 0 || grid[d] > UINT32_MAX || block[d] <= 0 || block[d] > 1024) {
      return absl::InvalidArgumentError(absl::StrCat("launch dimension ", d, " out of range (grid ",
                                                     grid[d], ", block ", block[d], ")"));
    }
    config.grid[d] = static_cast<uint32_t>(grid[d]);
    config.block[d] = static_cast<uint32_t>(block[d]);
  }
  if (dynamic_smem < 0 || dynamic_smem > UINT32_MAX) {
    return absl::InvalidArgumentError("dynamic shared memory size out of range");
  }
  config.dynamic_smem_bytes = static_cast<uint32_t>(dynamic_smem);
  return config;
}

absl::StatusOr<RunResult> RunOnCpu(const kiln::codegen::EmittedKernel& kernel,
                                   std::vector<HostParam>& params,
                                   const std::vector<int32_t>& symbol_values,
                                   const std::array<int64_t, 3>& grid,
                                   const std::map<std::string, int64_t>& symbols, int runs) {
  absl::StatusOr<std::vector<LaunchStep>> steps = EvalSequence(kernel.launch, grid, symbols);
  if (!steps.ok()) return steps.status();
  absl::StatusOr<std::vector<size_t>> workspace_bytes = WorkspaceBytes(kernel.launch, symbols);
  if (!workspace_bytes.ok()) return workspace_bytes.status();
  kiln::toolchain::HostCompileInput in;
  in.source = kernel.source;
  absl::StatusOr<kiln::toolchain::HostCompileOutput> so = kiln::toolchain::HostCompile(in);
  if (!so.ok()) return so.status();
  std::vector<kiln::toolchain::LoadedCpuKernel> loaded;
  for (const LaunchStep& step : *steps) {
    absl::StatusOr<kiln::toolchain::LoadedCpuKernel> one =
        kiln::toolchain::LoadedCpuKernel::Load(so->shared_object, step.symbol);
    if (!one.ok()) return one.status();
    loaded.push_back(*std::move(one));
  }

  absl::StatusOr<CpuLaunchArgs> args = CpuLaunchArgs::Make(params, symbol_values);
  if (!args.ok()) return args.status();
  if (absl::Status s = args->AddWorkspaces(*workspace_bytes); !s.ok()) return s;
  std::chrono::steady_clock::time_point start, stop;
  absl::Status status;
  for (int run = 0; run < std::max(1, runs) && status.ok(); ++run) {
    if (run > 0) args->Reload(params);
    CrashGuard guard;
    start = std::chrono::steady_clock::now();
    // In order: each kernel sees what the ones before it wrote.
    for (size_t k = 0; k < loaded.size() && status.ok(); ++k) {
      status = loaded[k].Run(args->args(), (*steps)[k].grid.data());
      if (!status.ok() && loaded.size() > 1) {
        status =
            absl::Status(status.code(), absl::StrCat("kernel ", k + 1, " (", (*steps)[k].symbol,
                                                     "): ", status.message()));
      }
    }
    stop = std::chrono::steady_clock::now();
  }
  if (!status.ok()) return status;
  args->CopyOut(params);
  RunResult result;
  result.kernel_ms = std::chrono::duration<double, std::milli>(stop - start).count();
  result.timing_kind = "wall clock";
  result.compile_note =
      absl::StrFormat("%s -O%d, %.2f s", kiln::toolchain::HostCompiler(), in.opt_level,
                      std::chrono::duration<double>(so->elapsed).count());
  return result;
}

absl::StatusOr<RunResult> RunOnCuda(const kiln::codegen::EmittedKernel& kernel,
                                    const std::shared_ptr<Device>& device,
                                    std::vector<HostParam>& params,
                                    const std::vector<int32_t>& symbol_values,
                                    const std::array<int64_t, 3>& grid,
                                    const std::map<std::string, int64_t>& symbols, int runs) {
  absl::StatusOr<std::vector<LaunchStep>> steps = EvalSequence(kernel.launch, grid, symbols);
  if (!steps.ok()) return steps.status();
  absl::StatusOr<std::vector<size_t>> workspace_bytes = WorkspaceBytes(kernel.launch, symbols);
  if (!workspace_bytes.ok()) return workspace_bytes.status();
  kiln::toolchain::CudaCompileInput in;
  in.source = kernel.source;
  in.program_name = "kernel.cu";
  in.arch = kernel.arch;
  for (const kiln::runtime::EmbeddedHeader& h : kiln::runtime::CudaRuntimeHeaders()) {
    in.headers.emplace(std::string(h.name), std::string(h.content));
  }
  absl::StatusOr<kiln::toolchain::CompileOutput> cubin = kiln::toolchain::NvrtcCompile(in);
  if (!cubin.ok()) return cubin.status();
  absl::StatusOr<Module> module = Module::Load(device, cubin->cubin);
  if (!module.ok()) return module.status();
  std::vector<Function> functions;
  for (const LaunchStep& step : *steps) {
    absl::StatusOr<Function> function = module->GetFunction(step.symbol);
    if (!function.ok()) return function.status();
    functions.push_back(*std::move(function));
  }

  absl::StatusOr<CudaLaunchArgs> args = CudaLaunchArgs::Make(device, params, symbol_values);
  if (!args.ok()) return args.status();
  if (absl::Status s = args->AddWorkspaces(device, *workspace_bytes); !s.ok()) return s;
  // In order on one stream; each launch waits for the one before it.
  float total_ms = 0;
  for (int run = 0; run < std::max(1, runs); ++run) {
    if (run > 0) {
      if (absl::Status s = args->Reload(params); !s.ok()) return s;
    }
    total_ms = 0;
    for (size_t k = 0; k < steps->size(); ++k) {
      const LaunchStep& step = (*steps)[k];
      if (absl::Status s = args->AddTensorMaps(device->driver(), step.tensor_maps, params);
          !s.ok()) {
        return s;
      }
      absl::StatusOr<LaunchConfig> config =
          MakeLaunchConfig(step.grid, step.block, step.dynamic_smem_bytes);
      if (!config.ok()) return config.status();
      absl::StatusOr<float> ms = TimedLaunch(device, functions[k], *config, args->args());
      if (!ms.ok()) return ms.status();
      total_ms += *ms;
    }
  }
  absl::StatusOr<float> ms = total_ms;
  if (absl::Status s = args->CopyOut(params); !s.ok()) return s;

  RunResult result;
  result.kernel_ms = *ms;
  result.timing_kind = "cuEvent";
  result.compile_note = absl::StrFormat("NVRTC %s, %.2f s", kernel.arch,
                                        std::chrono::duration<double>(cubin->elapsed).count());
  return result;
}

bool CubinRunsOn(const std::string& arch, int major, int minor) {
  std::string digits = arch.substr(3);
  const bool specific = !digits.empty() && digits.back() == 'a';
  if (specific) digits.pop_back();
  int version = 0;
  if (!absl::SimpleAtoi(digits, &version)) return false;
  if (version / 10 != major) return false;
  return specific ? version % 10 == minor : version % 10 <= minor;
}

} // namespace kiln::measure
