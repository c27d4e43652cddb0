// exp_f64_plain and the vectorized exp_shifted_f64 against exp in long double: within
// kExpF64Bound over the range they promise ([kExpF64Min, 0]), 0 for -inf. decode/exp_sum.h's
// exactness rests on this bound.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/exp_f64.h"

namespace {

using ls::kernels::kExpF64Bound;

double relative_error(double got, long double want) {
  return static_cast<double>(std::fabs((static_cast<long double>(got) - want) / want));
}

TEST(ExpF64, PlainIsWithinTheBoundOverTheRange) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> wide(ls::kernels::kExpF64Min, 0.0), near(-2.0, 0.0);
  double worst = 0;
  for (int i = 0; i < 400000; ++i) {
    const double x = i % 2 == 0 ? wide(rng) : near(rng);
    worst = std::max(worst, relative_error(ls::kernels::exp_f64_plain(x), std::exp(
                                                                              static_cast<long double>(x))));
  }
  // The ends and the points where the reduction switches k (x = (k + 1/2) ln 2).
  for (double x : {0.0, -0.0, -1e-300, ls::kernels::kExpF64Min, -0.5 * std::log(2.0), -std::log(2.0)})
    worst = std::max(worst, relative_error(ls::kernels::exp_f64_plain(x), std::exp(static_cast<long double>(x))));
  EXPECT_LE(worst, kExpF64Bound);
  EXPECT_GT(worst, 0.0);  // a test that measured nothing would pass too
}

TEST(ExpF64, VectorIsWithinTheBoundAndZeroForNegativeInfinity) {
  std::mt19937 rng(5);
  std::normal_distribution<float> score(0.0f, 6.0f);
  for (std::size_t n : {0u, 1u, 3u, 7u, 8u, 9u, 17u, 1000u, 4099u}) {
    std::vector<float> x(n);
    for (float& v : x) v = score(rng);
    if (n > 2) x[1] = -std::numeric_limits<float>::infinity();
    const float shift = n == 0 ? 0.0f : *std::max_element(x.begin(), x.end());
    std::vector<double> out(n, -1.0);
    ls::kernels::exp_shifted_f64(x.data(), n, shift, out.data());
    for (std::size_t i = 0; i < n; ++i) {
      if (x[i] == -std::numeric_limits<float>::infinity()) {
        EXPECT_EQ(out[i], 0.0) << i;
        continue;
      }
      const long double want =
          std::exp(static_cast<long double>(x[i]) - static_cast<long double>(shift));
      EXPECT_LE(relative_error(out[i], want), kExpF64Bound) << "n " << n << " i " << i;
    }
  }
}

}  // namespace
