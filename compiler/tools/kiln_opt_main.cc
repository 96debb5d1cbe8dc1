// kiln-opt: runs Kiln's frontend and IR passes on one file and prints the
// result. The basis of the golden tests.
//
//   kiln-opt FILE [--bind NAME=VALUE]... [--entry NAME] [--passes=a,b,...]
//            [--emit=ir|proto|json|none|cuda|cpp|ptx|cubin] [--hash] [--target T]
//            [--print-locs] [--nvcc] [--test-bind] [-o OUT]
// --emit=cuda|cpp lowers (layout-inference, lower-tile-ops) unless the
// input is already thread IR and prints the generated CUDA C++ (target
// cuda:sm_XX) or host C++ (target cpu); ptx and cubin compile the CUDA
// source with NVRTC (or nvcc with --nvcc); a cubin needs -o OUT.
// --launch-json FILE writes the launch metadata (codegen/launch_json.h).
//            [--no-verify] [-o OUT]
//
// FILE is TileLang source (.py) or textual IR (.kir; detected by content);
// "-" reads standard input. The program is verified after parsing unless
// --no-verify. Exit status: 0 success, 1 the program has an error (the
// located diagnostic is on stderr), 2 bad command line or unreadable file.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/launch_json.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/hash.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/proto_convert.h"
#include "compiler/ir/text_parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/persistent.h"
#include "compiler/passes/split_k.h"
#include "compiler/passes/target.h"
#include "compiler/toolchain/kernel_compile.h"
#include "compiler/toolchain/resource_usage.h"
#include "compiler/tools/bind_lines.h"
#include "google/protobuf/util/json_util.h"
#include "util/file_path.h"
#include "util/source_snippet.h"

namespace {

constexpr char kUsage[] =
    "usage: kiln-opt FILE [--bind NAME=VALUE]... [--dynamic NAME]... [--entry NAME]\n"
    "                [--passes=a,b,...]\n"
    "                [--emit=ir|proto|json|none|cuda|cpp|ptx|cubin] [--hash] [--target T]\n"
    "                [--print-locs] [--no-verify] [--nvcc] [--launch-json FILE] [-o OUT]\n"
    "                [--lower-for T] [--gemm=wgmma|mma] [--pipeline=tma-ws|cp.async]\n"
    "                [--ws-blocks=1|2|auto] [--ws-overlap=on|off] [--cluster=1|2]\n"
    "                [--epilogue=auto|tma|direct] [--split-k=N|auto]\n"
    "                [--split-k-reduce=fused|kernel]\n"
    "                [--persistent=on|off|auto|N]\n"
    "                [--test-bind]\n"
    "                [--list-passes] [--list-targets]\n";

struct Args {
  std::string file;
  std::string entry;
  std::vector<std::pair<std::string, kiln::frontend::BindingValue>> bindings;
  std::vector<std::string> dynamic_params; // --dynamic: parameters compiled as shape symbols
  std::vector<std::string> passes;
  std::string emit = "ir";
  std::string target = "cpu";
  // --lower-for, --gemm, --pipeline, --ws-blocks, --split-k.
  kiln::codegen::LoweringOptions lowering;
  std::string out;
  bool hash = false;
  bool print_locs = false;
  bool verify = true;
  bool list_passes = false;
  bool list_targets = false; // the supported targets, one a line
  bool nvcc = false;
  bool test_bind = false;  // start from the file's `# kiln: test-bind` line
  std::string launch_json; // with --emit=cuda|cpp|ptx|cubin: write launch metadata here
};

int UsageError(const std::string& message) {
  std::cerr << "kiln-opt: " << message << "\n" << kUsage;
  return 2;
}

// Accepts "--name=value" and "--name value"; returns true and advances i.
bool TakeValue(int argc, char** argv, int& i, const std::string& name, std::string* value) {
  std::string arg = argv[i];
  if (arg == name) {
    if (i + 1 >= argc) return false;
    *value = argv[++i];
    return true;
  }
  if (arg.rfind(name + "=", 0) == 0) {
    *value = arg.substr(name.size() + 1);
    return true;
  }
  return false;
}

int ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (TakeValue(argc, argv, i, "--bind", &value)) {
      size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0) return UsageError("--bind expects NAME=VALUE");
      args->bindings.emplace_back(value.substr(0, eq),
                                  kiln::frontend::ParseBindingText(value.substr(eq + 1)));
    } else if (TakeValue(argc, argv, i, "--dynamic", &value)) {
      if (value.empty()) return UsageError("--dynamic expects a parameter name");
      args->dynamic_params.push_back(value);
    } else if (TakeValue(argc, argv, i, "--entry", &value)) {
      args->entry = value;
    } else if (TakeValue(argc, argv, i, "--passes", &value)) {
      for (absl::string_view p : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        args->passes.emplace_back(p);
      }
    } else if (TakeValue(argc, argv, i, "--emit", &value)) {
      static const std::set<std::string> kEmits = {"ir",   "proto", "json", "none",
                                                   "cuda", "cpp",   "ptx",  "cubin"};
      if (!kEmits.count(value)) {
        return UsageError("--emit must be ir, proto, json, none, cuda, cpp, ptx or cubin");
      }
      args->emit = value;
    } else if (TakeValue(argc, argv, i, "--target", &value)) {
      args->target = value;
    } else if (TakeValue(argc, argv, i, "--lower-for", &value)) {
      args->lowering.lower_for = value;
    } else if (TakeValue(argc, argv, i, "--gemm", &value)) {
      if (value != "wgmma" && value != "mma") return UsageError("--gemm must be wgmma or mma");
      args->lowering.gemm_wgmma = value == "wgmma";
    } else if (TakeValue(argc, argv, i, "--pipeline", &value)) {
      if (value != "tma-ws" && value != "cp.async") {
        return UsageError("--pipeline must be tma-ws or cp.async");
      }
      args->lowering.tma_ws_pipeline = value == "tma-ws";
    } else if (TakeValue(argc, argv, i, "--ws-blocks", &value)) {
      if (value != "1" && value != "2" && value != "auto") {
        return UsageError("--ws-blocks must be 1, 2 or auto");
      }
      args->lowering.ws_blocks = value == "auto" ? 0 : value[0] - '0';
    } else if (TakeValue(argc, argv, i, "--ws-overlap", &value)) {
      if (value != "on" && value != "off") return UsageError("--ws-overlap must be on or off");
      args->lowering.ws_overlap = value == "on";
    } else if (TakeValue(argc, argv, i, "--epilogue", &value)) {
      std::optional<kiln::passes::Epilogue> e = kiln::passes::ParseEpilogue(value);
      if (!e) return UsageError("--epilogue must be auto, tma or direct");
      args->lowering.epilogue = *e;
    } else if (TakeValue(argc, argv, i, "--cluster", &value)) {
      if (value != "1" && value != "2") return UsageError("--cluster must be 1 or 2");
      args->lowering.cluster = value[0] - '0';
    } else if (TakeValue(argc, argv, i, "--persistent", &value)) {
      if (!kiln::codegen::ParsePersistent(value, &args->lowering)) {
        return UsageError(absl::StrCat("--persistent must be on, off, auto or a number of blocks "
                                       "in 1..",
                                       kiln::passes::kMaxPersistentBlocks));
      }
    } else if (TakeValue(argc, argv, i, "--split-k-reduce", &value)) {
      if (!kiln::passes::ParseSplitKReduce(value, &args->lowering.split_k_reduce)) {
        return UsageError("--split-k-reduce must be fused or kernel");
      }
    } else if (TakeValue(argc, argv, i, "--split-k", &value)) {
      int n = 0;
      if (value != "auto" &&
          (!absl::SimpleAtoi(value, &n) || n < 1 || n > kiln::passes::kMaxSplits)) {
        return UsageError(
            absl::StrCat("--split-k must be 1..", kiln::passes::kMaxSplits, " or auto"));
      }
      args->lowering.split_k = n;
    } else if (TakeValue(argc, argv, i, "-o", &value)) {
      args->out = kiln::util::ExpandHome(value); // `-o=~/x`: no shell expands that ~
    } else if (arg == "--hash") {
      args->hash = true;
    } else if (arg == "--print-locs") {
      args->print_locs = true;
    } else if (TakeValue(argc, argv, i, "--launch-json", &value)) {
      args->launch_json = kiln::util::ExpandHome(value);
    } else if (arg == "--test-bind") {
      args->test_bind = true;
    } else if (arg == "--nvcc") {
      args->nvcc = true;
    } else if (arg == "--no-verify") {
      args->verify = false;
    } else if (arg == "--list-passes") {
      args->list_passes = true;
    } else if (arg == "--list-targets") {
      args->list_targets = true;
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      return UsageError("unknown option '" + arg + "'");
    } else if (args->file.empty()) {
      args->file = arg;
    } else {
      return UsageError("more than one input file");
    }
  }
  if (args->file.empty() && !args->list_passes && !args->list_targets) {
    return UsageError("no input file");
  }
  return 0;
}

bool ReadInput(const std::string& path, std::string* text) {
  if (path == "-") {
    text->assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return true;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  text->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

absl::StatusOr<kiln::ir::Program> Load(const Args& args, const std::string& text) {
  std::string name = args.file == "-" ? "<stdin>" : args.file;
  if (kiln::ir::LooksLikeIrText(text)) {
    if (!args.bindings.empty() || !args.dynamic_params.empty()) {
      return absl::InvalidArgumentError(name +
                                        ": --bind and --dynamic apply to TileLang source, not IR "
                                        "text");
    }
    return kiln::ir::ParseProgramText(text, name);
  }
  kiln::frontend::FrontendOptions options;
  options.file_name = name;
  options.entry = args.entry;
  options.bindings = args.bindings;
  options.dynamic_params = args.dynamic_params;
  // Device queries describe the device the program is lowered for.
  options.device = kiln::frontend::DeviceModelForTarget(
      args.lowering.lower_for.empty() ? args.target : args.lowering.lower_for);
  if (args.test_bind) {
    absl::StatusOr<kiln::tools::Bindings> line = kiln::tools::BindLine(text, name, "test-bind");
    if (!line.ok()) return line.status();
    options.bindings = kiln::tools::Override(*std::move(line), args.bindings);
  }
  return kiln::frontend::CompileSource(text, options);
}

} // namespace

int main(int argc, char** argv) {
  Args args;
  if (int rc = ParseArgs(argc, argv, &args); rc != 0) return rc;
  if (args.list_targets) {
    for (const std::string& t : kiln::passes::SupportedTargets()) std::cout << t << "\n";
    return 0;
  }
  if (args.list_passes) {
    for (const kiln::passes::PassInfo* p : kiln::passes::AllPasses()) {
      std::cout << p->name << "\t" << p->summary << "\n";
    }
    return 0;
  }
  // An output that cannot be written fails before the work, not after it.
  for (const std::string* path : {&args.out, &args.launch_json}) {
    if (path->empty()) continue;
    if (absl::Status s = kiln::util::PrepareOutputFile(*path); !s.ok()) {
      std::cerr << "kiln-opt: " << s.message() << "\n";
      return 2;
    }
  }
  std::string text;
  if (!ReadInput(args.file, &text)) {
    std::cerr << "kiln-opt: cannot read '" << args.file << "'\n";
    return 2;
  }
  // Located errors (the program's, the passes') quote the source line.
  const std::string shown_name = args.file == "-" ? "<stdin>" : args.file;
  auto located = [&](absl::string_view message) {
    return kiln::util::WithSourceSnippets(absl::StrCat(message), shown_name, text);
  };
  absl::StatusOr<kiln::ir::Program> program = Load(args, text);
  if (!program.ok()) {
    std::cerr << located(program.status().message()) << "\n";
    return 1;
  }
  if (args.verify) {
    if (absl::Status s = kiln::ir::Verify(*program); !s.ok()) {
      std::cerr << located(s.message()) << "\n";
      return 1;
    }
  }
  kiln::passes::PassContext ctx;
  ctx.target = args.target;
  if (args.lowering.lower_for != args.target) ctx.lower_for = args.lowering.lower_for;
  ctx.gemm_wgmma = args.lowering.gemm_wgmma;
  ctx.tma_ws_pipeline = args.lowering.tma_ws_pipeline;
  ctx.ws_blocks = args.lowering.ws_blocks;
  ctx.ws_overlap = args.lowering.ws_overlap;
  ctx.cluster = args.lowering.cluster;
  ctx.epilogue = args.lowering.epilogue;
  // Split-K rewrites the tile program itself: the IR printed, passed and
  // emitted below is the split one.
  if (args.lowering.split_k > 1) {
    if (absl::Status s =
            kiln::passes::SplitK(*program, args.lowering.split_k, args.lowering.split_k_reduce);
        !s.ok()) {
      std::cerr << located(s.message()) << "\n";
      return 1;
    }
  }
  if (absl::Status s = kiln::passes::RunPasses(*program, args.passes, ctx); !s.ok()) {
    std::cerr << located(s.message()) << "\n";
    return 1;
  }

  std::string output;
  const bool codegen =
      args.emit == "cuda" || args.emit == "cpp" || args.emit == "ptx" || args.emit == "cubin";
  if (codegen) {
    const bool want_cuda = args.emit != "cpp";
    if (want_cuda != absl::StartsWith(args.target, "cuda")) {
      std::cerr << "kiln-opt: --emit=" << args.emit << " needs --target "
                << (want_cuda ? "cuda:sm_XX" : "cpu") << "\n";
      return 2;
    }
    if (args.emit == "cubin" && args.out.empty()) {
      std::cerr << "kiln-opt: --emit=cubin writes binary output; give -o FILE\n";
      return 2;
    }
    absl::StatusOr<kiln::codegen::EmittedKernel> kernel;
    if (program->attrs.count("kiln.level")) {
      absl::StatusOr<kiln::passes::Target> target = kiln::passes::ParseTarget(args.target);
      if (!target.ok()) {
        std::cerr << target.status().message() << "\n";
        return 2;
      }
      kernel = kiln::codegen::EmitLowered(*program, *target);
    } else {
      kiln::codegen::LoweringOptions lowering = args.lowering;
      // An explicit split was applied above; auto (0) or off (1) is
      // LowerAndEmit's.
      lowering.split_k = lowering.split_k > 1 ? 1 : lowering.split_k;
      kernel = kiln::codegen::LowerAndEmit(*program, args.target, lowering);
    }
    if (!kernel.ok()) {
      std::cerr << located(kernel.status().message()) << "\n";
      return 1;
    }
    std::string launch_json;
    if (!args.launch_json.empty()) launch_json = kiln::codegen::LaunchJson(*kernel);
    if (args.emit == "cuda" || args.emit == "cpp") {
      output = kernel->source;
    } else {
      kiln::toolchain::KernelCompileOptions options;
      options.use_nvcc = args.nvcc;
      options.want_cubin = args.emit == "cubin";
      options.want_ptx = args.emit == "ptx";
      absl::StatusOr<kiln::toolchain::CompileOutput> compiled =
          kiln::toolchain::CompileCudaKernel(*kernel, options);
      if (!compiled.ok()) {
        std::cerr << compiled.status().message() << "\n";
        return 1;
      }
      output = args.emit == "cubin" ? compiled->cubin : compiled->ptx;
      // ptxas's report (cubin only): registers, spills, stack, as the
      // launch metadata's "resources".
      if (const kiln::toolchain::ResourceUsage* u =
              kiln::toolchain::FindKernel(compiled->kernels, kernel->launch.symbol);
          u != nullptr && !launch_json.empty()) {
        launch_json.resize(launch_json.rfind('}'));
        launch_json += ", \"resources\": {\"registers\": " + std::to_string(u->registers) +
                       ", \"spill_store_bytes\": " + std::to_string(u->spill_store_bytes) +
                       ", \"spill_load_bytes\": " + std::to_string(u->spill_load_bytes) +
                       ", \"stack_frame_bytes\": " + std::to_string(u->stack_frame_bytes) + "}}\n";
      }
    }
    if (!args.launch_json.empty()) {
      if (absl::Status s = kiln::util::WriteFileAtomically(args.launch_json, launch_json);
          !s.ok()) {
        std::cerr << "kiln-opt: " << s.message() << "\n";
        return 2;
      }
    }
  } else if (args.hash) {
    kiln::ir::KeyContext key;
    key.target = args.target;
    output = kiln::ir::ProgramKey(*program, key) + "\n";
  } else if (args.emit == "ir") {
    kiln::ir::PrintOptions options;
    options.locations = args.print_locs;
    output = kiln::ir::PrintProgram(*program, options);
  } else if (args.emit == "proto" || args.emit == "json") {
    absl::StatusOr<kiln::v1::Program> converted = kiln::ir::ToProto(*program);
    if (!converted.ok()) {
      std::cerr << converted.status().message() << "\n";
      return 1;
    }
    const kiln::v1::Program& proto = *converted;
    if (args.emit == "proto") {
      output = proto.SerializeAsString();
    } else {
      google::protobuf::util::JsonPrintOptions json;
      json.add_whitespace = true;
      json.preserve_proto_field_names = true;
      if (!google::protobuf::util::MessageToJsonString(proto, &output, json).ok()) {
        std::cerr << "kiln-opt: cannot render JSON\n";
        return 1;
      }
    }
  }
  if (args.out.empty()) {
    std::cout << output;
  } else {
    if (absl::Status s = kiln::util::WriteFileAtomically(args.out, output); !s.ok()) {
      std::cerr << "kiln-opt: " << s.message() << "\n";
      return 2;
    }
  }
  return 0;
}
