// exp_sum (see exp_sum.h): vector weights in blocks, each term's rounding checked against the
// weight's error bound, std::exp where the check cannot decide.
#include "decode/exp_sum.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "kernels/exp_f64.h"
#include "kernels/ops.h"

namespace ls::decode {

namespace {
constexpr std::size_t kBlock = 1024;  // bounds computed a block at a time, kept in L1

double weight(float s, float m) {
  return std::exp(static_cast<double>(s) - static_cast<double>(m));
}
}  // namespace

// total + w rounds to one double for every w in [lo, hi] exactly when it does at both ends (the
// rounding is monotone); that double is then the plain loop's, whose w lies in [lo, hi].
double exp_sum(std::span<const float> scores, float m, double* running) {
  std::array<double, kBlock> lo, hi;
  double total = 0.0;
  for (std::size_t begin = 0; begin < scores.size(); begin += kBlock) {
    const std::size_t len = std::min(kBlock, scores.size() - begin);
    // After a truncation most blocks hold only removed tokens: they add nothing.
    std::size_t bad = 0, removed = 0;
    kernels::count_special(scores.data() + begin, len, &bad, &removed);
    if (removed == len) {
      if (running != nullptr) std::fill(running + begin, running + begin + len, total);
      continue;
    }
    kernels::exp_bounds_f64(scores.data() + begin, len, m, lo.data(), hi.data());
    for (std::size_t j = 0; j < len; ++j) {  // -inf scores add [0, 0]: total + 0 is total
      double next = total + lo[j];
      if (next != total + hi[j]) [[unlikely]]
        next = total + weight(scores[begin + j], m);
      total = next;
      if (running != nullptr) running[begin + j] = total;
    }
  }
  return total;
}

double exp_sum_plain(std::span<const float> scores, float m) {
  double total = 0.0;
  for (const float s : scores)
    if (s != -std::numeric_limits<float>::infinity())
      total += std::exp(static_cast<double>(s) - static_cast<double>(m));
  return total;
}

}  // namespace ls::decode
