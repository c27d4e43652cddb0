// Element-type conversions against the CPU's own F16C instructions (an independent
// implementation of IEEE half) and against the definition of round-to-nearest-even for BF16.
#include <cpuid.h>
#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <random>

#include "core/dtype.h"

namespace {

// The F16C instructions themselves (the vector forms: GCC and Clang both take them).
__attribute__((target("f16c"))) float hw_f16_to_f32(std::uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}
__attribute__((target("f16c"))) std::uint16_t hw_f32_to_f16(float f) {
  return static_cast<std::uint16_t>(
      _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}

// CPUID leaf 1, ECX bit 29 (Clang 14's __builtin_cpu_supports does not know "f16c").
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}

TEST(DType, F16ToF32MatchesHardwareOnEveryBitPattern) {
  if (!has_f16c()) GTEST_SKIP() << "no F16C on this CPU";
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float a = ls::f16_to_f32(static_cast<std::uint16_t>(h));
    const float b = hw_f16_to_f32(static_cast<std::uint16_t>(h));
    if (std::isnan(b)) {
      EXPECT_TRUE(std::isnan(a)) << h;
    } else {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(a), std::bit_cast<std::uint32_t>(b)) << h;
    }
  }
}

TEST(DType, F32ToF16MatchesHardwareRounding) {
  if (!has_f16c()) GTEST_SKIP() << "no F16C on this CPU";
  std::mt19937 rng(7);
  int mismatches = 0;
  for (int i = 0; i < 2000000; ++i) {
    // Random bit patterns cover every exponent, subnormals, inf and NaN.
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    const std::uint16_t a = ls::f32_to_f16(f), b = hw_f32_to_f16(f);
    const bool both_nan = std::isnan(f) && (a & 0x7c00) == 0x7c00 && (a & 0x3ff) != 0;
    if (a != b && !both_nan) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(DType, Bf16RoundsToNearestEven) {
  std::mt19937 rng(11);
  for (int i = 0; i < 1000000; ++i) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (!std::isfinite(f)) continue;
    const std::uint16_t r = ls::f32_to_bf16(f);
    const double x = f;
    // The two bf16 neighbours of f: truncation and the next one away from zero.
    const std::uint16_t lo = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16);
    const std::uint16_t hi = static_cast<std::uint16_t>(lo + 1);
    // Past the largest finite bf16, IEEE rounding treats infinity as if it were 2^128.
    const double vhi =
        std::isinf(ls::bf16_to_f32(hi)) ? std::copysign(0x1p128, x) : ls::bf16_to_f32(hi);
    const double dlo = std::abs(x - ls::bf16_to_f32(lo)), dhi = std::abs(x - vhi);
    const std::uint16_t want = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) ? hi : lo);
    ASSERT_EQ(r, want) << f;
  }
  EXPECT_TRUE(std::isnan(ls::bf16_to_f32(ls::f32_to_bf16(std::nanf("")))));
  EXPECT_EQ(ls::bf16_to_f32(0x3f80), 1.0f);
}

}  // namespace
