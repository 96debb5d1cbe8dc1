// Conversions of the CPU runtime (kiln/cpu/types.h), checked exhaustively
// against references computed another way: decoding with ldexp, midpoints
// between neighbouring representable values, the compiler's _Float16 and the
// classic bf16 rounding bit trick.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "kiln/cpu/types.h"

namespace kiln::rt {
namespace {

float RefDecode(uint32_t bits, int exp_bits, int man_bits, bool has_inf) {
  const uint32_t sign = bits >> (exp_bits + man_bits);
  const int exp = static_cast<int>((bits >> man_bits) & ((1u << exp_bits) - 1));
  const int man = static_cast<int>(bits & ((1u << man_bits) - 1));
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int max_exp = (1 << exp_bits) - 1;
  double v;
  if (has_inf && exp == max_exp) {
    v = man == 0 ? std::numeric_limits<double>::infinity() : std::nan("");
  } else if (exp == 0) {
    v = std::ldexp(man, 1 - bias - man_bits);
  } else {
    v = std::ldexp((1 << man_bits) + man, exp - bias - man_bits);
  }
  return static_cast<float>(sign ? -v : v);
}

void ExpectSameFloat(float got, float want) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got));
  } else {
    EXPECT_EQ(float_bits(got), float_bits(want)) << got << " vs " << want;
  }
}

TEST(CpuTypes, HalfDecodeIsExactForAllBitPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    SCOPED_TRACE(h);
    ExpectSameFloat(half_to_float(half_t{static_cast<uint16_t>(h)}), RefDecode(h, 5, 10, true));
  }
}

TEST(CpuTypes, HalfRoundTripsForAllBitPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const half_t v{static_cast<uint16_t>(h)};
    const uint16_t back = float_to_half(half_to_float(v)).bits;
    const bool nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
    EXPECT_EQ(back, nan ? 0x7fffu : h) << h;
  }
}

// Between every two neighbouring halves, the exact midpoint rounds to the
// even one, and the floats next to it round to the nearer one.
TEST(CpuTypes, HalfRoundsToNearestEvenAtEveryMidpoint) {
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const float lo = half_to_float(half_t{static_cast<uint16_t>(h)});
    const float hi =
        h + 1 == 0x7c00u ? 65536.0f : half_to_float(half_t{static_cast<uint16_t>(h + 1)});
    const float mid = (lo + hi) / 2; // exact: 12 significant bits
    for (float sign : {1.0f, -1.0f}) {
      SCOPED_TRACE(testing::Message() << "h=" << h << " sign=" << sign);
      const uint16_t s = sign < 0 ? 0x8000u : 0;
      EXPECT_EQ(float_to_half(sign * mid).bits, s | ((h & 1u) ? h + 1 : h));
      EXPECT_EQ(float_to_half(sign * std::nextafter(mid, 1e9f)).bits, s | (h + 1));
      EXPECT_EQ(float_to_half(sign * std::nextafter(mid, 0.0f)).bits, s | h);
    }
  }
}

TEST(CpuTypes, HalfSpecialValues) {
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()).bits, 0x7c00u);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()).bits, 0xfc00u);
  EXPECT_EQ(float_to_half(1e10f).bits, 0x7c00u);
  EXPECT_EQ(float_to_half(std::nanf("")).bits, 0x7fffu);
  EXPECT_EQ(float_to_half(-0.0f).bits, 0x8000u);
  EXPECT_EQ(float_to_half(1e-30f).bits, 0x0000u); // below half the smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)).bits, 0x0001u);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)).bits, 0x0000u); // tie to even: 0
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)).bits, 0x0001u);
}

#if defined(__FLT16_MAX__)
// The normal-half range and its edges (the rounding add's domain) float by
// float, every 37th bit pattern, both signs.
TEST(CpuTypes, HalfMatchesCompilerFloat16AcrossTheNormalRange) {
  for (uint32_t mag = 0x38000000u; mag < 0x48000000u; mag += 37) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const float f = bits_float(sign | mag);
      const _Float16 ref = static_cast<_Float16>(f);
      uint16_t ref_bits;
      std::memcpy(&ref_bits, &ref, 2);
      ASSERT_EQ(float_to_half(f).bits, ref_bits) << f;
    }
  }
}

TEST(CpuTypes, HalfMatchesCompilerFloat16OnRandomFloats) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    const float f = bits_float(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) continue;
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t ref_bits;
    std::memcpy(&ref_bits, &ref, 2);
    ASSERT_EQ(float_to_half(f).bits, ref_bits) << f;
  }
}
#endif

TEST(CpuTypes, Bfloat16DecodeIsTheTopHalfOfAFloat) {
  for (uint32_t b = 0; b < 65536; ++b) {
    ExpectSameFloat(bfloat16_to_float(bfloat16_t{static_cast<uint16_t>(b)}),
                    RefDecode(b, 8, 7, true));
  }
}

TEST(CpuTypes, Bfloat16RoundsToNearestEvenAtEveryMidpoint) {
  for (uint32_t b = 0; b < 0x7f80u; ++b) {
    const float mid = bits_float((b << 16) | 0x8000u);
    for (float sign : {1.0f, -1.0f}) {
      SCOPED_TRACE(testing::Message() << "b=" << b << " sign=" << sign);
      const uint16_t s = sign < 0 ? 0x8000u : 0;
      EXPECT_EQ(float_to_bfloat16(sign * mid).bits, s | ((b & 1u) ? b + 1 : b));
      EXPECT_EQ(
          float_to_bfloat16(sign * std::nextafter(mid, std::numeric_limits<float>::infinity()))
              .bits,
          s | (b + 1));
      EXPECT_EQ(float_to_bfloat16(sign * std::nextafter(mid, 0.0f)).bits, s | b);
    }
  }
}

TEST(CpuTypes, Bfloat16MatchesTheBitTrickOnRandomFloats) {
  std::mt19937 rng(11);
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t u = static_cast<uint32_t>(rng());
    const float f = bits_float(u);
    if (std::isnan(f)) {
      ASSERT_EQ(float_to_bfloat16(f).bits, 0x7fffu);
      continue;
    }
    const uint32_t ref = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    ASSERT_EQ(float_to_bfloat16(f).bits, ref) << u;
  }
}

struct Fp8Case {
  const char* name;
  int exp_bits, man_bits;
  uint32_t max_code;
  bool has_inf;
  float (*decode)(uint8_t);
  uint8_t (*encode)(float);
};

const Fp8Case kFp8Cases[] = {
    {"e4m3", 4, 3, 0x7e, false, [](uint8_t b) { return e4m3_to_float(fp8_e4m3_t{b}); },
     [](float f) { return float_to_e4m3(f).bits; }},
    {"e5m2", 5, 2, 0x7b, true, [](uint8_t b) { return e5m2_to_float(fp8_e5m2_t{b}); },
     [](float f) { return float_to_e5m2(f).bits; }},
};

TEST(CpuTypes, Fp8DecodeTables) {
  for (const Fp8Case& c : kFp8Cases) {
    for (uint32_t b = 0; b < 256; ++b) {
      SCOPED_TRACE(testing::Message() << c.name << " " << b);
      float want = RefDecode(b, c.exp_bits, c.man_bits, c.has_inf);
      if (!c.has_inf && (b & 0x7fu) == 0x7fu) want = std::nanf("");
      ExpectSameFloat(c.decode(static_cast<uint8_t>(b)), want);
    }
  }
  EXPECT_EQ(e4m3_to_float(fp8_e4m3_t{0x38}), 1.0f);
  EXPECT_EQ(e4m3_to_float(fp8_e4m3_t{0x7e}), 448.0f);
  EXPECT_EQ(e4m3_to_float(fp8_e4m3_t{0x01}), std::ldexp(1.0f, -9));
  EXPECT_EQ(e5m2_to_float(fp8_e5m2_t{0x3c}), 1.0f);
  EXPECT_EQ(e5m2_to_float(fp8_e5m2_t{0x7b}), 57344.0f);
  EXPECT_EQ(e5m2_to_float(fp8_e5m2_t{0x01}), std::ldexp(1.0f, -16));
}

TEST(CpuTypes, Fp8RoundsToNearestEvenAndSaturates) {
  for (const Fp8Case& c : kFp8Cases) {
    for (uint32_t b = 0; b <= c.max_code; ++b) {
      SCOPED_TRACE(testing::Message() << c.name << " " << b);
      const float v = c.decode(static_cast<uint8_t>(b));
      EXPECT_EQ(c.encode(v), b);
      EXPECT_EQ(c.encode(-v), b | 0x80u);
      if (b == c.max_code) continue;
      const float mid = (v + c.decode(static_cast<uint8_t>(b + 1))) / 2;
      EXPECT_EQ(c.encode(mid), (b & 1u) ? b + 1 : b);
      EXPECT_EQ(c.encode(std::nextafter(mid, 1e9f)), b + 1);
      EXPECT_EQ(c.encode(std::nextafter(mid, 0.0f)), b);
    }
    const float max = c.decode(static_cast<uint8_t>(c.max_code));
    for (float big : {max * 1.07f, max * 1.5f, 1e30f, std::numeric_limits<float>::infinity()}) {
      SCOPED_TRACE(testing::Message() << c.name << " " << big);
      EXPECT_EQ(c.encode(big), c.max_code);
      EXPECT_EQ(c.encode(-big), c.max_code | 0x80u);
    }
    EXPECT_EQ(c.encode(std::nanf("")), 0x7fu);
    EXPECT_EQ(c.encode(1e-30f), 0u);
  }
  EXPECT_EQ(float_to_e4m3(464.0f).bits, 0x7eu); // would round to 480: saturates
  EXPECT_EQ(float_to_e4m3(1.0f).bits, 0x38u);
}

TEST(CpuTypes, Tf32RoundsToNearestWithTiesAwayFromZero) {
  struct Case {
    float in, want;
  };
  const float ulp = std::ldexp(1.0f, -10);
  const Case cases[] = {
      {1.0f, 1.0f},
      {1.0f + ulp / 2, 1.0f + ulp},                   // tie: away from zero
      {-(1.0f + ulp / 2), -(1.0f + ulp)},             // tie, negative
      {1.0f + ulp / 2 - std::ldexp(1.0f, -23), 1.0f}, // just below the tie
      {1.0f + ulp + ulp / 2, 1.0f + 2 * ulp},         // tie from an odd value
      {3.0f * std::ldexp(1.0f, -120), 3.0f * std::ldexp(1.0f, -120)},
      // Subnormals round on the encoding's bits like everything else.
      {bits_float(0x1000u), bits_float(0x2000u)},
      {bits_float(0x0fffu), 0.0f},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    EXPECT_EQ(tf32_round(c.in), c.want);
    EXPECT_EQ(float_bits(tf32_round(c.in)) & 0x1fffu, 0u);
  }
  EXPECT_TRUE(std::isinf(tf32_round(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(tf32_round(std::nanf(""))));
  // Non-finite inputs are truncated, not rounded (observed on an H200).
  EXPECT_EQ(float_bits(tf32_round(bits_float(0x7f801000u))), 0x7f800000u);
  EXPECT_EQ(float_bits(tf32_round(bits_float(0xff803fffu))), 0xff802000u);
}

TEST(CpuTypes, PackingPutsTheLowerIndexInTheLowBits) {
  const uint32_t r = pack_half2(half_t{0x1234}, half_t{0xabcd});
  EXPECT_EQ(r, 0xabcd1234u);
  EXPECT_EQ(b16_lo(r), 0x1234u);
  EXPECT_EQ(b16_hi(r), 0xabcdu);
  EXPECT_EQ(pack_b8x4(1, 2, 3, 4), 0x04030201u);
}

} // namespace
} // namespace kiln::rt
