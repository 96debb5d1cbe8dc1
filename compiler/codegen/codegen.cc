#include "compiler/codegen/codegen.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/cxx_emitter.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/ir_util.h"
#include "compiler/passes/fold_grid.h"
#include "compiler/passes/layout_inference.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/persistent.h"
#include "compiler/passes/split_k.h"
#include "util/status_macros.h"

namespace kiln::codegen {
namespace {

// Client text (the file name a request gives) inside a generated `//`
// comment: printable ASCII only, no backslash (a trailing one would splice
// the next line into the comment), so it can never end the comment early.
std::string CommentText(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 200)) {
    const bool printable = c >= 0x20 && c < 0x7f && c != '\\';
    out += printable ? c : '?';
  }
  return out;
}

} // namespace

const std::vector<std::string>& LoweringPipeline() {
  static const std::vector<std::string>* passes =
      // verify-resources before simplify: its integer-range checks must see
      // the literals as sent, before the simplifier wraps them to their dtype.
      // shared-placement last: it places the shared buffers the emitter
      // declares, barriers included.
      new std::vector<std::string>{"verify",          "verify-resources", "simplify",
                                   "thread-regions",  "layout-inference", "lower-tile-ops",
                                   "simplify-bounds", "shared-placement"};
  return *passes;
}

namespace {

// One kernel's entry point, before it is put into a source with the others.
struct Piece {
  std::string function; // the entry point (and, CPU, its body function)
  bool uses_wgmma = false;
  bool uses_wgmma_rs = false;
  bool uses_wgmma_fp8 = false;
  bool uses_tma = false;
  int64_t local_bytes = 0;
  std::string arch; // CUDA
  LaunchSpec launch;
};

// Emits the one kernel of `lowered` as `symbol`; `index` names the CPU
// body function apart from the other kernels' in one source.
absl::StatusOr<Piece> EmitPiece(const ir::Program& lowered, const passes::Target& target,
                                const std::string& symbol, const std::string& suffix) {
  auto level = lowered.attrs.find("kiln.level");
  if (level == lowered.attrs.end() || level->second != "thread") {
    return absl::FailedPreconditionError("emit: the program is not lowered (run lower-tile-ops)");
  }
  if (target.kind == passes::Target::Kind::kHip) {
    return absl::UnimplementedError("emit: the HIP target is not implemented yet");
  }
  auto gemm = lowered.attrs.find("kiln.gemm");
  if (gemm != lowered.attrs.end() && gemm->second == "wgmma" &&
      target.kind == passes::Target::Kind::kCuda && target.sm_version != 90) {
    return absl::FailedPreconditionError(absl::StrCat(
        "emit: the program was lowered for wgmma (Hopper, sm_90), not for ", target.arch));
  }
  ASSIGN_OR_RETURN(EmittedBody body, EmitBody(lowered));
  const int64_t limit =
      target.kind == passes::Target::Kind::kCuda ? target.shared_bytes_optin : int64_t{1} << 30;
  if (body.smem_bytes > limit) {
    return ir::ErrorAt(lowered.source_name, lowered.kernel.loc,
                       absl::StrCat("the kernel needs ", body.smem_bytes,
                                    " bytes of shared memory after lowering (pipeline stages and "
                                    "reduction scratch included); ",
                                    target.arch, " allows ", limit));
  }

  Piece out;
  LaunchSpec& launch = out.launch;
  launch.symbol = symbol;
  // Launchers see the user's names (kernel_spec.h): the arguments' and,
  // inside extents, the symbols' and scalar parameters'.
  for (size_t d = 0; d < 3; ++d) {
    launch.grid.push_back(d < lowered.kernel.grid.size()
                              ? ir::WithUserNames(lowered.kernel.grid[d], lowered)
                              : ir::IntImm(1));
    launch.block[d] = d < lowered.kernel.threads.size() ? lowered.kernel.threads[d] : 1;
  }
  launch.dynamic_smem_bytes = body.smem_bytes;
  if (auto m = lowered.attrs.find(passes::kMinDynamicSmemAttr); m != lowered.attrs.end()) {
    launch.dynamic_smem_bytes =
        std::max<int64_t>(launch.dynamic_smem_bytes, std::atoll(m->second.c_str()));
  }
  for (const ir::Param& p : lowered.params) {
    if (p.is_workspace) {
      WorkspaceSpec w;
      w.name = p.buffer.name;
      w.dtype = p.buffer.dtype;
      for (const ir::Expr& e : p.buffer.shape) w.shape.push_back(ir::WithUserNames(e, lowered));
      launch.workspaces.push_back(std::move(w));
      continue;
    }
    KernelArg a;
    a.name = ir::UserName(p);
    a.ir_name = p.buffer.name;
    a.dtype = p.buffer.dtype;
    a.is_scalar = p.is_scalar;
    a.is_output = p.is_output;
    for (const ir::Expr& e : p.buffer.shape) a.shape.push_back(ir::WithUserNames(e, lowered));
    launch.args.push_back(std::move(a));
  }
  for (const ir::Symbol& s : lowered.symbols) {
    KernelArg a;
    a.name = ir::UserName(s);
    a.ir_name = s.name;
    a.dtype = s.dtype;
    a.is_scalar = true;
    a.is_symbol = true;
    launch.args.push_back(std::move(a));
  }
  const int64_t threads = launch.block[0] * launch.block[1] * launch.block[2];
  if (target.kind == passes::Target::Kind::kCuda) {
    for (size_t k = 0; k < body.tma_maps.size(); ++k) {
      TensorMapSpec m;
      // Workspaces follow the symbols among the arguments (kernel_spec.h);
      // SplitKernels puts them last among the parameters.
      const auto param = static_cast<size_t>(body.tma_map_args[k]);
      m.arg = body.tma_map_args[k] +
              (lowered.params[param].is_workspace ? static_cast<int>(lowered.symbols.size()) : 0);
      m.box = body.tma_maps[k].box;
      m.swizzle_bytes = body.tma_maps[k].swizzle_bytes;
      launch.tensor_maps.push_back(std::move(m));
    }
  }
  out.uses_wgmma = body.uses_wgmma;
  out.uses_wgmma_rs = body.uses_wgmma_rs;
  out.uses_wgmma_fp8 = body.uses_wgmma_fp8;
  out.local_bytes = body.local_bytes;
  out.uses_tma = body.uses_tma;
  if (target.kind == passes::Target::Kind::kCuda) {
    auto blocks = lowered.attrs.find(passes::kMinBlocksAttr);
    const std::string min_blocks =
        blocks == lowered.attrs.end() ? "" : absl::StrCat(", ", blocks->second);
    // wgmma and setmaxnreg exist only in the arch-specific sm_90a; a cubin
    // for it runs on exactly the devices an sm_90 one does (H100/H200).
    out.arch =
        target.arch == "sm_90" && (body.uses_wgmma || body.uses_tma) ? "sm_90a" : target.arch;
    // A compile-time cluster shape: the launch stays an ordinary one (its
    // grid's x extent a multiple of 2, which the lowering checked).
    const std::string cluster =
        lowered.attrs.count(passes::kClusterDimsAttr)
            ? absl::StrCat("__cluster_dims__(", lowered.attrs.at(passes::kClusterDimsAttr),
                           ", 1, 1) ")
            : "";
    out.function = absl::StrCat("extern \"C\" __global__ void ", cluster, "__launch_bounds__(",
                                threads, min_blocks, ") ", launch.symbol, "(", body.params,
                                body.tma_params, ") {\n", body.body, "}\n");
    return out;
  }
  const std::string body_fn = absl::StrCat("kiln_body", suffix);
  out.function = absl::StrCat(
      "namespace {\n\nvoid ", body_fn, "(", body.params, ") {\n", body.tma_locals, body.body,
      "}\n\n} // namespace\n\n", "extern \"C\" int ", launch.symbol,
      "(void** kiln_args, const int64_t* kiln_grid, char* kiln_error, int kiln_error_len) {\n",
      body.unpack_args, "  return kiln::rt::launch_grid(kiln_grid[0], kiln_grid[1], kiln_grid[2], ",
      launch.block[0], ", ", launch.block[1], ", ", launch.block[2], ", ", body.smem_bytes,
      ", [&]() { ", body_fn, "(", body.param_names, "); }, kiln_error, kiln_error_len);\n}\n");
  return out;
}

// TileLang's pass configs: tl.enable_fast_math asks for fast math,
// tl.disable_fast_math (which wins) forbids it.
bool AsksFastMath(const ir::Program& program) {
  auto set = [&](const char* key) {
    auto it = program.attrs.find(key);
    return it != program.attrs.end() && (it->second == "true" || it->second == "1");
  };
  return set("tl.enable_fast_math") && !set("tl.disable_fast_math");
}

// The wgmma descriptors of a kernel whose thread holds at most this many
// bytes of local arrays (fragments) may be computed once and kept in
// registers (KILN_WGMMA_PIN_DESC_BASE 0); above it each is computed where its
// wgmma issues. The MHA forward (128x128 tiles, 2 consumer warpgroups: 708
// bytes) ran 5 % faster with them kept (H200, docs/benchmarks.md); FlashMLA
// (about 1.7 KB over both warpgroups' branches) spilled 616 bytes with them
// and 4 without. The line: 192 of a consumer's 240 registers.
constexpr int64_t kHoistDescriptorsLocalBytes = 768;

// One source and launch spec for the kernels of one program, in order.
EmittedKernel Assemble(const ir::Program& program, const passes::Target& target,
                       std::vector<Piece> pieces) {
  EmittedKernel out;
  bool wgmma = false, wgmma_rs = false, wgmma_fp8 = false, tma = false;
  int64_t local_bytes = 0;
  for (const Piece& p : pieces) {
    local_bytes = std::max(local_bytes, p.local_bytes);
    wgmma = wgmma || p.uses_wgmma;
    wgmma_rs = wgmma_rs || p.uses_wgmma_rs;
    wgmma_fp8 = wgmma_fp8 || p.uses_wgmma_fp8;
    tma = tma || p.uses_tma;
    // One binary: an sm_90a kernel makes the whole module sm_90a.
    if (out.arch.empty() || p.arch == "sm_90a") out.arch = p.arch;
  }
  const std::string header =
      absl::StrCat("// Generated by Kiln from tile program '", CommentText(program.name), "' (",
                   CommentText(program.source_name), "). Do not edit.\n");
  std::string functions;
  for (size_t i = 0; i < pieces.size(); ++i) {
    absl::StrAppend(&functions, i > 0 ? "\n" : "", pieces[i].function);
  }
  out.launch = std::move(pieces[0].launch);
  for (size_t i = 1; i < pieces.size(); ++i) {
    const LaunchSpec& l = pieces[i].launch;
    out.launch.next_kernels.push_back(
        KernelLaunch{l.symbol, l.grid, l.block, l.dynamic_smem_bytes, l.tensor_maps});
  }
  if (target.kind == passes::Target::Kind::kCuda) {
    out.target = EmitTarget::kCuda;
    out.fast_math = AsksFastMath(program);
    // wgmma.h is most of the runtime's text: only kernels that use it pay
    // NVRTC's parse of it, and of its register and fp8 forms likewise.
    // Where the fragments leave room, the compiler may keep loop-invariant
    // wgmma descriptors in registers (kiln/cuda/wgmma.h).
    const bool hoist = wgmma && local_bytes <= kHoistDescriptorsLocalBytes;
    out.source = absl::StrCat(header, hoist ? "#define KILN_WGMMA_PIN_DESC_BASE 0\n" : "",
                              "#include \"kiln/cuda/runtime.h\"\n",
                              wgmma ? "#include \"kiln/cuda/wgmma.h\"\n" : "",
                              wgmma_rs ? "#include \"kiln/cuda/wgmma_rs.h\"\n" : "",
                              wgmma_fp8 ? "#include \"kiln/cuda/wgmma_fp8.h\"\n" : "",
                              tma ? "#include \"kiln/cuda/tma.h\"\n" : "", "\n", functions);
    return out;
  }
  out.target = EmitTarget::kCpu;
  out.arch.clear();
  out.source = absl::StrCat(header, "#include \"kiln/cpu/runtime.h\"\n\n", functions);
  return out;
}

// The lowered kernels of `program` (SplitKernels' order) as one source: a
// lone kernel without workspaces keeps the entry point kiln_kernel, the
// kernels of a sequence are kiln_kernel_0, kiln_kernel_1, ...
absl::StatusOr<EmittedKernel> EmitKernels(const ir::Program& program,
                                          const std::vector<ir::Program>& kernels,
                                          const passes::Target& target) {
  const bool one = kernels.size() == 1 && program.workspaces.empty();
  std::vector<Piece> pieces;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const std::string suffix = one ? "" : absl::StrCat("_", i);
    ASSIGN_OR_RETURN(Piece piece,
                     EmitPiece(kernels[i], target, absl::StrCat("kiln_kernel", suffix), suffix));
    pieces.push_back(std::move(piece));
  }
  return Assemble(program, target, std::move(pieces));
}

} // namespace

absl::StatusOr<EmittedKernel> LowerAndEmit(const ir::Program& program, std::string_view target,
                                           const LoweringOptions& options) {
  ASSIGN_OR_RETURN(passes::Target t, passes::ParseTarget(target));
  const std::string& lower_for = options.lower_for;
  if (!lower_for.empty() && lower_for != target) {
    ASSIGN_OR_RETURN(passes::Target lf, passes::ParseTarget(lower_for));
    if (t.kind != passes::Target::Kind::kCpu || lf.kind != passes::Target::Kind::kCuda) {
      return absl::InvalidArgumentError(
          absl::StrCat("lower-for '", lower_for, "' with target '", std::string(target),
                       "': only the CPU target runs another target's (CUDA) thread program"));
    }
  }
  passes::PassContext ctx;
  ctx.target = std::string(target);
  if (lower_for != target) ctx.lower_for = lower_for;
  ctx.gemm_wgmma = options.gemm_wgmma;
  ctx.tma_ws_pipeline = options.tma_ws_pipeline;
  ctx.ws_blocks = options.ws_blocks;
  ctx.ws_overlap = options.ws_overlap;
  ctx.cluster = options.cluster;
  ctx.epilogue = options.epilogue;
  ir::Program split = program;
  RETURN_IF_ERROR(ApplySplitK(split, target, options));
  bool persistent = false;
  RETURN_IF_ERROR(ApplyPersistent(split, target, options, &persistent));
  if (persistent) ctx.ws_blocks = 1; // the grid is one block per SM
  RETURN_IF_ERROR(passes::FoldGrid(split, options.cluster));
  // Each kernel is lowered as a program of its own (ir_util.h: SplitKernels).
  std::vector<ir::Program> kernels = ir::SplitKernels(split);
  for (ir::Program& k : kernels) RETURN_IF_ERROR(passes::RunPasses(k, LoweringPipeline(), ctx));
  if (options.cluster > 1 && std::none_of(kernels.begin(), kernels.end(), [](const ir::Program& k) {
        return k.attrs.count(passes::kClusterDimsAttr) > 0;
      })) {
    // A kernel beside the main one (split-K's reduction) runs unpaired.
    return ir::ErrorAt(split.source_name, split.kernel.loc,
                       absl::StrCat("cluster=", options.cluster,
                                    " pairs the blocks of a warp-specialized GEMM main loop (one "
                                    "T.Pipelined loop at the top of the kernel, one gemm fed by "
                                    "whole-tile TMA copies) on a grid whose x extent is even; no "
                                    "kernel of this program has one (nor are persistent tiles "
                                    "paired; compile it without cluster=",
                                    options.cluster, ")"));
  }
  return EmitKernels(split, kernels, t);
}

absl::Status ApplySplitK(ir::Program& program, std::string_view target,
                         const LoweringOptions& options) {
  if (options.split_k > 1) {
    return passes::SplitK(program, options.split_k, options.split_k_reduce);
  }
  const std::string_view thread_target = options.lower_for.empty() ? target : options.lower_for;
  if (options.split_k == 0 && options.gemm_wgmma && options.tma_ws_pipeline &&
      passes::TargetUsesWgmma(thread_target)) {
    passes::AutoSplitK(program, passes::kHopperSms, options.split_k_reduce);
  }
  return absl::OkStatus();
}

bool ParsePersistent(std::string_view value, LoweringOptions* options) {
  using P = LoweringOptions::Persistent;
  int blocks = 0;
  if (value == "on" || value == "off" || value == "auto") {
    options->persistent = value == "on" ? P::kOn : value == "off" ? P::kOff : P::kAuto;
  } else if (absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &blocks) &&
             blocks >= 1 && blocks <= passes::kMaxPersistentBlocks) {
    options->persistent = P::kOn;
  } else {
    return false;
  }
  options->persistent_blocks = blocks;
  return true;
}

absl::Status ApplyPersistent(ir::Program& program, std::string_view target,
                             const LoweringOptions& options, bool* applied) {
  *applied = false;
  using P = LoweringOptions::Persistent;
  if (options.persistent == P::kOff) return absl::OkStatus();
  const std::string_view thread_target = options.lower_for.empty() ? target : options.lower_for;
  const bool hopper =
      options.gemm_wgmma && options.tma_ws_pipeline && passes::TargetUsesWgmma(thread_target);
  const int64_t blocks =
      options.persistent_blocks > 0 ? options.persistent_blocks : passes::kHopperSms;
  if (options.persistent == P::kAuto) {
    *applied = hopper && passes::AutoPersistent(program, blocks);
    return absl::OkStatus();
  }
  if (!hopper) {
    return absl::InvalidArgumentError(
        absl::StrCat("persistent=on needs Hopper's TMA + wgmma path (target cuda:sm_90 or "
                     "sm_90a, without gemm=mma or pipeline=cp.async); the target is '",
                     std::string(thread_target), "'"));
  }
  RETURN_IF_ERROR(passes::MakePersistent(program, blocks));
  *applied = true;
  return absl::OkStatus();
}

absl::StatusOr<EmittedKernel> EmitLowered(const ir::Program& lowered,
                                          const passes::Target& target) {
  return EmitKernels(lowered, ir::SplitKernels(lowered), target);
}

} // namespace kiln::codegen
