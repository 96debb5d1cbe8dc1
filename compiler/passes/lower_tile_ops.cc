// Pass "lower-tile-ops": tile IR with layouts -> thread IR. The algorithm
// lives in lowering.h and the lower_*.cc / pipeline.cc files.
#include "compiler/passes/lower_tile_ops.h"

#include <utility>

#include "compiler/passes/lowering.h"
#include "compiler/passes/pass_registry.h"
#include "util/status_macros.h"

namespace kiln::passes {

absl::Status LowerTileOps(ir::Program& program, const Target& target) {
  if (program.attrs.count("kiln.level")) {
    return absl::FailedPreconditionError("lower-tile-ops: the program is already lowered");
  }
  ASSIGN_OR_RETURN(LayoutMap layouts, ReadLayouts(program));
  lowering::Lowering lowering(program, target, std::move(layouts));
  return lowering.Run();
}

void RegisterLowerTileOpsPass() {
  RegisterPass({"lower-tile-ops",
                "lowers tile ops to per-thread code: register loops, flat shared buffers, "
                "barriers, ldmatrix/mma/cp.async/shuffle intrinsics, multi-stage pipelines",
                [](ir::Program& program, const PassContext& ctx) -> absl::Status {
                  ASSIGN_OR_RETURN(Target target, ParseTarget(ctx.target));
                  return LowerTileOps(program, target);
                }});
}

} // namespace kiln::passes
