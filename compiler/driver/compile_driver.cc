#include "compiler/driver/compile_driver.h"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/launch_json.h"
#include "compiler/ir/canonicalize.h"
#include "compiler/ir/hash.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/text_parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/layout_inference.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/persistent.h"
#include "compiler/passes/split_k.h"
#include "compiler/passes/target.h"
#include "compiler/toolchain/fingerprint.h"
#include "compiler/toolchain/host_cc.h"
#include "compiler/toolchain/kernel_compile.h"

namespace kiln::driver {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool IsCuda(const BuildOptions& o) { return o.target.rfind("cuda:", 0) == 0; }

// The toolchain that will run, with the target's default filled in.
std::string Toolchain(const BuildOptions& o) {
  if (!o.toolchain.empty()) return o.toolchain;
  return IsCuda(o) ? "nvrtc" : "cc";
}

int OptLevel(const BuildOptions& o) {
  if (o.opt_level >= 0) return o.opt_level;
  return IsCuda(o) ? 3 : 1;
}

std::string WithResources(std::string json, const toolchain::ResourceUsage& u) {
  json.resize(json.rfind('}'));
  absl::StrAppend(&json, ", \"resources\": {\"registers\": ", u.registers,
                  ", \"spill_store_bytes\": ", u.spill_store_bytes,
                  ", \"spill_load_bytes\": ", u.spill_load_bytes,
                  ", \"stack_frame_bytes\": ", u.stack_frame_bytes,
                  ", \"static_shared_bytes\": ", u.shared_bytes, "}}\n");
  return json;
}

// The epilogue an "epilogue=auto|tma|direct" pass option asks for; nullopt
// for any other option.
std::optional<passes::Epilogue> EpilogueOption(std::string_view p) {
  constexpr std::string_view kPrefix = "epilogue=";
  if (p.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  return passes::ParseEpilogue(p.substr(kPrefix.size()));
}

} // namespace

absl::Status ValidateBuildOptions(const BuildOptions& o) {
  absl::StatusOr<passes::Target> target = passes::ParseTarget(o.target);
  if (!target.ok()) return target.status();
  if (target->kind == passes::Target::Kind::kHip) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target '", o.target,
        "': HIP code generation is not available yet; supported: ", passes::SupportedTargetList()));
  }
  const std::string tc = Toolchain(o);
  if (IsCuda(o) ? (tc != "nvrtc" && tc != "nvcc") : tc != "cc") {
    return absl::InvalidArgumentError(
        absl::StrCat("toolchain '", o.toolchain, "' cannot compile for target '", o.target,
                     "' (use ", IsCuda(o) ? "nvrtc or nvcc" : "cc", ")"));
  }
  if (o.opt_level < -1 || o.opt_level > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("opt_level must be 0..3 (or unset), not ", o.opt_level));
  }
  if (!IsCuda(o) && (o.emit_ptx || o.line_info || o.fast_math)) {
    return absl::InvalidArgumentError(
        "emit_ptx, line_info and fast_math apply to CUDA targets only");
  }
  for (const std::string& p : o.pass_options) {
    if (absl::StartsWith(p, "split-k=")) {
      int n = 0;
      if (p != "split-k=auto" && (!absl::SimpleAtoi(absl::string_view(p).substr(8), &n) || n < 1 ||
                                  n > passes::kMaxSplits)) {
        return absl::InvalidArgumentError(absl::StrCat("pass option '", p,
                                                       "': split-k takes a number of splits in 1..",
                                                       passes::kMaxSplits, ", or auto"));
      }
      continue;
    }
    if (absl::StartsWith(p, "split-k-reduce=")) {
      passes::SplitKReduce unused_reduce;
      if (!passes::ParseSplitKReduce(std::string_view{p}.substr(15), &unused_reduce)) {
        return absl::InvalidArgumentError(
            absl::StrCat("pass option '", p, "': split-k-reduce is fused or kernel (default: ",
                         passes::SplitKReduceName(passes::kDefaultSplitKReduce), ")"));
      }
      continue;
    }
    codegen::LoweringOptions unused;
    if (p != "gemm=wgmma" && p != "gemm=mma" && p != "pipeline=cp.async" &&
        p != "pipeline=tma-ws" && p != "ws-blocks=1" && p != "ws-blocks=2" &&
        p != "ws-blocks=auto" && p != "ws-overlap=on" && p != "ws-overlap=off" &&
        p != "cluster=1" && p != "cluster=2" && !EpilogueOption(p) &&
        !(absl::StartsWith(p, "persistent=") &&
          codegen::ParsePersistent(std::string_view{p}.substr(11), &unused))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown pass option '", p,
          "' (Kiln defines gemm=wgmma, gemm=mma, pipeline=tma-ws, "
          "pipeline=cp.async, ws-blocks=1, 2 or auto, ws-overlap=on or off, cluster=1 or 2, "
          "epilogue=auto, tma or direct, "
          "persistent=on, off, auto or N blocks, split-k=N or auto, and split-k-reduce=fused "
          "or kernel)"));
    }
  }
  return absl::OkStatus();
}

// The last gemm= pass option wins; the default is wgmma where the target
// has it (Hopper).
bool GemmWgmma(const BuildOptions& o) {
  bool wgmma = passes::TargetUsesWgmma(o.target);
  for (const std::string& p : o.pass_options)
    wgmma = p == "gemm=wgmma" ? true : (p == "gemm=mma" ? false : wgmma);
  return wgmma;
}

// The last pipeline= pass option wins; the default is TMA + warp
// specialization (it applies to wgmma programs only).
bool TmaWsPipeline(const BuildOptions& o) {
  bool tma_ws = true;
  for (const std::string& p : o.pass_options)
    tma_ws = p == "pipeline=tma-ws" ? true : (p == "pipeline=cp.async" ? false : tma_ws);
  return tma_ws && GemmWgmma(o);
}

// The last ws-blocks= pass option wins; 0 (auto) by default and wherever the
// main loop is not TMA + warp specialization.
int WsBlocks(const BuildOptions& o) {
  int blocks = 0;
  for (const std::string& p : o.pass_options) {
    blocks = p == "ws-blocks=1" ? 1 : p == "ws-blocks=2" ? 2 : p == "ws-blocks=auto" ? 0 : blocks;
  }
  return TmaWsPipeline(o) ? blocks : 0;
}

// The last ws-overlap= pass option wins; off by default and wherever the main
// loop is not TMA + warp specialization.
bool WsOverlap(const BuildOptions& o) {
  bool on = false;
  for (const std::string& p : o.pass_options) {
    on = p == "ws-overlap=on" ? true : (p == "ws-overlap=off" ? false : on);
  }
  return on && TmaWsPipeline(o);
}

// The last cluster= pass option wins; 1 (no clusters) by default and
// wherever the main loop is not TMA + warp specialization.
int Cluster(const BuildOptions& o) {
  int n = 1;
  for (const std::string& p : o.pass_options) {
    n = p == "cluster=2" ? 2 : (p == "cluster=1" ? 1 : n);
  }
  return TmaWsPipeline(o) ? n : 1;
}

// The last epilogue= pass option wins; auto by default and wherever the
// main loop is not TMA + warp specialization (no epilogue to choose).
passes::Epilogue EpilogueOf(const BuildOptions& o) {
  passes::Epilogue e = passes::Epilogue::kAuto;
  for (const std::string& p : o.pass_options) {
    if (std::optional<passes::Epilogue> x = EpilogueOption(p)) e = *x;
  }
  return TmaWsPipeline(o) ? e : passes::Epilogue::kAuto;
}

// The key form of the epilogue= option ("" for auto).
std::string EpilogueKey(const BuildOptions& o) {
  const passes::Epilogue e = EpilogueOf(o);
  return e == passes::Epilogue::kAuto
             ? ""
             : absl::StrCat(";epilogue=", std::string(passes::EpilogueName(e)));
}

// The last persistent= pass option wins (codegen::ParsePersistent reads
// it); off by default and wherever the main loop is not TMA + warp
// specialization.
codegen::LoweringOptions PersistentOf(const BuildOptions& o) {
  codegen::LoweringOptions l;
  for (const std::string& p : o.pass_options) {
    if (absl::StartsWith(p, "persistent=")) {
      codegen::ParsePersistent(std::string_view{p}.substr(11), &l);
    }
  }
  if (!TmaWsPipeline(o)) l = codegen::LoweringOptions{};
  return l;
}

// The key form of the persistent= option ("" when off): ";persistent=" and
// "on", "auto" or the grid's blocks.
std::string PersistentKey(const BuildOptions& o) {
  using P = codegen::LoweringOptions::Persistent;
  const codegen::LoweringOptions l = PersistentOf(o);
  if (l.persistent == P::kOff) return "";
  if (l.persistent_blocks > 0) return absl::StrCat(";persistent=", l.persistent_blocks);
  return l.persistent == P::kOn ? ";persistent=on" : ";persistent=auto";
}

// The last split-k= pass option wins; 0 (auto) by default.
int SplitKParts(const BuildOptions& o) {
  int parts = 0;
  for (const std::string& p : o.pass_options) {
    int n = 0;
    if (p == "split-k=auto") {
      parts = 0;
    } else if (absl::StartsWith(p, "split-k=") &&
               absl::SimpleAtoi(absl::string_view(p).substr(8), &n)) {
      parts = n;
    }
  }
  return parts;
}

// The last split-k-reduce= pass option wins; passes::kDefaultSplitKReduce
// by default.
passes::SplitKReduce SplitKReduceOf(const BuildOptions& o) {
  passes::SplitKReduce reduce = passes::kDefaultSplitKReduce;
  for (const std::string& p : o.pass_options) {
    if (absl::StartsWith(p, "split-k-reduce=")) {
      passes::ParseSplitKReduce(std::string_view{p}.substr(15), &reduce);
    }
  }
  return reduce;
}

// ";split-k-reduce=fused|kernel" where the build asks for the one that is
// not the default; the default adds nothing to the key or the variant.
std::string SplitKReduceKey(const BuildOptions& o) {
  const passes::SplitKReduce r = SplitKReduceOf(o);
  return r == passes::kDefaultSplitKReduce
             ? ""
             : absl::StrCat(";split-k-reduce=", passes::SplitKReduceName(r));
}

codegen::LoweringOptions LoweringFor(const BuildOptions& o) {
  codegen::LoweringOptions lowering;
  lowering.gemm_wgmma = GemmWgmma(o);
  lowering.tma_ws_pipeline = TmaWsPipeline(o);
  lowering.ws_blocks = WsBlocks(o);
  lowering.ws_overlap = WsOverlap(o);
  lowering.cluster = Cluster(o);
  lowering.epilogue = EpilogueOf(o);
  lowering.split_k = SplitKParts(o);
  lowering.split_k_reduce = SplitKReduceOf(o);
  const codegen::LoweringOptions persistent = PersistentOf(o);
  lowering.persistent = persistent.persistent;
  lowering.persistent_blocks = persistent.persistent_blocks;
  return lowering;
}

bool IsPassKnob(absl::string_view name) { return absl::StartsWith(name, "kiln:"); }

absl::StatusOr<std::string> KnobPassOption(absl::string_view name, int64_t value) {
  if (name == kSplitKKnob) {
    if (value < 1 || value > passes::kMaxSplits) {
      return absl::InvalidArgumentError(absl::StrCat(
          kSplitKKnob, " = ", value, ": the splits must be in 1..", passes::kMaxSplits));
    }
    return absl::StrCat("split-k=", value);
  }
  if (name == kPersistentKnob) {
    if (value != 0 && value != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(kPersistentKnob, " = ", value, ": 0 (off) or 1 (one block per SM)"));
    }
    return value == 1 ? "persistent=on" : "persistent=off";
  }
  if (name == kTmaStoreKnob) {
    if (value != 0 && value != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(kTmaStoreKnob, " = ", value, ": 0 (direct stores) or 1 (TMA stores)"));
    }
    return value == 1 ? "epilogue=tma" : "epilogue=direct";
  }
  if (name == kClusterKnob) {
    if (value != 1 && value != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(kClusterKnob, " = ", value, ": 1 (no clusters) or 2 (pairs of blocks)"));
    }
    return absl::StrCat("cluster=", value);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown tuning knob '", name, "' (Kiln's knobs: ", kSplitKKnob, ", ",
                   kPersistentKnob, ", ", kClusterKnob, ", ", kTmaStoreKnob, ")"));
}

std::string KernelVariant(const BuildOptions& o) {
  BuildOptions defaults;
  defaults.target = o.target;
  std::string out;
  if (Toolchain(o) != Toolchain(defaults)) absl::StrAppend(&out, ";toolchain=", Toolchain(o));
  if (OptLevel(o) != OptLevel(defaults)) absl::StrAppend(&out, ";opt=", OptLevel(o));
  if (o.fast_math) absl::StrAppend(&out, ";fast_math=1");
  if (passes::TargetUsesWgmma(o.target)) {
    if (!GemmWgmma(o)) absl::StrAppend(&out, ";gemm=mma");
    if (GemmWgmma(o) && !TmaWsPipeline(o)) absl::StrAppend(&out, ";pipeline=cp.async");
    if (WsBlocks(o) != 0) absl::StrAppend(&out, ";ws-blocks=", WsBlocks(o));
    if (WsOverlap(o)) absl::StrAppend(&out, ";ws-overlap=on");
    if (Cluster(o) != 1) absl::StrAppend(&out, ";cluster=", Cluster(o));
    absl::StrAppend(&out, EpilogueKey(o));
    absl::StrAppend(&out, PersistentKey(o));
  }
  if (SplitKParts(o) != 0) absl::StrAppend(&out, ";split-k=", SplitKParts(o));
  absl::StrAppend(&out, SplitKReduceKey(o));
  return out;
}

std::string CanonicalOptions(const BuildOptions& o) {
  // Only what changes the generated code or which files an artifact holds.
  // emit_ptx asks the toolchain for more work, so it is part of the key; the
  // generated source is kept in every artifact (Build), so emit_source is
  // not, and `--emit cpp` after a build of the same program is a hit.
  return absl::StrCat(
      "toolchain=", Toolchain(o), ";opt=", OptLevel(o), ";fast_math=", o.fast_math ? 1 : 0,
      ";line_info=", o.line_info ? 1 : 0, ";ptx=", o.emit_ptx ? 1 : 0,
      GemmWgmma(o) ? ";gemm=wgmma" : "", TmaWsPipeline(o) ? ";pipeline=tma-ws" : "",
      WsBlocks(o) != 0 ? absl::StrCat(";ws-blocks=", WsBlocks(o)) : "",
      WsOverlap(o) ? ";ws-overlap=on" : "",
      Cluster(o) != 1 ? absl::StrCat(";cluster=", Cluster(o)) : "", EpilogueKey(o),
      PersistentKey(o), SplitKParts(o) != 0 ? absl::StrCat(";split-k=", SplitKParts(o)) : "",
      SplitKReduceKey(o));
}

std::string FingerprintFor(const BuildOptions& o) {
  const std::string tc = Toolchain(o);
  if (tc == "nvcc") return toolchain::ToolchainFingerprint(toolchain::ToolchainKind::kNvcc);
  if (tc == "nvrtc") return toolchain::ToolchainFingerprint(toolchain::ToolchainKind::kNvrtc);
  return toolchain::ToolchainFingerprint(toolchain::ToolchainKind::kHostCc);
}

absl::StatusOr<Prepared> Prepare(const ProgramInput& in, const BuildOptions& options) {
  if (absl::Status s = ValidateBuildOptions(options); !s.ok()) return s;
  const Clock::time_point start = Clock::now();
  Prepared out;
  switch (in.kind) {
  case ProgramInput::Kind::kTileLang: {
    frontend::FrontendOptions fo;
    fo.file_name = in.file_name;
    fo.entry = in.entry;
    fo.bindings = in.bindings;
    fo.dynamic_params = in.dynamic_params;
    fo.limits = in.limits;
    // Device queries (torch.cuda.get_device_properties, ...) describe the
    // target's device; the key covers the target, so it covers the answers.
    fo.device = frontend::DeviceModelForTarget(options.target);
    absl::StatusOr<ir::Program> p = frontend::CompileSource(in.text, fo);
    if (!p.ok()) return p.status();
    out.program = *std::move(p);
    break;
  }
  case ProgramInput::Kind::kIrText:
  case ProgramInput::Kind::kProgram: {
    if (!in.bindings.empty() || !in.dynamic_params.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          in.file_name,
          ": bindings apply to TileLang source, not to IR (and so do dynamic parameters)"));
    }
    if (in.kind == ProgramInput::Kind::kIrText) {
      absl::StatusOr<ir::Program> p = ir::ParseProgramText(in.text, in.file_name);
      if (!p.ok()) return p.status();
      out.program = *std::move(p);
    } else {
      out.program = in.program;
    }
    if (out.program.attrs.count("kiln.level")) {
      return absl::InvalidArgumentError(
          absl::StrCat(in.file_name, ": thread-level IR is not accepted; send tile IR"));
    }
    break;
  }
  }
  if (absl::Status s = ir::Verify(out.program); !s.ok()) return s;
  out.fingerprint = FingerprintFor(options);
  ir::KeyContext ctx;
  ctx.target = options.target;
  ctx.options = CanonicalOptions(options);
  ctx.toolchain_fingerprint = out.fingerprint;
  out.key = ir::ProgramKey(out.program, ctx);
  out.frontend_seconds = SecondsSince(start);
  return out;
}

absl::StatusOr<codegen::EmittedKernel> Emit(const Prepared& prepared, const BuildOptions& options) {
  if (absl::Status s = ValidateBuildOptions(options); !s.ok()) return s;
  return codegen::LowerAndEmit(prepared.program, options.target, LoweringFor(options));
}

absl::StatusOr<Built> Build(const Prepared& prepared, const BuildOptions& options) {
  if (absl::Status s = ValidateBuildOptions(options); !s.ok()) return s;
  if (absl::StrContains(prepared.fingerprint, "unavailable")) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ", Toolchain(options), " toolchain for target '", options.target,
                     "' is not installed on this host (fingerprint ", prepared.fingerprint, ")"));
  }
  Built out;
  Clock::time_point start = Clock::now();
  absl::StatusOr<codegen::EmittedKernel> kernel = Emit(prepared, options);
  if (!kernel.ok()) return kernel.status();
  out.kernel = *std::move(kernel);
  out.timings["lower_emit"] = SecondsSince(start);

  start = Clock::now();
  out.launch_json = codegen::LaunchJson(out.kernel);
  if (IsCuda(options)) {
    toolchain::KernelCompileOptions ko;
    ko.use_nvcc = Toolchain(options) == "nvcc";
    ko.want_cubin = true;
    ko.want_ptx = options.emit_ptx;
    ko.fast_math = options.fast_math;
    ko.line_info = options.line_info;
    ko.opt_level = OptLevel(options);
    absl::StatusOr<toolchain::CompileOutput> compiled =
        toolchain::CompileCudaKernel(out.kernel, ko);
    if (!compiled.ok()) return compiled.status();
    out.files.push_back({kCubin, std::move(compiled->cubin)});
    if (options.emit_ptx) out.files.push_back({kPtx, std::move(compiled->ptx)});
    if (const toolchain::ResourceUsage* u =
            toolchain::FindKernel(compiled->kernels, out.kernel.launch.symbol)) {
      out.resources = *u;
      out.launch_json = WithResources(out.launch_json, *u);
    }
    out.log = std::move(compiled->log);
  } else {
    toolchain::HostCompileInput hi;
    hi.source = out.kernel.source;
    hi.opt_level = OptLevel(options);
    absl::StatusOr<toolchain::HostCompileOutput> compiled = toolchain::HostCompile(hi);
    if (!compiled.ok()) return compiled.status();
    out.files.push_back({kSharedObject, std::move(compiled->shared_object)});
    out.log = std::move(compiled->log);
  }
  out.timings["toolchain"] = SecondsSince(start);
  // Always kept (a few tens of KB, compressed in the cache): a later request
  // for the source of the same build is answered from this artifact.
  out.files.push_back({IsCuda(options) ? kCudaSource : kCppSource, out.kernel.source});
  out.files.push_back({kIrText, ir::PrintProgram(ir::Canonicalize(prepared.program))});
  return out;
}

absl::StatusOr<Built> CompileProgram(const ProgramInput& in, const BuildOptions& options) {
  absl::StatusOr<Prepared> prepared = Prepare(in, options);
  if (!prepared.ok()) return prepared.status();
  return Build(*prepared, options);
}

} // namespace kiln::driver
