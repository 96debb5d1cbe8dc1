// Kiln CPU runtime: the IR's integer and floor operations with Python's
// semantics (floordiv/floormod round toward -inf; the remainder takes the
// divisor's sign). Generated code prints
// BinOp::kFloorDiv and kFloorMod as these. The other runtime
// defines the same functions with the same results.
#ifndef KILN_CPU_INDEX_MATH_H_
#define KILN_CPU_INDEX_MATH_H_

#include <cmath>

#include "kiln/cpu/types.h"

namespace kiln {
namespace rt {

template <typename T>
inline T floordiv(T a, T b) {
  const T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T>
inline T floormod(T a, T b) {
  const T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
inline float floordiv(float a, float b) { return std::floor(a / b); }
inline double floordiv(double a, double b) { return std::floor(a / b); }
inline float floormod(float a, float b) { return a - std::floor(a / b) * b; }
inline double floormod(double a, double b) { return a - std::floor(a / b) * b; }

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_INDEX_MATH_H_
