// Kiln CUDA runtime: the header generated CUDA C++ includes. Compiles under
// NVRTC with no other headers (sm_80 and newer). Kernels that use Hopper's
// wgmma (sm_90a) also include kiln/cuda/wgmma.h, which is most of the
// runtime's text, so that the others do not pay for parsing it.
#ifndef KILN_CUDA_RUNTIME_H_
#define KILN_CUDA_RUNTIME_H_

#include "kiln/cuda/convert.h"
#include "kiln/cuda/cp_async.h"
#include "kiln/cuda/helpers.h"
#include "kiln/cuda/index_math.h"
#include "kiln/cuda/ldmatrix.h"
#include "kiln/cuda/mma.h"
#include "kiln/cuda/scalar_math.h"
#include "kiln/cuda/thread_ops.h"
#include "kiln/cuda/types.h"
#include "kiln/cuda/warp.h"

#endif // KILN_CUDA_RUNTIME_H_
