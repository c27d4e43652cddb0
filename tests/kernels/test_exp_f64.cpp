// exp_f64_plain against exp in long double: within kExpF64Bound over [kExpF64Min, 0]; the
// vector exp_bounds_f64 holds the true exp and std::exp's in its intervals, as narrow as it says,
// and the fixed ones outside the range. decode/exp_sum.h's exactness rests on both.
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
    worst = std::max(worst, relative_error(ls::kernels::exp_f64_plain(x),
                                           std::exp(static_cast<long double>(x))));
  }
  // The ends and the points where the reduction switches k (x = (k + 1/2) ln 2).
  for (double x :
       {0.0, -0.0, -1e-300, ls::kernels::kExpF64Min, -0.5 * std::log(2.0), -std::log(2.0)})
    worst = std::max(worst, relative_error(ls::kernels::exp_f64_plain(x),
                                           std::exp(static_cast<long double>(x))));
  EXPECT_LE(worst, kExpF64Bound);
  EXPECT_GT(worst, 0.0);  // a test that measured nothing would pass too
}

TEST(ExpF64, BoundsHoldTheTrueExpAndStdExp) {
  std::mt19937 rng(5);
  std::normal_distribution<float> score(0.0f, 6.0f);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (std::size_t n : {0u, 1u, 3u, 7u, 8u, 9u, 17u, 1000u, 4099u}) {
    std::vector<float> x(n);
    for (float& v : x) v = score(rng);
    if (n > 4) x[1] = -kInf, x[2] = -800.0f, x[3] = std::numeric_limits<float>::quiet_NaN();
    float shift = -kInf;
    for (float v : x) shift = v > shift ? v : shift;  // the max, NaN skipped
    std::vector<double> lo(n, -1.0), hi(n, -1.0);
    ls::kernels::exp_bounds_f64(x.data(), n, shift, lo.data(), hi.data());
    std::vector<double> lo_only(n, -1.0);  // without `hi`: the same lower bounds
    ls::kernels::exp_bounds_f64(x.data(), n, shift, lo_only.data(), nullptr);
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_TRUE(lo_only[i] == lo[i] || (std::isnan(lo_only[i]) && std::isnan(lo[i]))) << i;
    for (std::size_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(x[i]) - static_cast<double>(shift);
      if (std::isnan(d)) {
        EXPECT_TRUE(std::isnan(lo[i]) && std::isnan(hi[i])) << i;
        continue;
      }
      const long double want = std::exp(static_cast<long double>(d));
      const double libm = std::exp(d);
      EXPECT_LE(static_cast<long double>(lo[i]), want) << "n " << n << " i " << i;
      EXPECT_GE(static_cast<long double>(hi[i]), want) << "n " << n << " i " << i;
      EXPECT_TRUE(lo[i] <= libm && libm <= hi[i]) << "n " << n << " i " << i;
      if (d >= ls::kernels::kExpF64Min) {  // the interval is as narrow as promised
        EXPECT_LE(hi[i] - lo[i], 2.0 * (ls::kernels::kExpBoundsMargin + 0x1p-52) * libm) << i;
      }
    }
  }
}

}  // namespace
