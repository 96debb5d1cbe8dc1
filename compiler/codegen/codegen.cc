#include "compiler/codegen/codegen.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/cxx_emitter.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/ir_util.h"
#include "compiler/passes/layout_inference.h"
#include "compiler/passes/pass_registry.h"
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
      new std::vector<std::string>{"verify",           "verify-resources", "simplify",
                                   "layout-inference", "lower-tile-ops",   "simplify-bounds",
                                   "shared-placement"};
  return *passes;
}

absl::StatusOr<EmittedKernel> LowerAndEmit(const ir::Program& program, std::string_view target,
                                           std::string_view lower_for, bool gemm_wgmma,
                                           bool tma_ws_pipeline) {
  ASSIGN_OR_RETURN(passes::Target t, passes::ParseTarget(target));
  if (!lower_for.empty() && lower_for != target) {
    ASSIGN_OR_RETURN(passes::Target lf, passes::ParseTarget(lower_for));
    if (t.kind != passes::Target::Kind::kCpu || lf.kind != passes::Target::Kind::kCuda) {
      return absl::InvalidArgumentError(absl::StrCat(
          "lower-for '", std::string(lower_for), "' with target '", std::string(target),
          "': only the CPU target runs another target's (CUDA) thread program"));
    }
  }
  ir::Program lowered = program;
  passes::PassContext ctx;
  ctx.target = std::string(target);
  if (lower_for != target) ctx.lower_for = std::string(lower_for);
  ctx.gemm_wgmma = gemm_wgmma;
  ctx.tma_ws_pipeline = tma_ws_pipeline;
  RETURN_IF_ERROR(passes::RunPasses(lowered, LoweringPipeline(), ctx));
  return EmitLowered(lowered, t);
}

absl::StatusOr<EmittedKernel> EmitLowered(const ir::Program& lowered,
                                          const passes::Target& target) {
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

  EmittedKernel out;
  LaunchSpec& launch = out.launch;
  // Launchers see the user's names (kernel_spec.h): the arguments' and,
  // inside extents, the symbols' and scalar parameters'.
  for (size_t d = 0; d < 3; ++d) {
    launch.grid.push_back(d < lowered.kernel.grid.size()
                              ? ir::WithUserNames(lowered.kernel.grid[d], lowered)
                              : ir::IntImm(1));
    launch.block[d] = d < lowered.kernel.threads.size() ? lowered.kernel.threads[d] : 1;
  }
  launch.dynamic_smem_bytes = body.smem_bytes;
  for (const ir::Param& p : lowered.params) {
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
      m.arg = body.tma_map_args[k];
      m.box = body.tma_maps[k].box;
      m.swizzle_bytes = body.tma_maps[k].swizzle_bytes;
      launch.tensor_maps.push_back(std::move(m));
    }
  }
  const std::string header =
      absl::StrCat("// Generated by Kiln from tile program '", CommentText(lowered.name), "' (",
                   CommentText(lowered.source_name), "). Do not edit.\n");
  if (target.kind == passes::Target::Kind::kCuda) {
    out.target = EmitTarget::kCuda;
    auto blocks = lowered.attrs.find(passes::kMinBlocksAttr);
    const std::string min_blocks =
        blocks == lowered.attrs.end() ? "" : absl::StrCat(", ", blocks->second);
    // wgmma and setmaxnreg exist only in the arch-specific sm_90a; a cubin
    // for it runs on exactly the devices an sm_90 one does (H100/H200).
    out.arch =
        target.arch == "sm_90" && (body.uses_wgmma || body.uses_tma) ? "sm_90a" : target.arch;
    // wgmma.h is most of the runtime's text: only kernels that use it pay
    // NVRTC's parse of it.
    out.source =
        absl::StrCat(header, "#include \"kiln/cuda/runtime.h\"\n",
                     body.uses_wgmma ? "#include \"kiln/cuda/wgmma.h\"\n" : "",
                     body.uses_tma ? "#include \"kiln/cuda/tma.h\"\n" : "", "\n",
                     "extern \"C\" __global__ void __launch_bounds__(", threads, min_blocks, ") ",
                     launch.symbol, "(", body.params, body.tma_params, ") {\n", body.body, "}\n");
    return out;
  }
  out.target = EmitTarget::kCpu;
  out.source = absl::StrCat(
      header, "#include \"kiln/cpu/runtime.h\"\n\nnamespace {\n\nvoid kiln_body(", body.params,
      ") {\n", body.tma_locals, body.body, "}\n\n} // namespace\n\n", "extern \"C\" int ",
      launch.symbol,
      "(void** kiln_args, const int64_t* kiln_grid, char* kiln_error, int kiln_error_len) {\n",
      body.unpack_args, "  return kiln::rt::launch_grid(kiln_grid[0], kiln_grid[1], kiln_grid[2], ",
      launch.block[0], ", ", launch.block[1], ", ", launch.block[2], ", ", body.smem_bytes,
      ", [&]() { kiln_body(", body.param_names, "); }, kiln_error, kiln_error_len);\n}\n");
  return out;
}

} // namespace kiln::codegen
