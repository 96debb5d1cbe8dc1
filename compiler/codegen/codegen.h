// Code generation: from a specialized tile program to CUDA C++ (for NVRTC
// or nvcc) or host C++ (for the CPU target), with launch metadata
// (kernel_spec.h).
//
// Both targets print the same thread IR (after layout-inference and
// lower-tile-ops) through one emitter; only the entry point differs: a
// __global__ function for CUDA, and for the CPU a launcher that runs every
// thread of a block as a fiber with the runtime's emulated intrinsics
// (compiler/runtime/cpu). Generated code includes only Kiln's runtime
// headers, and every name in it comes from the validated IR or from the
// closed intrinsic table, never from raw client text.
//
// Thread-safe (pure functions).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "compiler/codegen/kernel_spec.h"
#include "compiler/ir/ir.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/split_k.h"
#include "compiler/passes/target.h"

namespace kiln::codegen {

// The passes LowerAndEmit runs, in order.
const std::vector<std::string>& LoweringPipeline();

// How LowerAndEmit lowers (the pass options of compile_driver.h).
struct LoweringOptions {
  // The target whose thread program is built (a target string; empty: the
  // emitted target): "cuda:sm_90a" with target "cpu" runs sm_90a's wgmma
  // program on the CPU emulation. A CUDA target must be the one lowered for.
  std::string lower_for;
  // Lower Hopper (sm_90, sm_90a) gemms to wgmma (PassContext::gemm_wgmma),
  // whose main loops take TMA and a producer warpgroup with
  // `tma_ws_pipeline`; both are the default, false is the older path
  // (mma.sync; cp.async).
  bool gemm_wgmma = true;
  bool tma_ws_pipeline = true;
  // PassContext::ws_blocks (0: the register plan's choice).
  int ws_blocks = 0;
  // PassContext::ws_overlap.
  bool ws_overlap = false;
  // PassContext::cluster.
  int cluster = 1;
  // PassContext::epilogue.
  passes::Epilogue epilogue = passes::Epilogue::kAuto;
  // Split-K (split_k.h) into this many parts before lowering; 1: off; 0
  // (auto, the default): ApplySplitK's choice.
  int split_k = 0;
  // Where a split's partials are summed (split_k.h, SplitKReduce).
  passes::SplitKReduce split_k_reduce = passes::kDefaultSplitKReduce;
  // Persistent tiles (persistent.h) on Hopper's default path: off (the
  // default until measured), on (a program it cannot take is a located
  // error), or auto (passes::AutoPersistent's choice), with a grid of
  // `persistent_blocks` blocks (0: passes::kHopperSms, one per SM; a
  // smaller grid makes the waves of a small problem testable on the CPU).
  enum class Persistent { kOff, kOn, kAuto };
  Persistent persistent = Persistent::kOff;
  int persistent_blocks = 0;
};

// Splits `program` (a tile program) as LowerAndEmit does before lowering:
// into options.split_k parts where it is given (2 or more; 1: not at all;
// a program split-K cannot take is a located error), else (auto) as
// passes::AutoSplitK decides on Hopper's default path (the thread program
// for a cuda:sm_90 or sm_90a target, or lower_for, with wgmma and TMA + warp
// specialization), not elsewhere.
absl::Status ApplySplitK(ir::Program& program, std::string_view target,
                         const LoweringOptions& options);

// Reads a persistent= value ("on", "off", "auto", or a number of blocks in
// 1..passes::kMaxPersistentBlocks) into options->persistent and
// persistent_blocks; false (options unchanged) for anything else.
bool ParsePersistent(std::string_view value, LoweringOptions* options);

// Makes `program` persistent as LowerAndEmit does after ApplySplitK:
// options.persistent on Hopper's default path (as ApplySplitK's auto);
// persistent=on elsewhere is an error. Sets *applied.
absl::Status ApplyPersistent(ir::Program& program, std::string_view target,
                             const LoweringOptions& options, bool* applied);

// Runs LoweringPipeline() on a copy of `program` (split-K first, when asked)
// and emits it for `target` ("cpu", "cuda:sm_80", ...). Errors are located
// diagnostics.
absl::StatusOr<EmittedKernel> LowerAndEmit(const ir::Program& program, std::string_view target,
                                           const LoweringOptions& options = {});

// Emits an already lowered program (attrs "kiln.level" = "thread").
absl::StatusOr<EmittedKernel> EmitLowered(const ir::Program& lowered, const passes::Target& target);

} // namespace kiln::codegen
