// Kiln CPU runtime: the math functions of the thread-level program, as
// kiln::rt overloads for float and double with the names the CUDA twin
// (kiln/cuda/scalar_math.h) uses: exp, exp2, log, log2, sqrt, rsqrt, abs,
// pow, tanh, floor, ceil, sin, cos, round, trunc, sigmoid, min, max.
//
// Both operands of pow/min/max have the same type (generated code converts
// first; mixed calls are ambiguous on purpose). round() rounds half to even
// (rint under the default rounding mode, like CUDA's rintf), not half away
// from zero like std::round. min/max of floats are fmin/fmax: a NaN operand
// loses. sigmoid(x) = 1 / (1 + exp(-x)). min, max and abs also take 32- and
// 64-bit integers.
//
// Numerics: these are the host libm's functions, mostly correctly rounded or
// within 1 ulp; the GPU's differ by a few ulp (rsqrt, exp, tanh, ...), so
// compare results across targets with a tolerance. floor, ceil, trunc, round,
// abs, min, max and sqrt are exact on both. Pure and thread-safe.
#ifndef KILN_CPU_SCALAR_MATH_H_
#define KILN_CPU_SCALAR_MATH_H_

#include <cmath>
#include <cstring>

namespace kiln {
namespace rt {

// T.reinterpret: the bits of x as a To of the same size.
template <class To, class From>
inline To bit_cast(From x) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
  To y;
  std::memcpy(&y, &x, sizeof(To));
  return y;
}

#define KILN_RT_UNARY(NAME, EXPR_F, EXPR_D)                                                        \
  inline float NAME(float x) { return EXPR_F; }                                                    \
  inline double NAME(double x) { return EXPR_D; }
KILN_RT_UNARY(exp, std::exp(x), std::exp(x))
KILN_RT_UNARY(exp2, std::exp2(x), std::exp2(x))
KILN_RT_UNARY(log, std::log(x), std::log(x))
KILN_RT_UNARY(log2, std::log2(x), std::log2(x))
KILN_RT_UNARY(sqrt, std::sqrt(x), std::sqrt(x))
KILN_RT_UNARY(rsqrt, 1.0f / std::sqrt(x), 1.0 / std::sqrt(x))
KILN_RT_UNARY(abs, std::fabs(x), std::fabs(x))
KILN_RT_UNARY(tanh, std::tanh(x), std::tanh(x))
KILN_RT_UNARY(floor, std::floor(x), std::floor(x))
KILN_RT_UNARY(ceil, std::ceil(x), std::ceil(x))
KILN_RT_UNARY(sin, std::sin(x), std::sin(x))
KILN_RT_UNARY(cos, std::cos(x), std::cos(x))
KILN_RT_UNARY(round, std::nearbyint(x), std::nearbyint(x))
KILN_RT_UNARY(trunc, std::trunc(x), std::trunc(x))
KILN_RT_UNARY(sigmoid, 1.0f / (1.0f + std::exp(-x)), 1.0 / (1.0 + std::exp(-x)))
#undef KILN_RT_UNARY

inline float pow(float x, float y) { return std::pow(x, y); }
inline double pow(double x, double y) { return std::pow(x, y); }
inline float min(float a, float b) { return std::fmin(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }

#define KILN_RT_INT_MINMAX(T)                                                                      \
  inline T min(T a, T b) { return b < a ? b : a; }                                                 \
  inline T max(T a, T b) { return a < b ? b : a; }
KILN_RT_INT_MINMAX(int)
KILN_RT_INT_MINMAX(unsigned)
KILN_RT_INT_MINMAX(long)
KILN_RT_INT_MINMAX(unsigned long)
KILN_RT_INT_MINMAX(long long)
KILN_RT_INT_MINMAX(unsigned long long)
#undef KILN_RT_INT_MINMAX
// |INT_MIN| wraps to INT_MIN, as the GPU's abs.s32 does.
inline int abs(int x) { return x < 0 ? static_cast<int>(0u - static_cast<unsigned>(x)) : x; }
inline long abs(long x) {
  return x < 0 ? static_cast<long>(0ul - static_cast<unsigned long>(x)) : x;
}
inline long long abs(long long x) {
  return x < 0 ? static_cast<long long>(0ull - static_cast<unsigned long long>(x)) : x;
}

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_SCALAR_MATH_H_
