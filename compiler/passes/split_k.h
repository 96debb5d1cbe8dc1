// Split-K: a GEMM tile program whose blocks each run the whole K loop
// becomes one whose output tiles are shared by `splits` blocks each, so that
// a shape with few output tiles (decode: M = 16, a few dozen tiles of N)
// still puts enough blocks on the GPU to stream the weights at full
// bandwidth.
//
// The kernel gets a third grid dimension of `splits` blocks; block z runs
// its own contiguous part of the K loop and copies its float32 partial sums
// into the workspace kiln_splitk_partials[splits, M, N] (where the program
// copied the accumulator into its output). Every element of the output is
// then the sum of its `splits` partials, in order (so results do not depend
// on timing), cast to the output's dtype, by one of two reductions
// (SplitKReduce):
//
//   kFused (split-k-reduce=fused; not the default until measured on a GPU,
//     docs/design/codegen.md "Split-K"): in the same kernel. After its copy
//     each block takes a ticket for its tile (splitk_ticket: every thread's
//     writes fenced, one atomic add on the tile's counter in the int32
//     workspace kiln_splitk_tickets[tiles]); the block that arrives last
//     sums the tile's partials into its accumulator and stores it with the
//     program's copy, and sets the counter back to 0, so a workspace
//     zero-filled once serves every later launch. One launch: at decode
//     shapes the second kernel's launch and tail are a sizable part of the
//     whole.
//   kKernel (the default): a second kernel of 4 x 128 outputs a block does
//     the sums.
//
// What it applies to (anything else is a located error naming what is in
// the way): one kernel of at most two grid dimensions whose body, besides
// allocations, fills, layout annotations and use_swizzle, is one K loop
// (T.Pipelined or serial) with a constant trip count that `splits` divides,
// whose body writes no global memory and accumulates gemms into a fragment
// that is zero-filled before the loop, followed by one copy of that whole
// fragment into a 2-d global output, which nothing else writes. A program
// already split is refused.
//
// Pass option split-k=N (N in 2..kMaxSplits; 1: off; auto, the default:
// AutoSplitK below on Hopper's TMA + wgmma path, off elsewhere), kiln-opt /
// kiln-run --split-k; applied by LowerAndEmit before the lowering pipeline.
// Thread-safe (a pure function of its arguments).
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "compiler/ir/ir.h"

namespace kiln::passes {

inline constexpr int kMaxSplits = 64;

// Where the partials are summed (above). Pass option
// split-k-reduce=fused|kernel, kiln-opt / kiln-run --split-k-reduce.
enum class SplitKReduce : uint8_t { kFused, kKernel };
// What a build that does not name one gets.
inline constexpr SplitKReduce kDefaultSplitKReduce = SplitKReduce::kKernel;

// "fused" / "kernel"; false for anything else.
bool ParseSplitKReduce(std::string_view text, SplitKReduce* out);
const char* SplitKReduceName(SplitKReduce r);

// Rewrites `program` as described above; `splits` in 2..kMaxSplits. The
// fused reduction needs constant tile extents in the copy out; a program
// without them gets the reduce kernel.
absl::Status SplitK(ir::Program& program, int splits, SplitKReduce reduce = kDefaultSplitKReduce);

// The SMs Kiln assumes for an sm_90 target (H100 SXM and H200: 132). A
// compile names an architecture, not a device.
inline constexpr int64_t kHopperSms = 132;

// The parts split-k=auto takes for a grid of `blocks` blocks whose K loop
// runs `trips` times on `sms` SMs: 1 (no split) for a grid of more than a
// quarter of the SMs, else the most of 16, 8, 4 and 2 that keeps blocks x
// parts within one block per SM, divides `trips` and leaves every part at
// least 8 trips (the pipeline's fill stays small), 1 when none does.
// Measured on an H100 (docs/benchmarks.md, Hopper GEMM run 5): at 16 x 4096
// x 4096, 64x128x64 (32 blocks) ran 24 -> 37 TFLOP/s split 4 and 128x256x64
// (16 blocks) 12 -> 33 split 8; at 128 x 14336 x 4096, 128x256x64 (56
// blocks) ran 284 -> 215 split 2: a grid of 56 already streams the weights
// near the DRAM rate, and the partials only add traffic.
int AutoSplitParts(int64_t blocks, int64_t trips, int64_t sms);

// Splits `program` as split-k=auto does, in place, and returns the parts:
// AutoSplitParts of its grid (constant extents) and K loop, or 1 (the
// program left as it was) where either is not a constant or SplitK refuses
// the program (auto never turns a program into an error).
int AutoSplitK(ir::Program& program, int64_t sms = kHopperSms,
               SplitKReduce reduce = kDefaultSplitKReduce);

// Whether SplitK takes `program` in some number of parts (its structure:
// one loop of gemms, nothing written before or inside it, one copy out),
// whatever the parts: the roller's model predicts auto's split only for such
// programs.
bool SplitKCanTake(const ir::Program& program);

} // namespace kiln::passes
