// Kiln CPU runtime: rt::cvt<To>(from), the one conversion generated code
// uses between the scalar types of the thread-level program, with the same
// results as the CUDA twin (kiln/cuda/convert.h).
//
// Types: bool, the 8/16/32/64-bit signed and unsigned integers, float,
// double, and the storage types half_t, bfloat16_t, fp8_e4m3_t, fp8_e5m2_t.
//  - A storage type converts through float: to it with the round-to-nearest-
//    even conversions of kiln/cpu/types.h (float_to_half, ...; fp8
//    saturates), from it exactly. So double -> half rounds twice (to float,
//    then to half), as on the GPU side.
//  - float/double -> integer truncates toward zero and saturates at the
//    integer's range, NaN giving 0: PTX cvt.rzi semantics, defined for every
//    input (a plain C++ cast is undefined out of range).
//  - Everything else is a C++ conversion: integers wrap modulo 2^N,
//    -> bool tests != 0, integer -> float rounds to nearest.
// Pure functions, thread-safe.
#ifndef KILN_CPU_CONVERT_H_
#define KILN_CPU_CONVERT_H_

#include "kiln/cpu/types.h"

namespace kiln {
namespace rt {
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

inline float StorageToFloat(half_t v) { return half_to_float(v); }
inline float StorageToFloat(bfloat16_t v) { return bfloat16_to_float(v); }
inline float StorageToFloat(fp8_e4m3_t v) { return e4m3_to_float(v); }
inline float StorageToFloat(fp8_e5m2_t v) { return e5m2_to_float(v); }

template <class T>
struct StorageFromFloat;
template <>
struct StorageFromFloat<half_t> {
  static half_t Run(float f) { return float_to_half(f); }
};
template <>
struct StorageFromFloat<bfloat16_t> {
  static bfloat16_t Run(float f) { return float_to_bfloat16(f); }
};
template <>
struct StorageFromFloat<fp8_e4m3_t> {
  static fp8_e4m3_t Run(float f) { return float_to_e4m3(f); }
};
template <>
struct StorageFromFloat<fp8_e5m2_t> {
  static fp8_e5m2_t Run(float f) { return float_to_e5m2(f); }
};

// 2^n as a double, exact for the n used here.
constexpr double Pow2(int n) { return n == 0 ? 1.0 : 2.0 * Pow2(n - 1); }

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
  static To Run(From v) { return static_cast<To>(v); }
};

// Real -> integer: truncate, saturate, NaN -> 0. The bounds are powers of
// two, so they are exact in From.
template <class To, class From>
struct Cvt<To, From, kCvtInt, kCvtReal> {
  static To Run(From v) {
    if (!(v == v)) return static_cast<To>(0);
    if (v <= static_cast<From>(IntRange<To>::kLo)) return IntRange<To>::kMin;
    if (v >= static_cast<From>(IntRange<To>::kHiExcl)) return IntRange<To>::kMax;
    return static_cast<To>(v);
  }
};

template <class To, class From, int kTo>
struct Cvt<To, From, kTo, kCvtStorage> {
  static To Run(From v) { return Cvt<To, float>::Run(StorageToFloat(v)); }
};

template <class To, class From, int kFrom>
struct Cvt<To, From, kCvtStorage, kFrom> {
  static To Run(From v) { return StorageFromFloat<To>::Run(Cvt<float, From>::Run(v)); }
};

template <class To, class From>
struct Cvt<To, From, kCvtStorage, kCvtStorage> {
  static To Run(From v) { return StorageFromFloat<To>::Run(StorageToFloat(v)); }
};

template <class T>
struct Cvt<T, T, kCvtStorage, kCvtStorage> {
  static T Run(T v) { return v; }
};

} // namespace detail

// cvt<To>(v): see the top of this file.
template <class To, class From>
inline To cvt(From v) {
  return detail::Cvt<To, From>::Run(v);
}

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_CONVERT_H_
