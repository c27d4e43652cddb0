// The scalar exp_f32 (exp.h): glibc's expf algorithm step by step, each fused multiply-add where
// glibc's FMA build has one, so that the rounding of every step is the same.
#include "kernels/exp.h"

#include <bit>
#include <cmath>
#include <limits>

namespace ls::kernels {

namespace exp_detail {

const std::uint64_t kTable[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

}  // namespace exp_detail

float exp_f32(float x) {
  using namespace exp_detail;
  if (!(std::fabs(x) < kPlainLimit)) {  // |x| >= 88, infinite or NaN
    if (x == -std::numeric_limits<float>::infinity()) return 0.0f;
    if (std::isnan(x) || std::isinf(x)) return x + x;
    if (x > 0x1.62e42ep6f) return std::numeric_limits<float>::infinity();  // > log(2^128)
    if (x < -0x1.9fe368p6f) return 0.0f;                                   // < log(2^-150)
    if (x < -0x1.9d1d9ep6f) return 0x1p-149f;  // < log(2^-149): glibc rounds up to the least
  }                                            // denormal here; the rest takes the table path
  const double xd = x;
  double kd = std::fma(kInvLn2N, xd, kShift);  // k in the low bits
  const auto ki = std::bit_cast<std::uint64_t>(kd);
  kd -= kShift;
  const double r = std::fma(kInvLn2N, xd, -kd);  // x * 32/ln2 - k, in [-1/2, 1/2]
  const double s = std::bit_cast<double>(kTable[ki % 32] + (ki << 47));
  const double z = std::fma(r, kC0, kC1);
  const double r2 = r * r;
  double y = std::fma(r, kC2, 1.0);
  y = std::fma(z, r2, y);
  return static_cast<float>(y * s);
}

}  // namespace ls::kernels
