// Tile-op lowering: turns a tile program whose layouts are known (pass
// layout-inference) into the thread IR that both emitters print: per-thread
// register arrays, flat shared buffers, loops over a thread's registers,
// barriers, and calls of the runtime's thread-level intrinsics
// (compiler/ir/intrinsics.h). Pipelined loops are multi-buffered here too
// (see pipeline.h).
//
// Thread-safe (pure function of its arguments).
#pragma once

#include "absl/status/status.h"
#include "compiler/ir/ir.h"
#include "compiler/passes/target.h"

namespace kiln::passes {

// Lowers `program` in place. Requires layout-inference to have run. Errors
// are located diagnostics: tile ops or fragment accesses this lowering does
// not support (with what would be needed), gemm shapes or dtypes without an
// MMA instruction, non-constant tile shapes.
absl::Status LowerTileOps(ir::Program& program, const Target& target);

} // namespace kiln::passes
