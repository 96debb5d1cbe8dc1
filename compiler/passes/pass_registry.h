// Named IR-to-IR passes. Each pass lives in its own file and registers
// itself under one name, used everywhere: `--passes=NAME` on kiln-opt, the
// file compiler/passes/NAME_WITH_UNDERSCORES.cc and golden tests in
// tests/golden/passes/NAME.kir.
// Thread-safe: registration happens once under a std::call_once.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "compiler/ir/ir.h"

namespace kiln::passes {

struct PassContext {
  std::string target = "cpu"; // "cuda:sm_90", "hip:gfx942", "cpu"
  // The target whose thread program layout-inference and lower-tile-ops
  // build, when it differs from the one emitted: "cuda:sm_90a" with target
  // "cpu" runs the sm_90a (wgmma) program on the CPU emulation. Empty: target.
  std::string lower_for;
  // Lower Hopper (cuda:sm_90, cuda:sm_90a) gemms to wgmma where their
  // operands allow (the default; pass option gemm=mma, kiln-opt / kiln-run
  // --gemm=mma, turns it off: the mma.sync program of Ampere).
  bool gemm_wgmma = true;
  // With wgmma: feed the GEMM main loop with TMA + mbarriers + a producer
  // warpgroup where the loop allows (the default; pass option
  // pipeline=cp.async, --pipeline=cp.async: the cp.async pipeline).
  bool tma_ws_pipeline = true;
  // Warp-specialized main loops: the blocks per SM to plan registers for (1
  // or 2; where shared memory or the wgmma instruction's registers do not
  // allow 2, 1). 0: warp_specialize.cc's plan (PlanRegisters). Pass option
  // ws-blocks=1|2|auto, kiln-opt / kiln-run --ws-blocks; a tuning knob.
  int ws_blocks = 0;
  // Warp-specialized loops with two gemms (attention): the next tile's first
  // gemm and this tile's second in flight while the softmax between them
  // runs (FlashAttention-3's intra-warpgroup overlap, warp_specialize.cc).
  // Pass option ws-overlap=on|off (off by default until measured), kiln-opt /
  // kiln-run --ws-overlap.
  bool ws_overlap = false;
  // Warp-specialized GEMM main loops on a CUDA target: thread-block clusters
  // of this many blocks (1: none; 2: pairs along grid x whose producers
  // multicast the operand tiles the two blocks share, warp_specialize.cc).
  // Pass option cluster=1|2 (1 by default until measured), kiln-opt /
  // kiln-run --cluster; a tuning knob.
  int cluster = 1;
  // Warp-specialized GEMMs: how the epilogue copies the accumulator to
  // global memory (Epilogue, below). Pass option epilogue=auto|tma|direct,
  // kiln-opt / kiln-run --epilogue; a tuning knob (0 direct, 1 tma).
  enum class Epilogue { kAuto, kTma, kDirect };
  Epilogue epilogue = Epilogue::kAuto;
};

// The epilogues of PassContext::epilogue: kTma goes through a swizzled shared
// tile and TMA stores (warp_specialize.cc, LowerTmaStoreEpilogue) wherever
// shared memory has room for the tile beside the stages; kDirect keeps each
// thread's own stores; kAuto (the default) takes the TMA stores where the
// tile also leaves the blocks per SM that shared memory allows unchanged.
using Epilogue = PassContext::Epilogue;
// "auto", "tma" or "direct"; nullopt for anything else.
std::optional<Epilogue> ParseEpilogue(std::string_view text);
std::string_view EpilogueName(Epilogue e);

using PassFn = std::function<absl::Status(ir::Program& program, const PassContext& ctx)>;

struct PassInfo {
  std::string name;
  std::string summary;
  PassFn run;
};

// Adds a pass to the registry (replacing one of the same name). The built-in
// passes are registered by RegisterBuiltinPasses() (builtin_passes.cc), which
// AllPasses() and RunPasses() call once; static registrars are avoided
// because a static library drops object files nothing refers to.
void RegisterPass(PassInfo info);
void RegisterBuiltinPasses();

// Registered passes sorted by name.
std::vector<const PassInfo*> AllPasses();

// Runs the named passes in order. Unknown names are an InvalidArgument error
// listing the known ones; a failing pass stops the pipeline.
absl::Status RunPasses(ir::Program& program, const std::vector<std::string>& names,
                       const PassContext& ctx = {});

} // namespace kiln::passes
