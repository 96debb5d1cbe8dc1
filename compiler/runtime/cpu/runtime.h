// Kiln CPU runtime: the one header generated host C++ includes. It emulates
// the warp-collective intrinsics of the thread-level program with the
// semantics the PTX ISA gives them (see each header), and runs a grid with
// one fiber per GPU thread (fiber.h, thread_ops.h). Plain C++17.
#ifndef KILN_CPU_RUNTIME_H_
#define KILN_CPU_RUNTIME_H_

// kiln/cpu/helpers.h comes through thread_ops.h only (see there why).
#include "kiln/cpu/convert.h"
#include "kiln/cpu/cp_async.h"
#include "kiln/cpu/fiber.h"
#include "kiln/cpu/index_math.h"
#include "kiln/cpu/ldmatrix.h"
#include "kiln/cpu/mma.h"
#include "kiln/cpu/scalar_math.h"
#include "kiln/cpu/thread_ops.h"
#include "kiln/cpu/tma.h"
#include "kiln/cpu/types.h"
#include "kiln/cpu/warp.h"
#include "kiln/cpu/wgmma.h"

#endif // KILN_CPU_RUNTIME_H_
