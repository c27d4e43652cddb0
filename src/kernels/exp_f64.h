// exp in double precision for the decoding stages' weights exp(score - max), computed 4 or 8 at
// a time. Not glibc's bits: an approximation within kExpF64Bound of the true value (relative),
// which decode/exp_sum.h turns into glibc's exact sums by checking each term's rounding. The
// formula: x = k ln2 + r (Cody-Waite, |r| <= ln2 / 2), exp(x) = 2^k * (1 + r + ... + r^13/13!).
#pragma once

#include <cstddef>

namespace ls::kernels {

// The largest relative error of exp_f64_plain and of the vector exp against the true exp, for
// inputs in [kExpF64Min, 0] (tests/kernels/test_exp.cpp measures it against std::exp).
inline constexpr double kExpF64Bound = 0x1p-50;
// Below this the result would be subnormal: callers take std::exp there.
inline constexpr double kExpF64Min = -700.0;

// The scalar reference, step for step what each vector lane does.
double exp_f64_plain(double x);

// Bounds on exp(d), d = double(x[i]) - double(shift), for i in [0, n): lo[i] <= exp(d) <= hi[i]
// for the true exp and for std::exp's (within half an ulp of it). The interval is the vector
// exp (within kExpF64Bound) widened by kExpBoundsMargin either side; d = -inf gives [0, 0], NaN
// gives NaN, d below kExpF64Min gives [0, 2^-1000] (exp(-700) < 2^-1009), d above 0 [0, inf]
// (the shift is meant to be the maximum).
inline constexpr double kExpBoundsMargin = 0x1p-46;
// `hi` may be null when only the lower bounds are wanted (top_p's bucket masses).
void exp_bounds_f64(const float* x, std::size_t n, float shift, double* lo, double* hi);

namespace exp_f64_detail {
inline constexpr double kInvLn2 = 0x1.71547652b82fep+0;
inline constexpr double kShift = 0x1.8p+52;  // x + kShift rounds x to an integer in the low bits
inline constexpr double kLn2Hi = 0x1.62e42fee00000p-1;   // ln 2 = kLn2Hi + kLn2Lo; k * kLn2Hi is
inline constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;  // exact for |k| < 2^11
// 1/j! for j = 13 down to 2 (Taylor: the error at |r| = ln2/2 is below 2^-57).
inline constexpr double kInvFact[12] = {
    1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
    1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,
    1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,        1.0 / 2.0,
};
}  // namespace exp_f64_detail

}  // namespace ls::kernels
