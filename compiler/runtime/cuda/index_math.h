// Kiln CUDA runtime: the IR's integer and floor operations with Python's
// semantics (floordiv/floormod round toward -inf; the remainder takes the
// divisor's sign). Generated code prints
// BinOp::kFloorDiv and kFloorMod as these. The other runtime
// defines the same functions with the same results.
#ifndef KILN_CUDA_INDEX_MATH_H_
#define KILN_CUDA_INDEX_MATH_H_

#include "kiln/cuda/types.h"

namespace kiln {
namespace rt {

template <typename T>
__device__ __forceinline__ T floordiv(T a, T b) {
  const T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T>
__device__ __forceinline__ T floormod(T a, T b) {
  const T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
__device__ __forceinline__ float floordiv(float a, float b) { return floorf(a / b); }
__device__ __forceinline__ double floordiv(double a, double b) { return ::floor(a / b); }
__device__ __forceinline__ float floormod(float a, float b) { return a - floorf(a / b) * b; }
__device__ __forceinline__ double floormod(double a, double b) { return a - ::floor(a / b) * b; }

} // namespace rt
} // namespace kiln

#endif // KILN_CUDA_INDEX_MATH_H_
