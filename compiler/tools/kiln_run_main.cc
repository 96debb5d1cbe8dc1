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
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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
#include "compiler/ir/ir_util.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/persistent.h"
#include "compiler/passes/split_k.h"
#include "compiler/toolchain/cuda_compile.h"
#include "compiler/tools/bind_lines.h"
#include "compiler/tools/kernel_inputs.h"
#include "compiler/tools/npy.h"
#include "compiler/tools/reference_check.h"
#include "tuner/measure/cuda_driver.h"
#include "tuner/measure/kernel_launch.h"
#include "util/file_path.h"
#include "util/source_snippet.h"

namespace {

using kiln::frontend::BindingValue;
using kiln::tools::HostParam;
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
  --gemm wgmma|mma     Hopper (sm_90, sm_90a) gemms as wgmma (default) or
                       mma.sync
  --pipeline tma-ws|cp.async  wgmma main loops: TMA + mbarriers + a producer
                       warpgroup (default) or the cp.async pipeline
  --ws-blocks 1|2|auto  blocks per SM a warp-specialized loop plans its
                       registers for (auto: Kiln's plan)
  --ws-overlap on|off  attention-like warp-specialized loops keep the next
                       tile's first gemm in flight during the softmax (off)
  --epilogue auto|tma|direct  warp-specialized GEMMs write the accumulator
                       through a swizzled shared tile and TMA stores (tma),
                       with each thread's stores (direct), or through TMA
                       where the tile leaves the blocks per SM unchanged
                       (auto, the default)
  --cluster 1|2        warp-specialized GEMM main loops in pairs of blocks
                       (a thread-block cluster along grid x) that multicast
                       the operand tiles they share (1: off, the default;
                       2 ran slower as measured)
  --persistent on|off|auto|N  GEMMs of more blocks than SMs as one block
                       per SM walking the tiles (off; auto: where shared
                       memory allows one block per SM anyway; N: N blocks)
  --split-k N|auto     split the GEMM's K loop over N blocks per output tile
                       (float32 partials in a workspace, then summed); 1:
                       off; auto (default): Kiln's choice on Hopper's
                       default path for grids of at most a quarter of the SMs
  --split-k-reduce kernel|fused  where a split's partials are summed: by a
                       second kernel (kernel, default) or by the last block
                       of each tile (fused)
  --lower-for cuda:sm_XX  with --target cpu: run the thread program lowered for
                          that CUDA target (cuda:sm_90: wgmma) on the CPU
                          emulation
  --bind NAME=VALUE       bind a kernel parameter or T.const symbol (repeatable;
                          VALUE is an integer, a float, True/False, or a name
                          such as float16)
  --dynamic NAME           compile integer parameter NAME as a dynamic shape
                          symbol (repeatable); its run-time value comes from
                          --bind NAME=N
  --test-bind             take the bindings of the file's '# kiln: test-bind'
                          line (--bind overrides single names)
  --entry NAME            the kernel function, when the file has several
  --runs N                run the kernel N times (default 1) on the same
                          workspaces, the tensors reloaded before each run;
                          the report and --check take the last
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
  std::vector<std::string> dynamic_params; // --dynamic
  bool test_bind = false;
  std::string entry;
  std::string target;
  bool is_cuda = false;
  int device = 0;
  std::string arch;
  // --lower-for, --gemm, --pipeline, --ws-blocks, --split-k.
  kiln::codegen::LoweringOptions lowering;
  uint64_t seed = 0;
  int runs = 1;
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
    } else if (take("--dynamic")) {
      if (missing || value.empty()) return UsageError("--dynamic needs a parameter name");
      args->dynamic_params.push_back(value);
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
    } else if (take("--lower-for")) {
      if (missing || value.rfind("cuda:sm_", 0) != 0) {
        return UsageError("--lower-for needs a CUDA target such as cuda:sm_90a");
      }
      args->lowering.lower_for = value;
    } else if (take("--gemm")) {
      if (missing || (value != "wgmma" && value != "mma")) {
        return UsageError("--gemm must be wgmma or mma");
      }
      args->lowering.gemm_wgmma = value == "wgmma";
    } else if (take("--pipeline")) {
      if (missing || (value != "tma-ws" && value != "cp.async")) {
        return UsageError("--pipeline must be tma-ws or cp.async");
      }
      args->lowering.tma_ws_pipeline = value == "tma-ws";
    } else if (take("--ws-blocks")) {
      if (missing || (value != "1" && value != "2" && value != "auto")) {
        return UsageError("--ws-blocks must be 1, 2 or auto");
      }
      args->lowering.ws_blocks = value == "auto" ? 0 : value[0] - '0';
    } else if (take("--ws-overlap")) {
      if (missing || (value != "on" && value != "off")) {
        return UsageError("--ws-overlap must be on or off");
      }
      args->lowering.ws_overlap = value == "on";
    } else if (take("--epilogue")) {
      std::optional<kiln::passes::Epilogue> e = kiln::passes::ParseEpilogue(value);
      if (missing || !e) return UsageError("--epilogue must be auto, tma or direct");
      args->lowering.epilogue = *e;
    } else if (take("--cluster")) {
      if (missing || (value != "1" && value != "2")) return UsageError("--cluster must be 1 or 2");
      args->lowering.cluster = value[0] - '0';
    } else if (take("--persistent")) {
      if (missing || !kiln::codegen::ParsePersistent(value, &args->lowering)) {
        return UsageError(absl::StrCat("--persistent must be on, off, auto or a number of blocks "
                                       "in 1..",
                                       kiln::passes::kMaxPersistentBlocks));
      }
    } else if (take("--split-k-reduce")) {
      if (missing || !kiln::passes::ParseSplitKReduce(value, &args->lowering.split_k_reduce)) {
        return UsageError("--split-k-reduce must be fused or kernel, got '" + value + "'");
      }
    } else if (take("--split-k")) {
      int n = 0;
      if (missing || (value != "auto" &&
                      (!absl::SimpleAtoi(value, &n) || n < 1 || n > kiln::passes::kMaxSplits))) {
        return UsageError(
            absl::StrCat("--split-k must be 1..", kiln::passes::kMaxSplits, " or auto"));
      }
      args->lowering.split_k = n;
    } else if (take("--runs")) {
      if (missing || !absl::SimpleAtoi(value, &args->runs) || args->runs < 1 || args->runs > 1000) {
        return UsageError("--runs needs a count in 1..1000, got '" + value + "'");
      }
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
      // `--save C=~/c.npy`: no shell expands a ~ after '='.
      (is_input ? args->inputs : args->saves).emplace_back(name, kiln::util::ExpandHome(rest));
    } else if (take("--emit-dir")) {
      if (missing || value.empty()) return UsageError("--emit-dir needs a directory");
      args->emit_dir = kiln::util::ExpandHome(value);
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
  if (!args->lowering.lower_for.empty() && args->is_cuda) {
    return UsageError("--lower-for applies to --target cpu (for CUDA, use --arch)");
  }
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

absl::Status WriteEmitted(const std::string& dir, const ir::Program& program,
                          const kiln::codegen::EmittedKernel& kernel) {
  const std::string stem = program.name.empty() ? "kernel" : program.name;
  const char* suffix = kernel.target == kiln::codegen::EmitTarget::kCuda ? ".cu" : ".cc";
  return kiln::util::WriteFileAtomically(absl::StrCat(dir, "/", stem, suffix), kernel.source);
}

// --- main flow -------------------------------------------------------------------

int Run(const Args& args) {
  // Outputs that cannot be written fail before the compile and the run.
  if (!args.emit_dir.empty()) {
    if (absl::Status s = kiln::util::EnsureDirectory(args.emit_dir); !s.ok()) {
      return Fail(absl::StrCat("--emit-dir: ", s.message()));
    }
  }
  for (const auto& [name, path] : args.saves) {
    if (absl::Status s = kiln::util::PrepareOutputFile(path); !s.ok()) {
      return Fail(absl::StrCat("--save ", name, ": ", s.message()));
    }
  }
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

  // The target: for CUDA the device first, whose architecture codegen and the
  // program's device queries need.
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
    } else if (!kiln::measure::CubinRunsOn(arch, props.cc_major, props.cc_minor)) {
      return Fail(absl::StrCat("--arch ", arch, ": a cubin for ", arch, " does not run on ",
                               props.name, " (", props.arch(), ")"));
    }
    target = "cuda:" + arch;
    where = absl::StrCat("cuda:", args.device, " (", device->properties().name, ", ", arch, ")");
  }

  kiln::frontend::FrontendOptions options;
  options.file_name = args.file;
  options.entry = args.entry;
  // A --dynamic parameter is a symbol of the program: its --bind value is
  // the run-time value (below), not a binding.
  options.dynamic_params = args.dynamic_params;
  for (const auto& binding : bindings) {
    if (std::find(args.dynamic_params.begin(), args.dynamic_params.end(), binding.first) ==
        args.dynamic_params.end()) {
      options.bindings.push_back(binding);
    }
  }
  // Device queries describe the device the program is lowered for: --lower-for's,
  // else the architecture built for (the device's, or --arch's; cpu: none).
  options.device = kiln::frontend::DeviceModelForTarget(
      !args.lowering.lower_for.empty() ? args.lowering.lower_for : target);
  absl::StatusOr<ir::Program> program = kiln::frontend::CompileSource(*source, options);
  // Located errors of the program quote its source line.
  auto located = [&](absl::string_view message) {
    return kiln::util::WithSourceSnippets(absl::StrCat(message), args.file, *source);
  };
  if (!program.ok()) return Fail(located(program.status().message()));
  if (absl::Status s = ir::Verify(*program); !s.ok()) return Fail(located(s.message()));
  if (args.lowering.split_k > 1) {
    // Split-K adds a kernel and a workspace: run and check the split program.
    if (absl::Status s =
            kiln::passes::SplitK(*program, args.lowering.split_k, args.lowering.split_k_reduce);
        !s.ok()) {
      return Fail(located(s.message()));
    }
  }

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

  // Symbols left dynamic take their values from --bind, by the user's names
  // (`symbols`, as the launch spec has them); `ir_symbols` has the IR's.
  std::map<std::string, int64_t> symbols, ir_symbols;
  std::vector<int32_t> symbol_values;
  for (const ir::Symbol& sym : program->symbols) {
    const std::string& name = ir::UserName(sym);
    auto it = std::find_if(bindings.begin(), bindings.end(),
                           [&](const auto& b) { return b.first == name; });
    if (it == bindings.end() || it->second.kind != BindingValue::Kind::kInt) {
      return Fail(
          absl::StrCat("shape symbol '", name, "' has no value; bind it with --bind ", name, "=N"));
    }
    if (it->second.ival < 0 || it->second.ival > INT32_MAX) {
      return Fail(absl::StrCat("shape symbol '", name, "' = ", it->second.ival,
                               " is not a non-negative int32"));
    }
    symbols[name] = ir_symbols[sym.name] = it->second.ival;
    symbol_values.push_back(static_cast<int32_t>(it->second.ival));
  }

  // Parameters: shapes, then data from --input, zeros or the generator.
  std::vector<HostParam> params;
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < program->params.size(); ++i) {
    const ir::Param& p = program->params[i];
    HostParam hp;
    hp.name = ir::UserName(p); // --input/--save and reports use the user's names
    hp.dtype = p.buffer.dtype;
    hp.is_scalar = p.is_scalar;
    hp.is_output = is_output[i];
    hp.before.dtype = hp.dtype;
    if (!p.is_scalar) {
      absl::StatusOr<std::vector<int64_t>> shape = kiln::tools::EvalShape(
          p.buffer.shape, ir_symbols, absl::StrCat("the shape of '", hp.name, "'"));
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
      kiln::tools::FillRandom(params[i].before, args.seed, i);
    }
  }

  kiln::codegen::LoweringOptions lowering = args.lowering;
  // An explicit split was applied to the program after the frontend; auto
  // (0) or off (1) is LowerAndEmit's.
  lowering.split_k = lowering.split_k > 1 ? 1 : lowering.split_k;
  absl::StatusOr<kiln::codegen::EmittedKernel> kernel =
      kiln::codegen::LowerAndEmit(*program, target, lowering);
  if (!kernel.ok()) return Fail(located(kernel.status().message()));
  if (!args.emit_dir.empty()) {
    if (absl::Status s = WriteEmitted(args.emit_dir, *program, *kernel); !s.ok()) {
      return Fail(s.message());
    }
  }
  if (absl::Status s = kiln::measure::CheckLaunchSpec(kernel->launch, *program, params, symbols);
      !s.ok()) {
    return Fail(s.message());
  }
  absl::StatusOr<std::array<int64_t, 3>> grid = kiln::measure::EvalGrid(kernel->launch, symbols);
  if (!grid.ok()) return Fail(grid.status().message());

  absl::StatusOr<kiln::measure::RunResult> ran =
      args.is_cuda
          ? kiln::measure::RunOnCuda(*kernel, device, params, symbol_values, *grid, symbols,
                                     args.runs)
          : kiln::measure::RunOnCpu(*kernel, params, symbol_values, *grid, symbols, args.runs);
  if (!ran.ok()) return Fail(ran.status().message());

  // Every --save is attempted: one that fails does not lose the others.
  bool saved = true;
  for (const auto& [name, path] : args.saves) {
    if (absl::Status s = kiln::tools::WriteNpyFile(path, params[index_of[name]].after); !s.ok()) {
      Fail(absl::StrCat("--save ", name, ": ", s.message()));
      saved = false;
    }
  }
  if (!saved) return kExitError;

  std::ostringstream report;
  report << "kiln-run: " << program->name << " (" << args.file << ") on " << where << "\n";
  report << "  compile: " << ran->compile_note << "\n";
  report << absl::StrFormat("  kernel:  %.3f ms (%s, %s)\n", ran->kernel_ms, ran->timing_kind,
                            args.runs == 1 ? "one run"
                                           : absl::StrCat("the last of ", args.runs, " runs"));
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
