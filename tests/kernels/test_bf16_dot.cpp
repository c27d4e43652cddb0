// The BF16 x BF16 dot (bf16_dot.h): the scalar definition against a double-precision sum of the
// same products (an independent formula), and every SIMD path this CPU has against the scalar
// definition bit for bit (paths the CPU lacks are reported as skipped, never passed silently).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/bf16_dot.h"
#include "kernels/x86/bf16_dot_simd.h"

namespace {

using ls::bf16_to_f32;
using ls::f32_to_bf16;

// BF16 values with exponents spread over [lo, hi] (powers of two), random signs and mantissas,
// and some exact zeros: small exponents make products denormal in float32, which the DAZ/FTZ
// rules flush.
std::vector<std::uint16_t> random_bf16(std::size_t n, int lo, int hi, std::mt19937& rng) {
  std::uniform_int_distribution<int> e(lo, hi);
  std::uniform_real_distribution<float> m(1.0f, 2.0f);
  std::vector<std::uint16_t> v(n);
  for (auto& b : v) {
    const float f = (rng() % 2 ? -1.0f : 1.0f) * std::ldexp(m(rng), e(rng));
    b = rng() % 50 == 0 ? 0 : f32_to_bf16(f);
  }
  return v;
}

TEST(Bf16Dot, ScalarIsTheSumOfProductsWithinFloatRounding) {
  std::mt19937 rng(3);
  for (std::size_t n : {1, 5, 32, 33, 64, 896, 4864}) {
    const auto w = random_bf16(n, -4, 2, rng), x = random_bf16(n, -4, 2, rng);
    double exact = 0, magnitude = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double p = static_cast<double>(bf16_to_f32(w[i])) * bf16_to_f32(x[i]);
      exact += p;
      magnitude += std::fabs(p);
    }
    const double got = ls::kernels::bf16_dot_scalar(w.data(), x.data(), n);
    // Each lane adds n/16 products with one rounding each, then 4 levels of the tree.
    const double bound = (static_cast<double>(n) / 16 + 6) * 0x1p-24 * magnitude;
    EXPECT_LE(std::fabs(got - exact), bound) << "n " << n;
  }
}

TEST(Bf16Dot, RoundToBf16IsNearestEven) {
  const float x[] = {1.0f, 1.00390625f /* 1 + 2^-8: tie, to even 1 */,
                     1.01171875f /* 1 + 3 * 2^-8: tie, to even 1 + 2^-6 */, -3.14159f, 0.0f};
  std::uint16_t out[5];
  ls::kernels::round_to_bf16(x, out, 5);
  EXPECT_EQ(out[0], 0x3f80);
  EXPECT_EQ(out[1], 0x3f80);
  EXPECT_EQ(out[2], 0x3f82);
  EXPECT_EQ(out[3], 0xc049);
  EXPECT_EQ(out[4], 0x0000);
  // The vector rounding against f32_to_bf16 on random bit patterns: NaNs, infinities,
  // denormals, ties; lengths around the vector width.
  std::mt19937 rng(4);
  for (std::size_t n : {1, 7, 8, 9, 100, 4099}) {
    std::vector<float> v(n);
    for (auto& f : v) {
      const std::uint32_t bits = rng() % 4 == 0 ? (rng() & 0xffff8000u) | 0x8000u : rng();
      std::memcpy(&f, &bits, 4);
    }
    std::vector<std::uint16_t> got(n);
    if (__builtin_cpu_supports("avx2")) {
      ls::kernels::bf16_detail::round_to_bf16_avx2(v.data(), got.data(), n);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], f32_to_bf16(v[i])) << "n " << n << " element " << i;
    }
    ls::kernels::round_to_bf16(v.data(), got.data(), n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], f32_to_bf16(v[i])) << "n " << n;
  }
}

// Every path on arbitrary rows and tokens: n across chunk boundaries and real widths, 1-9 rows,
// 1-6 and 16-17 tokens, strided rows, values from ordinary to denormal-product range.
TEST(Bf16Dot, EveryPathEqualsTheScalarDefinitionBitForBit) {
  for (const char* kernel : {"avx512bf16", "avx2"}) {
    std::mt19937 rng(11);
    const std::vector<std::uint16_t> probe(32, 0x3f80);
    float probe_out = 0;
    if (!ls::kernels::bf16_dot_tile_with(kernel, probe.data(), 32, 1, probe.data(), 32, 1, 32,
                                         &probe_out, 1)) {
      std::printf("[  SKIPPED ] the %s path: this CPU lacks it\n", kernel);
      continue;
    }
    EXPECT_EQ(probe_out, 32.0f);
    int cases = 0;
    for (std::size_t n : {1, 17, 31, 32, 33, 63, 96, 896, 1000}) {
      for (auto [rows, toks] :
           {std::pair{1, 1}, {3, 2}, {4, 4}, {5, 6}, {9, 1}, {8, 16}, {7, 17}}) {
        for (auto [lo, hi] : {std::pair{-3, 3}, {-70, -50}, {-75, 20}}) {
          const std::size_t ws = n + 7, xs = n + 3;  // strides wider than the rows
          const auto w = random_bf16(rows * ws, lo, hi, rng);
          const auto x = random_bf16(toks * xs, lo, hi, rng);
          const std::size_t os = toks + 2;
          std::vector<float> got(rows * os, -1.0f), want(rows * os, -1.0f);
          ASSERT_TRUE(ls::kernels::bf16_dot_tile_with(kernel, w.data(), ws, rows, x.data(), xs,
                                                      toks, n, got.data(), os));
          ls::kernels::bf16_dot_tile_with("scalar", w.data(), ws, rows, x.data(), xs, toks, n,
                                          want.data(), os);
          EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
              << kernel << " n " << n << " rows " << rows << " toks " << toks << " exponents " << lo
              << ".." << hi;
          ++cases;
        }
      }
    }
    EXPECT_EQ(cases, 9 * 7 * 3) << kernel;
    // Long rows (the AVX-512 path then works in blocks of elements, carrying its sums).
    for (std::size_t n : {2049, 4864}) {
      const auto w = random_bf16(9 * n, -3, 3, rng), x = random_bf16(17 * n, -3, 3, rng);
      std::vector<float> got(9 * 17), want(9 * 17);
      ASSERT_TRUE(ls::kernels::bf16_dot_tile_with(kernel, w.data(), n, 9, x.data(), n, 17, n,
                                                  got.data(), 17));
      ls::kernels::bf16_dot_tile_with("scalar", w.data(), n, 9, x.data(), n, 17, n, want.data(),
                                      17);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << kernel << " n " << n;
    }
    // Decode (one token, rows packed), which the AVX-512 path runs one row after another: every
    // row's result in its own place, with the definition's bits.
    for (std::size_t n : {33, 896, 1000}) {
      const auto w = random_bf16(23 * n, -3, 3, rng), x = random_bf16(n, -3, 3, rng);
      std::vector<float> got(23), want(23);
      ASSERT_TRUE(ls::kernels::bf16_dot_tile_with(kernel, w.data(), n, 23, x.data(), n, 1, n,
                                                  got.data(), 1));
      ls::kernels::bf16_dot_tile_with("scalar", w.data(), n, 23, x.data(), n, 1, n, want.data(), 1);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << kernel << " decode n " << n;
    }
  }
}

// The denormal rules themselves: a product below FLT_MIN is flushed (the sum stays 0), a
// denormal input reads as zero, and products of ordinary size are exact.
TEST(Bf16Dot, DenormalsAreFlushedAsVdpbf16psDoes) {
  std::vector<std::uint16_t> w(32, 0), x(32, 0);
  w[1] = f32_to_bf16(0x1p-70f), x[1] = f32_to_bf16(0x1p-70f);  // product 2^-140: denormal
  EXPECT_EQ(ls::kernels::bf16_dot_scalar(w.data(), x.data(), 32), 0.0f);
  w[3] = 0x0001, x[3] = f32_to_bf16(0x1p100f);  // a denormal weight times 2^100
  EXPECT_EQ(ls::kernels::bf16_dot_scalar(w.data(), x.data(), 32), 0.0f);
  w[0] = f32_to_bf16(1.5f), x[0] = f32_to_bf16(-2.5f);
  EXPECT_EQ(ls::kernels::bf16_dot_scalar(w.data(), x.data(), 32), -3.75f);
  for (const char* kernel : {"avx512bf16", "avx2"}) {
    float out = 1.0f;
    if (ls::kernels::bf16_dot_tile_with(kernel, w.data(), 32, 1, x.data(), 32, 1, 32, &out, 1)) {
      EXPECT_EQ(out, -3.75f) << kernel;
    }
  }
}

}  // namespace
