// The canonical form of a program, the thing that is hashed into cache keys:
// every name renamed by order of definition (symbols s0.., params p0..,
// block vars b0.., buffers t0.., loop vars i0..), locations, program name and
// source name cleared, expressions simplified. Two programs that differ only
// in internal names, comments or formatting have the same canonical form.
// The user names of symbols and parameters (ir.h) are kept, every one
// spelled out in user_name: they are the kernel's interface, which the
// launch metadata of a compiled artifact carries, so a program whose
// parameter is renamed gets its own artifact (and its own names back). Thread IR
// is canonicalized too: an address's buffer is renamed like a load's, and a
// call keeps its intrinsic name.
// Thread-safe (pure function).
#pragma once

#include "compiler/ir/ir.h"

namespace kiln::ir {

Program Canonicalize(const Program& program);

} // namespace kiln::ir
