// kiln-run: compiles one tile program for the CPU or a CUDA GPU, runs the
// kernel once on generated or given inputs, and optionally checks its
// outputs against the program's NumPy ref_program.
//
//   kiln-run FILE [--bind K=V]... [--test-bind] [--entry NAME] --target cpu|cuda[:N]
//            [--arch sm_90] [--seed N] [--input NAME=path.npy]... [--save NAME=path.npy]...
//            [--check] [--emit-dir DIR] [--quiet]
//
// Pipeline: frontend::CompileSource -> codegen::LowerAndEmit -> for the CPU
// the host compiler (toolchain/host_cc) and dlopen; for CUDA NVRTC and the
// driver API (tuner/measure/cuda_driver). Exit status: 0 ran (and the check
// passed), 1 the check found a mismatch, 2 anything else (usage, the
// program, compiling, launching, the reference). kUsage below is the manual;
// docs/tools.md says the same at more length.
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/kernel_spec.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/simplify.h"
#include "compiler/ir/verifier.h"
#include "compiler/runtime/runtime_headers.h"
#include "compiler/toolchain/cuda_compile.h"
#include "compiler/toolchain/host_cc.h"
#include "compiler/toolchain/nvrtc.h"
#include "compiler/tools/bind_lines.h"
#include "compiler/tools/npy.h"
#include "compiler/tools/reference_check.h"
#include "kiln/cpu/types.h"
#include "tuner/measure/cuda_driver.h"

namespace {

using kiln::frontend::BindingValue;
namespace fs = std::filesystem;
namespace ir = kiln::ir;

constexpr int kExitOk = 0;
constexpr int kExitMismatch = 1;
constexpr int kExitError = 2;

constexpr char kUsage[] = R"(usage: kiln-run FILE --target cpu|cuda[:N] [options]

Compiles the tile program FILE (TileLang source, .py) for the target, runs its
kernel once, and optionally checks the outputs against the file's NumPy
ref_program.

options:
  --target cpu|cuda[:N]   where to run: the host CPU (emulated threads), or
                          CUDA device N (default 0)
  --arch sm_XX            CUDA architecture to compile for (default: the
                          device's compute capability); one of sm_80 sm_86
                          sm_89 sm_90 sm_90a
  --bind NAME=VALUE       bind a kernel parameter or T.const symbol (repeatable;
                          VALUE is an integer, a float, True/False, or a name
                          such as float16)
  --test-bind             take the bindings of the file's '# kiln: test-bind'
                          line (--bind overrides single names)
  --entry NAME            the kernel function, when the file has several
  --seed N                seed of the generated inputs (default 0): floats
                          uniform in [-1, 1) rounded to the dtype, integers in
                          [-8, 8), bools random; outputs start zero-filled
  --input NAME=FILE.npy   take parameter NAME from a .npy file (dtype and shape
                          must match; bfloat16 as '<u2' bits, float8 as '|u1')
  --save NAME=FILE.npy    write parameter NAME to a .npy file after the run
  --check                 compare the outputs with ref_program(inputs...) (needs
                          python3 with NumPy; KILN_PYTHON picks the interpreter)
  --emit-dir DIR          write the generated source to DIR
  --quiet                 print nothing but errors and check failures
  -h, --help              this text

Outputs are the parameters marked as outputs (T.empty in the @tilelang.jit
form), or, in the factory form, the parameters after the first n, where n is
ref_program's parameter count.

environment: KILN_HOST_CXX (CPU compiler, default c++), KILN_NVRTC_LIBRARY,
KILN_PYTHON.

exit status:
  0  the kernel ran (and with --check, every output matched)
  1  --check found a mismatch (the report names the first bad element)
  2  usage error, unreadable or invalid program, input mismatch, compile or
     launch failure, no GPU, or an error in ref_program
)";

// --- command line --------------------------------------------------------------

struct Args {
  std::string file;
  std::vector<std::pair<std::string, BindingValue>> bindings;
  bool test_bind = false;
  std::string entry;
  std::string target;
  bool is_cuda = false;
  int device = 0;
  std::string arch;
  uint64_t seed = 0;
  std::vector<std::pair<std::string, std::string>> inputs; // name -> path
  std::vector<std::pair<std::string, std::string>> saves;  // name -> path
  bool check = false;
  bool quiet = false;
  std::string emit_dir;
};

int Fail(absl::string_view message) {
  std::cerr << "kiln-run: " << message << "\n";
  return kExitError;
}

int UsageError(const std::string& message) {
  std::cerr << "kiln-run: " << message << "\n(kiln-run --help for usage)\n";
  return kExitError;
}

// Accepts "--name=value" and "--name value"; returns true and advances i.
bool TakeValue(int argc, char** argv, int& i, const std::string& name, std::string* value,
               bool* missing) {
  const std::string arg = argv[i];
  if (arg == name) {
    if (i + 1 >= argc) {
      *missing = true;
      return true;
    }
    *value = argv[++i];
    return true;
  }
  if (arg.rfind(name + "=", 0) == 0) {
    *value = arg.substr(name.size() + 1);
    return true;
  }
  return false;
}

// "NAME=VALUE" with a non-empty NAME.
bool SplitAssignment(const std::string& text, std::string* name, std::string* value) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  *name = text.substr(0, eq);
  *value = text.substr(eq + 1);
  return true;
}

int ParseTarget(const std::string& text, Args* args) {
  if (text == "cpu") return 0;
  if (text == "cuda") {
    args->is_cuda = true;
    return 0;
  }
  if (text.rfind("cuda:", 0) == 0) {
    int n = 0;
    if (!absl::SimpleAtoi(text.substr(5), &n) || n < 0) {
      return UsageError("--target cuda:N needs a device number N >= 0, got '" + text + "'");
    }
    args->is_cuda = true;
    args->device = n;
    return 0;
  }
  return UsageError("--target must be cpu, cuda or cuda:N, got '" + text + "'");
}

// Returns -1 to go on, or an exit status.
int ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string value, name, rest;
    bool missing = false;
    auto take = [&](const char* flag) { return TakeValue(argc, argv, i, flag, &value, &missing); };
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return kExitOk;
    }
    if (take("--bind")) {
      if (missing) return UsageError("--bind needs NAME=VALUE");
      if (!SplitAssignment(value, &name, &rest)) {
        return UsageError("--bind expects NAME=VALUE, got '" + value + "'");
      }
      args->bindings.emplace_back(name, kiln::frontend::ParseBindingText(rest));
    } else if (take("--entry")) {
      if (missing) return UsageError("--entry needs a function name");
      args->entry = value;
    } else if (take("--target")) {
      if (missing) return UsageError("--target needs cpu, cuda or cuda:N");
      args->target = value;
      if (int rc = ParseTarget(value, args); rc != 0) return rc;
    } else if (take("--arch")) {
      if (missing) return UsageError("--arch needs an architecture such as sm_90");
      const auto& archs = kiln::toolchain::SupportedCudaArchs();
      if (std::find(archs.begin(), archs.end(), value) == archs.end()) {
        return UsageError("--arch " + value + " is not supported; use one of " +
                          absl::StrJoin(archs, ", "));
      }
      args->arch = value;
    } else if (take("--seed")) {
      if (missing || !absl::SimpleAtoi(value, &args->seed)) {
        return UsageError("--seed needs a non-negative integer, got '" + value + "'");
      }
    } else if (take("--input") || take("--save")) {
      const bool is_input = arg.rfind("--input", 0) == 0;
      const char* flag = is_input ? "--input" : "--save";
      if (missing || !SplitAssignment(value, &name, &rest) || rest.empty()) {
        return UsageError(absl::StrCat(flag, " expects NAME=FILE.npy, got '", value, "'"));
      }
      (is_input ? args->inputs : args->saves).emplace_back(name, rest);
    } else if (take("--emit-dir")) {
      if (missing || value.empty()) return UsageError("--emit-dir needs a directory");
      args->emit_dir = value;
    } else if (arg == "--test-bind") {
      args->test_bind = true;
    } else if (arg == "--check") {
      args->check = true;
    } else if (arg == "--quiet" || arg == "-q") {
      args->quiet = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return UsageError("unknown option '" + arg + "'");
    } else if (args->file.empty()) {
      args->file = arg;
    } else {
      return UsageError("more than one input file ('" + args->file + "' and '" + arg + "')");
    }
  }
  if (args->file.empty()) return UsageError("no input file");
  if (args->target.empty()) return UsageError("missing --target (cpu, cuda or cuda:N)");
  if (!args->arch.empty() && !args->is_cuda) return UsageError("--arch applies to --target cuda");
  std::set<std::string> seen;
  for (const auto& [n, path] : args->inputs) {
    if (!seen.insert(n).second) return UsageError("--input " + n + " given twice");
  }
  return -1;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read '", path, "': ", std::strerror(errno)));
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// --- values of shapes and grids ------------------------------------------------

void CollectVars(const ir::Expr& e, std::set<std::string>* names) {
  if (e.kind == ir::ExprKind::kVar) names->insert(e.name);
  for (const ir::Expr& a : e.args) CollectVars(a, names);
}

// `e` with the symbols' values substituted, as a constant.
absl::StatusOr<int64_t> EvalInt(const ir::Expr& e, const std::map<std::string, int64_t>& symbols,
                                const std::string& what) {
  ir::Expr bound = e;
  ir::RewriteExpr(&bound, [&](ir::Expr x) {
    if (x.kind == ir::ExprKind::kVar) {
      auto it = symbols.find(x.name);
      if (it != symbols.end()) return ir::IntImm(it->second, x.dtype, x.loc);
    }
    return x;
  });
  if (std::optional<int64_t> v = ir::ConstInt(ir::Simplify(bound))) return *v;
  std::set<std::string> vars;
  CollectVars(bound, &vars);
  if (vars.empty()) return absl::InvalidArgumentError(what + " is not a constant");
  return absl::InvalidArgumentError(
      absl::StrCat(what, " depends on ", absl::StrJoin(vars, ", "), ", which has no value"));
}

absl::StatusOr<std::vector<int64_t>> EvalShape(const std::vector<ir::Expr>& shape,
                                               const std::map<std::string, int64_t>& symbols,
                                               const std::string& what) {
  std::vector<int64_t> out;
  int64_t elements = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    absl::StatusOr<int64_t> v = EvalInt(shape[d], symbols, absl::StrCat(what, " dimension ", d));
    if (!v.ok()) return v.status();
    if (*v < 0) return absl::InvalidArgumentError(absl::StrCat(what, " has a negative extent"));
    // 2^40 elements is far beyond any host's memory; the bound keeps byte counts exact.
    if (*v != 0 && elements > (int64_t{1} << 40) / *v) {
      return absl::InvalidArgumentError(absl::StrCat(what, " is too large"));
    }
    elements *= *v;
    out.push_back(*v);
  }
  return out;
}

// --- data ------------------------------------------------------------------------

// SplitMix64: a fixed generator, so a seed gives the same data everywhere
// (the standard distributions are implementation-defined).
struct Rng {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53 * 2.0 - 1.0; }
};

template <typename T>
void Put(std::string& data, int64_t i, T value) {
  std::memcpy(data.data() + i * sizeof(T), &value, sizeof(T));
}

// Parameter `index`'s data: independent of the other parameters, so that
// replacing one with --input leaves the rest unchanged.
void FillRandom(kiln::tools::NpyArray& a, uint64_t seed, size_t index) {
  using ir::DType;
  namespace rt = kiln::rt;
  Rng rng{seed * 0x2545f4914f6cdd1dULL + index * 0x9e3779b97f4a7c15ULL + 1};
  const int64_t n = a.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const double f = rng.Uniform();
    const int64_t k = static_cast<int64_t>(rng.Next() >> 60) - 8; // [-8, 8)
    switch (a.dtype) {
    case DType::kBool:
      Put<uint8_t>(a.data, i, (rng.Next() >> 63) != 0);
      break;
    case DType::kInt8:
      Put<int8_t>(a.data, i, static_cast<int8_t>(k));
      break;
    case DType::kInt16:
      Put<int16_t>(a.data, i, static_cast<int16_t>(k));
      break;
    case DType::kInt32:
      Put<int32_t>(a.data, i, static_cast<int32_t>(k));
      break;
    case DType::kInt64:
      Put<int64_t>(a.data, i, k);
      break;
    // Unsigned types take the same draw modulo 2^bits (so -1 is the maximum).
    case DType::kUInt8:
      Put<uint8_t>(a.data, i, static_cast<uint8_t>(k));
      break;
    case DType::kUInt16:
      Put<uint16_t>(a.data, i, static_cast<uint16_t>(k));
      break;
    case DType::kUInt32:
      Put<uint32_t>(a.data, i, static_cast<uint32_t>(k));
      break;
    case DType::kUInt64:
      Put<uint64_t>(a.data, i, static_cast<uint64_t>(k));
      break;
    case DType::kFloat16:
      Put<uint16_t>(a.data, i, rt::float_to_half(static_cast<float>(f)).bits);
      break;
    case DType::kBFloat16:
      Put<uint16_t>(a.data, i, rt::float_to_bfloat16(static_cast<float>(f)).bits);
      break;
    case DType::kFloat32:
      Put<float>(a.data, i, static_cast<float>(f));
      break;
    case DType::kFloat64:
      Put<double>(a.data, i, f);
      break;
    case DType::kFloat8E4M3:
      Put<uint8_t>(a.data, i, rt::float_to_e4m3(static_cast<float>(f)).bits);
      break;
    case DType::kFloat8E5M2:
      Put<uint8_t>(a.data, i, rt::float_to_e5m2(static_cast<float>(f)).bits);
      break;
    }
  }
}

// One kernel parameter on the host.
struct HostParam {
  std::string name;
  ir::DType dtype = ir::DType::kFloat32;
  bool is_scalar = false;
  bool is_output = false;
  kiln::tools::NpyArray before; // what the kernel is given
  kiln::tools::NpyArray after;  // what it left (filled by the run)
};

// Memory with the alignment vector loads of generated code may assume.
struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<char, AlignedFree>;
constexpr size_t kHostAlign = 128;

AlignedBytes AllocateAligned(size_t bytes) {
  const size_t rounded =
      std::max<size_t>(kHostAlign, (bytes + kHostAlign - 1) / kHostAlign * kHostAlign);
  return AlignedBytes(static_cast<char*>(std::aligned_alloc(kHostAlign, rounded)));
}

// --- running -------------------------------------------------------------------

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
  _exit(kExitError);
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

struct RunResult {
  double kernel_ms = 0;
  std::string timing_kind;
  std::string compile_note;
};

// Checks the code generator's launch metadata against the program: one
// argument per parameter (same name, dtype and kind) then one per symbol.
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
          EvalShape(arg.shape, symbols, absl::StrCat("kernel argument '", arg.name, "'"));
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
    if (!arg.is_symbol || arg.name != program.symbols[s].name) {
      return mismatch(absl::StrCat("argument ", params.size() + s, " is '", arg.name, "', symbol '",
                                   program.symbols[s].name, "'"));
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
    absl::StatusOr<int64_t> v = EvalInt(spec.grid[d], symbols, absl::StrCat("grid extent ", d));
    if (!v.ok()) return v.status();
    if (*v <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("grid extent ", d, " is ", *v));
    }
    grid[d] = *v;
  }
  return grid;
}

// Scalars and symbols by value, in 8-byte slots (little-endian: a narrower
// value sits at the slot's start, which is what args[i] points to).
uint64_t ScalarSlot(const kiln::tools::NpyArray& a) {
  uint64_t slot = 0;
  std::memcpy(&slot, a.data.data(), std::min<size_t>(a.data.size(), sizeof(slot)));
  return slot;
}

absl::StatusOr<RunResult> RunOnCpu(const kiln::codegen::EmittedKernel& kernel,
                                   std::vector<HostParam>& params,
                                   const std::vector<int32_t>& symbol_values,
                                   const std::array<int64_t, 3>& grid) {
  kiln::toolchain::HostCompileInput in;
  in.source = kernel.source;
  absl::StatusOr<kiln::toolchain::HostCompileOutput> so = kiln::toolchain::HostCompile(in);
  if (!so.ok()) return so.status();
  absl::StatusOr<kiln::toolchain::LoadedCpuKernel> loaded =
      kiln::toolchain::LoadedCpuKernel::Load(so->shared_object, kernel.launch.symbol);
  if (!loaded.ok()) return loaded.status();

  std::vector<AlignedBytes> buffers(params.size());
  std::vector<void*> pointers(params.size(), nullptr);
  std::vector<uint64_t> slots(params.size() + symbol_values.size(), 0);
  std::vector<void*> args;
  for (size_t i = 0; i < params.size(); ++i) {
    const HostParam& p = params[i];
    if (p.is_scalar) {
      slots[i] = ScalarSlot(p.before);
      args.push_back(&slots[i]);
      continue;
    }
    buffers[i] = AllocateAligned(p.before.data.size());
    if (buffers[i] == nullptr) return absl::ResourceExhaustedError("out of host memory");
    std::memcpy(buffers[i].get(), p.before.data.data(), p.before.data.size());
    pointers[i] = buffers[i].get();
    args.push_back(&pointers[i]);
  }
  for (size_t s = 0; s < symbol_values.size(); ++s) {
    int32_t v = symbol_values[s];
    std::memcpy(&slots[params.size() + s], &v, sizeof(v));
    args.push_back(&slots[params.size() + s]);
  }
  std::chrono::steady_clock::time_point start, stop;
  absl::Status status;
  {
    CrashGuard guard;
    start = std::chrono::steady_clock::now();
    status = loaded->Run(args.data(), grid.data());
    stop = std::chrono::steady_clock::now();
  }
  if (!status.ok()) return status;
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].after = params[i].before;
    if (!params[i].is_scalar) {
      std::memcpy(params[i].after.data.data(), buffers[i].get(), params[i].after.data.size());
    }
  }
  RunResult result;
  result.kernel_ms = std::chrono::duration<double, std::milli>(stop - start).count();
  result.timing_kind = "wall clock";
  result.compile_note =
      absl::StrFormat("%s -O%d, %.2f s", kiln::toolchain::HostCompiler(), in.opt_level,
                      std::chrono::duration<double>(so->elapsed).count());
  return result;
}

absl::StatusOr<RunResult> RunOnCuda(const kiln::codegen::EmittedKernel& kernel,
                                    const std::shared_ptr<kiln::measure::Device>& device,
                                    std::vector<HostParam>& params,
                                    const std::vector<int32_t>& symbol_values,
                                    const std::array<int64_t, 3>& grid) {
  kiln::toolchain::CudaCompileInput in;
  in.source = kernel.source;
  in.program_name = "kernel.cu";
  in.arch = kernel.arch;
  for (const kiln::runtime::EmbeddedHeader& h : kiln::runtime::CudaRuntimeHeaders()) {
    in.headers.emplace(std::string(h.name), std::string(h.content));
  }
  absl::StatusOr<kiln::toolchain::CompileOutput> cubin = kiln::toolchain::NvrtcCompile(in);
  if (!cubin.ok()) return cubin.status();
  absl::StatusOr<kiln::measure::Module> module = kiln::measure::Module::Load(device, cubin->cubin);
  if (!module.ok()) return module.status();
  absl::StatusOr<kiln::measure::Function> function = module->GetFunction(kernel.launch.symbol);
  if (!function.ok()) return function.status();

  std::vector<kiln::measure::DeviceBuffer> buffers;
  std::vector<uint64_t> slots(params.size() + symbol_values.size(), 0);
  std::vector<void*> args;
  for (size_t i = 0; i < params.size(); ++i) {
    const HostParam& p = params[i];
    if (p.is_scalar) {
      slots[i] = ScalarSlot(p.before);
    } else {
      absl::StatusOr<kiln::measure::DeviceBuffer> buffer =
          kiln::measure::DeviceBuffer::Allocate(device, p.before.data.size());
      if (!buffer.ok()) return buffer.status();
      if (absl::Status s = buffer->CopyFromHost(p.before.data.data(), p.before.data.size());
          !s.ok()) {
        return s;
      }
      slots[i] = buffer->address();
      buffers.push_back(*std::move(buffer));
    }
    args.push_back(&slots[i]);
  }
  for (size_t s = 0; s < symbol_values.size(); ++s) {
    int32_t v = symbol_values[s];
    std::memcpy(&slots[params.size() + s], &v, sizeof(v));
    args.push_back(&slots[params.size() + s]);
  }
  kiln::measure::LaunchConfig config;
  for (int d = 0; d < 3; ++d) {
    if (grid[d] > UINT32_MAX || kernel.launch.block[d] <= 0 || kernel.launch.block[d] > 1024) {
      return absl::InvalidArgumentError(absl::StrCat("launch dimension ", d, " out of range (grid ",
                                                     grid[d], ", block ", kernel.launch.block[d],
                                                     ")"));
    }
    config.grid[d] = static_cast<uint32_t>(grid[d]);
    config.block[d] = static_cast<uint32_t>(kernel.launch.block[d]);
  }
  if (kernel.launch.dynamic_smem_bytes < 0 || kernel.launch.dynamic_smem_bytes > UINT32_MAX) {
    return absl::InvalidArgumentError("dynamic shared memory size out of range");
  }
  config.dynamic_smem_bytes = static_cast<uint32_t>(kernel.launch.dynamic_smem_bytes);
  absl::StatusOr<float> ms = kiln::measure::TimedLaunch(device, *function, config, args.data());
  if (!ms.ok()) return ms.status();

  size_t next = 0;
  for (HostParam& p : params) {
    p.after = p.before;
    if (p.is_scalar) continue;
    if (absl::Status s = buffers[next++].CopyToHost(p.after.data.data(), p.after.data.size());
        !s.ok()) {
      return s;
    }
  }
  RunResult result;
  result.kernel_ms = *ms;
  result.timing_kind = "cuEvent";
  result.compile_note = absl::StrFormat("NVRTC %s, %.2f s", kernel.arch,
                                        std::chrono::duration<double>(cubin->elapsed).count());
  return result;
}

// Whether a cubin for `arch` ("sm_86", "sm_90a") loads on a device of
// compute capability major.minor: same major version and no newer minor;
// the arch-specific "a" variants only on exactly their version.
bool CubinRunsOn(const std::string& arch, int major, int minor) {
  std::string digits = arch.substr(3);
  const bool specific = !digits.empty() && digits.back() == 'a';
  if (specific) digits.pop_back();
  int version = 0;
  if (!absl::SimpleAtoi(digits, &version)) return false;
  if (version / 10 != major) return false;
  return specific ? version % 10 == minor : version % 10 <= minor;
}

absl::Status WriteEmitted(const std::string& dir, const ir::Program& program,
                          const kiln::codegen::EmittedKernel& kernel) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create '", dir, "': ", ec.message()));
  const std::string stem = program.name.empty() ? "kernel" : program.name;
  const fs::path path =
      fs::path(dir) / (stem + (kernel.target == kiln::codegen::EmitTarget::kCuda ? ".cu" : ".cc"));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << kernel.source;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write '", path.string(), "'"));
  return absl::OkStatus();
}

// --- main flow -------------------------------------------------------------------

int Run(const Args& args) {
  absl::StatusOr<std::string> source = ReadFile(args.file);
  if (!source.ok()) return Fail(source.status().message());

  // Bindings: the test-bind line, then --bind values replacing single names.
  std::vector<std::pair<std::string, BindingValue>> bindings;
  if (args.test_bind) {
    absl::StatusOr<std::vector<std::pair<std::string, BindingValue>>> line =
        kiln::tools::BindLine(*source, args.file, "test-bind");
    if (!line.ok()) return Fail(line.status().message());
    bindings = *std::move(line);
  }
  for (const auto& binding : args.bindings) {
    const std::string& name = binding.first;
    const BindingValue& value = binding.second;
    auto it = std::find_if(bindings.begin(), bindings.end(),
                           [&](const auto& b) { return b.first == name; });
    if (it != bindings.end()) {
      it->second = value;
    } else {
      bindings.emplace_back(name, value);
    }
  }

  kiln::frontend::FrontendOptions options;
  options.file_name = args.file;
  options.entry = args.entry;
  options.bindings = bindings;
  absl::StatusOr<ir::Program> program = kiln::frontend::CompileSource(*source, options);
  if (!program.ok()) return Fail(program.status().message());
  if (absl::Status s = ir::Verify(*program); !s.ok()) return Fail(s.message());

  // Which parameters are outputs, and which feed ref_program.
  absl::StatusOr<int> arity = kiln::tools::RefProgramArity(*source, args.file);
  if (args.check && !arity.ok()) return Fail(absl::StrCat("--check: ", arity.status().message()));
  const bool marked = std::any_of(program->params.begin(), program->params.end(),
                                  [](const ir::Param& p) { return p.is_output; });
  std::vector<bool> is_output(program->params.size(), false);
  for (size_t i = 0; i < program->params.size(); ++i) {
    // Scalars are passed by value: never outputs.
    is_output[i] =
        !program->params[i].is_scalar &&
        (marked ? program->params[i].is_output : (arity.ok() && static_cast<int>(i) >= *arity));
  }
  if (args.check) {
    const int outputs = static_cast<int>(std::count(is_output.begin(), is_output.end(), true));
    const int inputs = static_cast<int>(program->params.size()) - outputs;
    if (*arity > inputs) {
      return Fail(absl::StrCat("--check: ref_program takes ", *arity, " arguments but '",
                               program->name, "' has ", inputs, " input parameters"));
    }
    if (outputs == 0) {
      return Fail(absl::StrCat("--check: '", program->name, "' has no outputs to compare"));
    }
  }

  // Symbols left dynamic take their values from --bind.
  std::map<std::string, int64_t> symbols;
  std::vector<int32_t> symbol_values;
  for (const ir::Symbol& sym : program->symbols) {
    auto it = std::find_if(bindings.begin(), bindings.end(),
                           [&](const auto& b) { return b.first == sym.name; });
    if (it == bindings.end() || it->second.kind != BindingValue::Kind::kInt) {
      return Fail(absl::StrCat("shape symbol '", sym.name, "' has no value; bind it with --bind ",
                               sym.name, "=N"));
    }
    if (it->second.ival < 0 || it->second.ival > INT32_MAX) {
      return Fail(absl::StrCat("shape symbol '", sym.name, "' = ", it->second.ival,
                               " is not a non-negative int32"));
    }
    symbols[sym.name] = it->second.ival;
    symbol_values.push_back(static_cast<int32_t>(it->second.ival));
  }

  // Parameters: shapes, then data from --input, zeros or the generator.
  std::vector<HostParam> params;
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < program->params.size(); ++i) {
    const ir::Param& p = program->params[i];
    HostParam hp;
    hp.name = p.buffer.name;
    hp.dtype = p.buffer.dtype;
    hp.is_scalar = p.is_scalar;
    hp.is_output = is_output[i];
    hp.before.dtype = hp.dtype;
    if (!p.is_scalar) {
      absl::StatusOr<std::vector<int64_t>> shape =
          EvalShape(p.buffer.shape, symbols, absl::StrCat("the shape of '", hp.name, "'"));
      if (!shape.ok()) return Fail(shape.status().message());
      hp.before.shape = *shape;
    }
    const int64_t n = hp.before.num_elements();
    hp.before.data.assign(static_cast<size_t>(n * kiln::tools::DTypeBytes(hp.dtype)), '\0');
    index_of[hp.name] = i;
    params.push_back(std::move(hp));
  }
  auto known = [&](const std::string& flag, const std::string& name) -> absl::Status {
    if (index_of.count(name)) return absl::OkStatus();
    std::vector<std::string> names;
    for (const HostParam& p : params) names.push_back(p.name);
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", name, ": '", name, "' is not a parameter of '", program->name,
                     "'; parameters: ", names.empty() ? "(none)" : absl::StrJoin(names, ", ")));
  };
  for (const auto& [name, path] : args.saves) {
    if (absl::Status s = known("--save", name); !s.ok()) return Fail(s.message());
  }
  std::set<std::string> from_file;
  for (const auto& [name, path] : args.inputs) {
    if (absl::Status s = known("--input", name); !s.ok()) return Fail(s.message());
    HostParam& p = params[index_of[name]];
    absl::StatusOr<kiln::tools::NpyArray> array = kiln::tools::ReadNpyFile(path);
    if (!array.ok()) return Fail(absl::StrCat("--input ", name, ": ", array.status().message()));
    if (absl::Status s = kiln::tools::CheckMatches(*array, name, p.dtype, p.before.shape);
        !s.ok()) {
      return Fail(absl::StrCat(s.message(), " (from ", path, ")"));
    }
    p.before.data = std::move(array->data);
    from_file.insert(name);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].is_output && !from_file.count(params[i].name)) {
      FillRandom(params[i].before, args.seed, i);
    }
  }

  // The target: for CUDA the device first, whose architecture codegen needs.
  std::shared_ptr<kiln::measure::Device> device;
  std::string target = "cpu";
  std::string where = "cpu";
  if (args.is_cuda) {
    absl::StatusOr<std::shared_ptr<kiln::measure::CudaDriver>> driver =
        kiln::measure::CudaDriver::Load();
    if (!driver.ok()) {
      return Fail(absl::StrCat("--target ", args.target, ": ", driver.status().message()));
    }
    absl::StatusOr<std::shared_ptr<kiln::measure::Device>> opened =
        kiln::measure::Device::Open(*driver, args.device);
    if (!opened.ok()) {
      return Fail(absl::StrCat("--target ", args.target, ": ", opened.status().message()));
    }
    device = *opened;
    const kiln::measure::DeviceProperties& props = device->properties();
    std::string arch = args.arch;
    if (arch.empty()) {
      arch = props.arch();
      const auto& archs = kiln::toolchain::SupportedCudaArchs();
      if (std::find(archs.begin(), archs.end(), arch) == archs.end()) {
        return Fail(absl::StrCat(props.name, " is ", arch,
                                 ", which Kiln does not generate code for (supported: ",
                                 absl::StrJoin(archs, ", "), ")"));
      }
    } else if (!CubinRunsOn(arch, props.cc_major, props.cc_minor)) {
      return Fail(absl::StrCat("--arch ", arch, ": a cubin for ", arch, " does not run on ",
                               props.name, " (", props.arch(), ")"));
    }
    target = "cuda:" + arch;
    where = absl::StrCat("cuda:", args.device, " (", device->properties().name, ", ", arch, ")");
  }

  absl::StatusOr<kiln::codegen::EmittedKernel> kernel =
      kiln::codegen::LowerAndEmit(*program, target);
  if (!kernel.ok()) return Fail(kernel.status().message());
  if (!args.emit_dir.empty()) {
    if (absl::Status s = WriteEmitted(args.emit_dir, *program, *kernel); !s.ok()) {
      return Fail(s.message());
    }
  }
  if (absl::Status s = CheckLaunchSpec(kernel->launch, *program, params, symbols); !s.ok()) {
    return Fail(s.message());
  }
  absl::StatusOr<std::array<int64_t, 3>> grid = EvalGrid(kernel->launch, symbols);
  if (!grid.ok()) return Fail(grid.status().message());

  absl::StatusOr<RunResult> ran = args.is_cuda
                                      ? RunOnCuda(*kernel, device, params, symbol_values, *grid)
                                      : RunOnCpu(*kernel, params, symbol_values, *grid);
  if (!ran.ok()) return Fail(ran.status().message());

  for (const auto& [name, path] : args.saves) {
    if (absl::Status s = kiln::tools::WriteNpyFile(path, params[index_of[name]].after); !s.ok()) {
      return Fail(absl::StrCat("--save ", name, ": ", s.message()));
    }
  }

  std::ostringstream report;
  report << "kiln-run: " << program->name << " (" << args.file << ") on " << where << "\n";
  report << "  compile: " << ran->compile_note << "\n";
  report << absl::StrFormat("  kernel:  %.3f ms (%s, one run)\n", ran->kernel_ms, ran->timing_kind);
  int rc = kExitOk;
  if (args.check) {
    kiln::tools::ReferenceCheckRequest request;
    request.program_file = args.file;
    int remaining = *arity;
    for (const HostParam& p : params) {
      if (p.is_output) {
        request.outputs.push_back({p.name, p.after});
      } else if (remaining > 0) {
        request.inputs.push_back({p.name, p.before});
        --remaining;
      }
    }
    absl::StatusOr<kiln::tools::ReferenceCheckResult> checked =
        kiln::tools::RunReferenceCheck(request);
    if (!checked.ok()) {
      return Fail(absl::StrCat("--check: ", checked.status().message()));
    }
    report << "  check:   " << (checked->passed ? "PASS" : "FAIL") << " against ref_program\n";
    std::istringstream lines(checked->report);
    for (std::string line; std::getline(lines, line);) report << "    " << line << "\n";
    if (!checked->passed) rc = kExitMismatch;
  }
  if (!args.quiet) {
    std::cout << report.str();
  } else if (rc == kExitMismatch) {
    std::cerr << report.str();
  }
  return rc;
}

} // namespace

int main(int argc, char** argv) {
  Args args;
  if (int rc = ParseArgs(argc, argv, &args); rc >= 0) return rc;
  return Run(args);
}
