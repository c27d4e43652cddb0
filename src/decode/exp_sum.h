// The sum behind every softmax of the decoding stages, fast and with the plain loop's bits:
//   for (s : scores) if (s != -inf) total += std::exp(double(s) - m);
// Each weight comes from the vector exp of kernels/exp_f64.h (within 2^-50 of the true value);
// when every value that close to it would round `total + w` to the same double, that double is
// the plain loop's; otherwise (about one term in 10^5) the term is taken from std::exp itself.
#pragma once

#include <cstdint>
#include <span>

namespace ls::decode {

// `m` is the largest score (as the plain loop's callers take it). When `running` is given (room
// for scores.size() values), running[i] receives the total after element i, as the plain loop
// has it (a removed token leaves it as it was): the cumulative weights of an inverse-CDF walk.
double exp_sum(std::span<const float> scores, float m, double* running = nullptr);

// The plain loop itself: the reference exp_sum equals bit for bit (tests, benchmarks).
double exp_sum_plain(std::span<const float> scores, float m);

}  // namespace ls::decode
