// Structural and type verification of a tile IR program: unique names,
// every name defined before use, dtypes of operands, scopes allowed for each
// op's operands, region ranks and matching extents, loop kinds, kernel grid
// and thread counts. Target resource limits (shared memory, threads per
// block) are checked later by a pass that knows the target.
// Errors are located diagnostics naming the program's source file.
// Thread-safe (pure function).
#pragma once

#include "absl/status/status.h"
#include "compiler/ir/ir.h"

namespace kiln::ir {

absl::Status Verify(const Program& program);

} // namespace kiln::ir
