// Structural and type verification of a tile IR program: unique names,
// every name defined before use, dtypes of operands, scopes allowed for each
// op's operands, region ranks and matching extents, loop kinds, kernel grid
// and thread counts. Target resource limits (shared memory, threads per
// block) are checked later by a pass that knows the target.
// Thread IR (after lowering) is accepted too: a kCall statement must name an
// intrinsic of intrinsics.h with arguments of the kinds it lists, and a
// kAddress (a buffer in scope, one integer index, the buffer's dtype) may
// appear only as such an argument.
// Errors are located diagnostics naming the program's source file.
// Thread-safe (pure function).
#pragma once

#include "absl/status/status.h"
#include "compiler/ir/ir.h"

namespace kiln::ir {

absl::Status Verify(const Program& program);

} // namespace kiln::ir
