// Kiln CPU runtime: the one header generated host C++ includes. It emulates
// the warp-collective intrinsics of the thread-level program with the
// semantics the PTX ISA gives them (see each header). Plain C++17.
#ifndef KILN_CPU_RUNTIME_H_
#define KILN_CPU_RUNTIME_H_

#include "kiln/cpu/cp_async.h"
#include "kiln/cpu/helpers.h"
#include "kiln/cpu/ldmatrix.h"
#include "kiln/cpu/mma.h"
#include "kiln/cpu/types.h"
#include "kiln/cpu/warp.h"

#endif // KILN_CPU_RUNTIME_H_
