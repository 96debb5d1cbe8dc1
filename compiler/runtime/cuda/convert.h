// Kiln CUDA runtime: rt::cvt<To>(from), the one conversion generated code
// uses between the scalar types of the thread-level program, with the same
// results as the CPU twin (kiln/cpu/convert.h; the rules are stated there):
// storage types (half_t, bfloat16_t, fp8) go through float with the
// conversions of kiln/cuda/types.h, float/double -> integer truncates and
// saturates with NaN -> 0, everything else is a C++ conversion.
// No toolkit headers: compiles under NVRTC alone.
#ifndef KILN_CUDA_CONVERT_H_
#define KILN_CUDA_CONVERT_H_

#include "kiln/cuda/types.h"

namespace kiln {
namespace rt {

// The fixed-width integers kiln/cuda/types.h leaves out. (A repeated typedef
// of the same type is allowed, should types.h add them.)
typedef short int16_t;
typedef long long int64_t;

namespace detail {

enum CvtKind { kCvtBool, kCvtInt, kCvtReal, kCvtStorage };

// Kind of each supported type; other types have no `value`, so cvt of them
// does not compile.
template <class T>
struct CvtKindOf {};
template <>
struct CvtKindOf<bool> {
  static constexpr int value = kCvtBool;
};
#define KILN_RT_CVT_KIND(T, K)                                                                     \
  template <>                                                                                      \
  struct CvtKindOf<T> {                                                                            \
    static constexpr int value = K;                                                                \
  };
KILN_RT_CVT_KIND(char, kCvtInt)
KILN_RT_CVT_KIND(signed char, kCvtInt)
KILN_RT_CVT_KIND(unsigned char, kCvtInt)
KILN_RT_CVT_KIND(short, kCvtInt)
KILN_RT_CVT_KIND(unsigned short, kCvtInt)
KILN_RT_CVT_KIND(int, kCvtInt)
KILN_RT_CVT_KIND(unsigned, kCvtInt)
KILN_RT_CVT_KIND(long, kCvtInt)
KILN_RT_CVT_KIND(unsigned long, kCvtInt)
KILN_RT_CVT_KIND(long long, kCvtInt)
KILN_RT_CVT_KIND(unsigned long long, kCvtInt)
KILN_RT_CVT_KIND(float, kCvtReal)
KILN_RT_CVT_KIND(double, kCvtReal)
KILN_RT_CVT_KIND(half_t, kCvtStorage)
KILN_RT_CVT_KIND(bfloat16_t, kCvtStorage)
KILN_RT_CVT_KIND(fp8_e4m3_t, kCvtStorage)
KILN_RT_CVT_KIND(fp8_e5m2_t, kCvtStorage)
#undef KILN_RT_CVT_KIND

KILN_DEVICE float StorageToFloat(half_t v) { return half_to_float(v); }
KILN_DEVICE float StorageToFloat(bfloat16_t v) { return bfloat16_to_float(v); }
KILN_DEVICE float StorageToFloat(fp8_e4m3_t v) { return e4m3_to_float(v); }
KILN_DEVICE float StorageToFloat(fp8_e5m2_t v) { return e5m2_to_float(v); }

template <class T>
struct StorageFromFloat;
template <>
struct StorageFromFloat<half_t> {
  static KILN_DEVICE half_t Run(float f) { return float_to_half(f); }
};
template <>
struct StorageFromFloat<bfloat16_t> {
  static KILN_DEVICE bfloat16_t Run(float f) { return float_to_bfloat16(f); }
};
template <>
struct StorageFromFloat<fp8_e4m3_t> {
  static KILN_DEVICE fp8_e4m3_t Run(float f) { return float_to_e4m3(f); }
};
template <>
struct StorageFromFloat<fp8_e5m2_t> {
  static KILN_DEVICE fp8_e5m2_t Run(float f) { return float_to_e5m2(f); }
};

// 2^n as a double, exact for the n used here.
__host__ __device__ constexpr double Pow2(int n) { return n == 0 ? 1.0 : 2.0 * Pow2(n - 1); }

// The range of integer type T: [lo, hi_excl) as reals, [min, max] as T.
template <class T>
struct IntRange {
  static constexpr bool kSigned = static_cast<T>(-1) < static_cast<T>(0);
  static constexpr int kBits = 8 * static_cast<int>(sizeof(T));
  static constexpr double kLo = kSigned ? -Pow2(kBits - 1) : 0.0;
  static constexpr double kHiExcl = kSigned ? Pow2(kBits - 1) : Pow2(kBits);
  static constexpr T kMax =
      kSigned ? static_cast<T>((1ull << (kBits - 1)) - 1ull) : static_cast<T>(~0ull);
  static constexpr T kMin = kSigned ? static_cast<T>(-kMax - 1) : static_cast<T>(0);
};

template <class To, class From, int kTo = CvtKindOf<To>::value, int kFrom = CvtKindOf<From>::value>
struct Cvt {
  static KILN_DEVICE To Run(From v) { return static_cast<To>(v); }
};

// Real -> integer: truncate, saturate, NaN -> 0. The bounds are powers of
// two, so they are exact in From.
template <class To, class From>
struct Cvt<To, From, kCvtInt, kCvtReal> {
  static KILN_DEVICE To Run(From v) {
    if (!(v == v)) return static_cast<To>(0);
    if (v <= static_cast<From>(IntRange<To>::kLo)) return IntRange<To>::kMin;
    if (v >= static_cast<From>(IntRange<To>::kHiExcl)) return IntRange<To>::kMax;
    return static_cast<To>(v);
  }
};

template <class To, class From, int kTo>
struct Cvt<To, From, kTo, kCvtStorage> {
  static KILN_DEVICE To Run(From v) { return Cvt<To, float>::Run(StorageToFloat(v)); }
};

template <class To, class From, int kFrom>
struct Cvt<To, From, kCvtStorage, kFrom> {
  static KILN_DEVICE To Run(From v) { return StorageFromFloat<To>::Run(Cvt<float, From>::Run(v)); }
};

template <class To, class From>
struct Cvt<To, From, kCvtStorage, kCvtStorage> {
  static KILN_DEVICE To Run(From v) { return StorageFromFloat<To>::Run(StorageToFloat(v)); }
};

template <class T>
struct Cvt<T, T, kCvtStorage, kCvtStorage> {
  static KILN_DEVICE T Run(T v) { return v; }
};

} // namespace detail

// cvt<To>(v): see kiln/cpu/convert.h.
template <class To, class From>
KILN_DEVICE To cvt(From v) {
  return detail::Cvt<To, From>::Run(v);
}

} // namespace rt
} // namespace kiln

#endif // KILN_CUDA_CONVERT_H_
