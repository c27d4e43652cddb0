// exp_f32 against std::exp (glibc's expf, which it claims to reproduce bit for bit) and against
// exp in long double (accuracy, independent of any libm float code); the vectorized softmax
// against softmax_plain bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/exp.h"
#include "kernels/ops.h"

namespace {

using ls::kernels::exp_f32;

bool same_bits(float a, float b) {
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

TEST(Exp, TableIsTwoToTheIOver32) {
  for (int i = 0; i < 32; ++i) {
    const auto want = static_cast<double>(std::exp2l(static_cast<long double>(i) / 32));
    const std::uint64_t bits = ls::kernels::exp_detail::kTable[i] + (std::uint64_t(i) << 47);
    EXPECT_EQ(std::bit_cast<double>(bits), want) << "i = " << i;
  }
}

// Every 97th bit pattern (44 million floats, all signs and exponents) plus every float in the
// ranges with special cases: the same bits as glibc's expf.
TEST(Exp, SameBitsAsGlibcExpf) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc: std::exp is another libm's expf, whose bits exp_f32 does not claim";
#endif
  // glibc picks its FMA expf on CPUs with FMA and AVX2; without them another variant rounds
  // differently in the last bit.
  if (!__builtin_cpu_supports("fma") || !__builtin_cpu_supports("avx2"))
    GTEST_SKIP() << "this CPU lacks FMA/AVX2: glibc's expf is not the FMA variant here";
  std::uint64_t checked = 0, differ = 0;
  const auto check = [&](std::uint32_t bits) {
    const float x = std::bit_cast<float>(bits);
    const float got = exp_f32(x), want = std::exp(x);
    ++checked;
    if (!same_bits(got, want) && !(std::isnan(got) && std::isnan(want))) {
      if (++differ <= 5) ADD_FAILURE() << "x = " << x << ": " << got << " != " << want;
    }
  };
  for (std::uint64_t b = 0; b <= 0xffffffffu; b += 97) check(static_cast<std::uint32_t>(b));
  for (float lo : {-104.0f, 87.5f, -88.5f}) {  // the edges: underflow, overflow, |x| = 88
    for (float x = lo; x < lo + 1.0f; x = std::nextafter(x, 1000.0f))
      check(std::bit_cast<std::uint32_t>(x));
  }
  EXPECT_EQ(differ, 0u) << "of " << checked;
}

// Relative error within one float ulp of the true value wherever the result is a normal float.
TEST(Exp, WithinOneUlpOfLongDoubleExp) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-87.0f, 88.0f);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = i < 1000 ? static_cast<float>(i - 500) * 1e-3f : u(rng);
    const long double want = std::exp(static_cast<long double>(x));
    const double rel = static_cast<double>(std::fabs((exp_f32(x) - want) / want));
    worst = std::max(worst, rel);
  }
  EXPECT_LE(worst, 0x1p-23) << "worst relative error " << worst;
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_EQ(exp_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(exp_f32(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(exp_f32(-200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
}

// Lengths around every vector width, scales that push some inputs below -88 (underflow and the
// scalar fallback), -inf entries, all -inf, NaN first or later, zeros of both signs as the
// largest: identical bytes.
TEST(Exp, SoftmaxEqualsPlainBitForBit) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0, 1);
  int cases = 0;
  for (std::size_t n : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 100, 257, 1024}) {
    for (float scale : {0.1f, 3.0f, 40.0f, 300.0f}) {
      for (int special = 0; special < 6; ++special) {
        std::vector<float> x(n);
        for (auto& v : x) v = nd(rng) * scale;
        const float inf = std::numeric_limits<float>::infinity();
        if (special == 1) x[n / 2] = -inf;
        if (special == 2) std::fill(x.begin(), x.end(), -inf);
        if (special == 3) x[n - 1 - n / 3] = std::numeric_limits<float>::quiet_NaN();
        if (special == 4) x[0] = std::numeric_limits<float>::quiet_NaN();
        if (special == 5)  // the largest is a zero of either sign
          for (std::size_t i = 0; i < n; ++i)
            x[i] = i % 3 == 0 ? (i % 2 ? -0.0f : 0.0f) : -std::fabs(x[i]);
        std::vector<float> a = x, b = x;
        ls::kernels::softmax(a);
        ls::kernels::softmax_plain(b);
        EXPECT_EQ(std::memcmp(a.data(), b.data(), n * sizeof(float)), 0)
            << "n " << n << " scale " << scale << " case " << special;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 16 * 4 * 6);
}

// Gates from small to beyond +-88 (the scalar fallback, exp overflow to inf and underflow), NaN:
// identical bytes.
TEST(Exp, SiluMulEqualsPlainBitForBit) {
  std::mt19937 rng(12);
  std::normal_distribution<float> nd(0, 1);
  for (std::size_t n : {1, 3, 8, 9, 16, 17, 100, 4864}) {
    for (float scale : {0.5f, 5.0f, 60.0f}) {
      std::vector<float> g(n), u(n), a(n), b(n);
      for (auto& v : g) v = nd(rng) * scale;
      for (auto& v : u) v = nd(rng);
      if (n > 2) g[n / 2] = std::numeric_limits<float>::quiet_NaN();
      ls::kernels::silu_mul(g.data(), u.data(), n, a.data());
      ls::kernels::silu_mul_plain(g.data(), u.data(), n, b.data());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), n * sizeof(float)), 0) << n << " " << scale;
    }
  }
}

}  // namespace
