// Split-K: a GEMM tile program whose blocks each run the whole K loop
// becomes two kernels, so that a shape with few output tiles (decode: M = 16,
// a few dozen tiles of N) still puts enough blocks on the GPU to stream the
// weights at full bandwidth.
//
//   kernel 1: the program's kernel with a third grid dimension of `splits`
//             blocks; block z runs its own contiguous part of the K loop and
//             copies its float32 partial sums into the workspace
//             kiln_splitk_partials[splits, M, N] (where the program copied
//             the accumulator into its output);
//   kernel 2: every element of the output is the sum of its `splits`
//             partials, in order (so results do not depend on timing), cast
//             to the output's dtype.
//
// What it applies to (anything else is a located error naming what is in
// the way): one kernel of at most two grid dimensions whose body, besides
// allocations, fills, layout annotations and use_swizzle, is one K loop
// (T.Pipelined or serial) with a constant trip count that `splits` divides,
// whose body writes no global memory and accumulates gemms into a fragment
// that is zero-filled before the loop, followed by one copy of that whole
// fragment into a 2-d global output, which nothing else writes. A program
// already split (two kernels) is refused.
//
// Pass option split-k=N (N in 2..kMaxSplits; 1: off), kiln-opt / kiln-run
// --split-k; applied by LowerAndEmit before the lowering pipeline.
// Thread-safe (a pure function of its arguments).
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "compiler/ir/ir.h"

namespace kiln::passes {

inline constexpr int kMaxSplits = 64;

// Rewrites `program` as described above; `splits` in 2..kMaxSplits.
absl::Status SplitK(ir::Program& program, int splits);

} // namespace kiln::passes
