// Persistent tiles: a GEMM kernel of more blocks than the GPU has SMs becomes
// a grid of one block per SM, each walking the output tiles wave by wave:
//
//   for j in range(ceildiv(tiles - pb, P)):      # pb: the block, P: the grid
//     tile = pb + j * P
//     (bx, by, bz) = the tile's block indices   # the program's own order, or
//                                               # its T.use_swizzle panels
//     <the kernel body, its allocations hoisted above the loop>
//
// On Hopper's warp-specialized path (warp_specialize.cc) the producer walks
// the same tiles and its mbarrier ring runs on across them, so it loads the
// next tile's operands while the consumers run this tile's epilogue, and a
// block's setup (barrier init, tensor-map prefetch, register reallocation)
// is paid once per SM instead of once per tile.
//
// What it applies to (anything else is a located error naming what is in
// the way): one kernel whose grid extents are constants with more blocks
// than `sms`; exactly one T.Pipelined loop (2 stages or more) at the top of
// its body, holding only copies and one gemm; no explicit Hopper
// synchronization (T.ws regions, T.tma_copy, barriers), whose programs keep
// their own schedule.
//
// Pass option persistent=on|off|auto|N (off by default until measured; N: a
// grid of N blocks), kiln-opt / kiln-run --persistent; applied by LowerAndEmit before the lowering
// pipeline on the TMA + wgmma path, after split-K (a split program has two
// kernels and is left alone). Thread-safe (a pure function of its arguments).
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "compiler/ir/ir.h"

namespace kiln::passes {

// Program attr: the tiles (the original grid's blocks) of a persistent
// kernel; the warp-specialized lowering reads it where it would read the
// grid's size (warp_specialize.cc).
inline constexpr char kPersistentTilesAttr[] = "kiln.persistent_tiles";

// The most blocks a persistent grid may be given (pass option persistent=N).
inline constexpr int kMaxPersistentBlocks = 1 << 16;

// Rewrites `program` as described above for a grid of `sms` blocks (one per
// SM of the GPU; fewer where a test wants several waves of a small problem).
absl::Status MakePersistent(ir::Program& program, int64_t sms);

// persistent=auto: MakePersistent where the kernel qualifies, its shared
// memory keeps a second block off the SM anyway (more than half of it), so
// that one block per SM costs nothing the grid had, and its K loop runs at
// most 64 times (persistent.cc: where the measurements favoured it); returns
// whether it applied (auto never turns a program into an error). Kernels
// that fit two blocks per SM already overlap one block's epilogue with the
// other's main loop.
bool AutoPersistent(ir::Program& program, int64_t sms);

} // namespace kiln::passes
