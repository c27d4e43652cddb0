// exp for float32 with the bits of glibc's expf (2.28 and later, the variant glibc picks on every
// x86-64 CPU with AVX2 and FMA): x * 32/ln2 = k + r, exp(x) = 2^(k/32) * p(r) with a 32-entry
// table of 2^(i/32) and a cubic p, all in double precision, rounded to float once at the end.
// Written out here so that softmax's vector version (softmax.cpp) and its scalar reference give
// the same bits as each other and as std::exp on the machines the recorded results came from.
#pragma once

#include <cstdint>

namespace ls::kernels {

// The scalar definition. Every float input, including infinities, NaN and underflow, gives
// what glibc's expf gives (tests/kernels/test_exp.cpp checks it against std::exp).
float exp_f32(float x);

namespace exp_detail {

inline constexpr double kInvLn2N = 0x1.71547652b82fep+5;  // 32 / ln 2
inline constexpr double kShift = 0x1.8p+52;               // x + kShift rounds x to an integer
inline constexpr double kC0 = 0x1.c6af84b912394p-20;      // p(r) = kC0 r^3 + kC1 r^2 + kC2 r + 1
inline constexpr double kC1 = 0x1.ebfce50fac4f3p-13;
inline constexpr double kC2 = 0x1.62e42ff0c52d6p-6;
// Inputs with |x| below this take the table path without special cases.
inline constexpr float kPlainLimit = 88.0f;
// Bits of 2^(i/32) (the nearest double), less i << 47 so that adding k << 47 makes 2^(k/32).
extern const std::uint64_t kTable[32];

}  // namespace exp_detail
}  // namespace ls::kernels
