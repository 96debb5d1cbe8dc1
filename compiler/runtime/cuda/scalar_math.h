// Kiln CUDA runtime: the math functions of the thread-level program, as
// kiln::rt overloads for float and double on CUDA's math library (expf,
// exp2f, ...; NVRTC declares them, no include needed), with the names and
// semantics of the CPU twin (kiln/cpu/scalar_math.h): round() is rint (half
// to even), min/max of floats are fminf/fmaxf, sigmoid(x) = 1 / (1 + exp(-x)),
// and min, max and abs also take 32- and 64-bit integers. Results are those
// of CUDA's library (rsqrtf, expf, tanhf, ... are within a few ulp, not
// correctly rounded), so compare them with the CPU's with a tolerance.
#ifndef KILN_CUDA_SCALAR_MATH_H_
#define KILN_CUDA_SCALAR_MATH_H_

#include "kiln/cuda/types.h"

namespace kiln {
namespace rt {

// T.reinterpret: the bits of x as a To of the same size.
template <class To, class From>
KILN_DEVICE To bit_cast(From x) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
  To y;
  memcpy(&y, &x, sizeof(To));
  return y;
}

#define KILN_RT_UNARY(NAME, FN_F, FN_D)                                                            \
  KILN_DEVICE float NAME(float x) { return ::FN_F(x); }                                            \
  KILN_DEVICE double NAME(double x) { return ::FN_D(x); }
KILN_RT_UNARY(exp, expf, exp)
KILN_RT_UNARY(exp2, exp2f, exp2)
KILN_RT_UNARY(log, logf, log)
KILN_RT_UNARY(log2, log2f, log2)
KILN_RT_UNARY(sqrt, sqrtf, sqrt)
KILN_RT_UNARY(rsqrt, rsqrtf, rsqrt)
KILN_RT_UNARY(abs, fabsf, fabs)
KILN_RT_UNARY(tanh, tanhf, tanh)
KILN_RT_UNARY(floor, floorf, floor)
KILN_RT_UNARY(ceil, ceilf, ceil)
KILN_RT_UNARY(sin, sinf, sin)
KILN_RT_UNARY(cos, cosf, cos)
KILN_RT_UNARY(round, rintf, rint)
KILN_RT_UNARY(trunc, truncf, trunc)
#undef KILN_RT_UNARY

KILN_DEVICE float sigmoid(float x) { return 1.0f / (1.0f + ::expf(-x)); }
KILN_DEVICE double sigmoid(double x) { return 1.0 / (1.0 + ::exp(-x)); }
KILN_DEVICE float pow(float x, float y) { return ::powf(x, y); }
KILN_DEVICE double pow(double x, double y) { return ::pow(x, y); }
KILN_DEVICE float min(float a, float b) { return ::fminf(a, b); }
KILN_DEVICE double min(double a, double b) { return ::fmin(a, b); }
KILN_DEVICE float max(float a, float b) { return ::fmaxf(a, b); }
KILN_DEVICE double max(double a, double b) { return ::fmax(a, b); }

#define KILN_RT_INT_MINMAX(T)                                                                      \
  KILN_DEVICE T min(T a, T b) { return b < a ? b : a; }                                            \
  KILN_DEVICE T max(T a, T b) { return a < b ? b : a; }
KILN_RT_INT_MINMAX(int)
KILN_RT_INT_MINMAX(unsigned)
KILN_RT_INT_MINMAX(long)
KILN_RT_INT_MINMAX(unsigned long)
KILN_RT_INT_MINMAX(long long)
KILN_RT_INT_MINMAX(unsigned long long)
#undef KILN_RT_INT_MINMAX
// |INT_MIN| wraps to INT_MIN (abs.s32).
KILN_DEVICE int abs(int x) { return x < 0 ? static_cast<int>(0u - static_cast<unsigned>(x)) : x; }
KILN_DEVICE long abs(long x) {
  return x < 0 ? static_cast<long>(0ul - static_cast<unsigned long>(x)) : x;
}
KILN_DEVICE long long abs(long long x) {
  return x < 0 ? static_cast<long long>(0ull - static_cast<unsigned long long>(x)) : x;
}

} // namespace rt
} // namespace kiln

#endif // KILN_CUDA_SCALAR_MATH_H_
