// Grids taller than CUDA allows: a kernel may have at most 65535 blocks
// along y and z, but TileLang programs put the long dimension wherever they
// like (`T.Kernel(ceildiv(F, bn), ceildiv(N * OH * OW, bm))`). FoldGrid
// launches such a kernel on a grid whose x dimension holds the oversized
// dimensions too and recovers the program's block indices from it:
//
//   grid (gx, gy, gz), gy > 65535   ->  grid (gx * gy, 1, gz)
//       bx = b % gx,  by = b / gx            (b: the new x block index)
//   gz > 65535 (and gy fits)        ->  grid (gx * gz, gy, 1)
//       bx = b % gx,  bz = b / gx
//   both                            ->  grid (gx * gy * gz, 1, 1), which
//                                           passes x's limit, so is refused
//
// The blocks are the same set, so results do not change; the order in which
// the hardware starts them does (x first). Applies to constant extents only
// (a symbolic one is checked when the kernel is launched). Refused, with a
// located error, where the folded x extent passes 2**31 - 1, where the
// kernel rasterizes its blocks itself (T.use_swizzle reads the grid's shape)
// or pairs them in clusters. Every kernel of the program is folded on its
// own. Applied by LowerAndEmit before the lowering pipeline, after split-K
// and persistent tiles. Thread-safe (a pure function of its arguments).
#pragma once

#include "absl/status/status.h"
#include "compiler/ir/ir.h"

namespace kiln::passes {

// The most blocks CUDA launches along y and z.
inline constexpr int64_t kMaxGridYZ = 65535;
// The most blocks CUDA launches along x.
inline constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;

// Rewrites every kernel of `program` whose constant y or z extent exceeds
// kMaxGridYZ as described above; `cluster` is the pass option's pair size
// (a clustered kernel is refused). OK and unchanged when none does.
absl::Status FoldGrid(ir::Program& program, int cluster);

} // namespace kiln::passes
