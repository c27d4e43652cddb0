// exp_sum (see exp_sum.h): vector weights in blocks, each term's rounding checked against the
// weight's error bound, std::exp where the check cannot decide.
#include "decode/exp_sum.h"

#include <array>
#include <cmath>
#include <limits>

#include "kernels/exp_f64.h"

namespace ls::decode {

namespace {
// The vector weights are within kExpF64Bound (2^-50) of exp, and std::exp within half an ulp
// (2^-53): an interval of 2^-46 either side of the vector weight holds std::exp's with room.
constexpr double kMargin = 0x1p-46;
constexpr std::size_t kBlock = 1024;  // weights computed a block at a time, kept in L1
}  // namespace

double exp_sum(std::span<const float> scores, float m,
               std::vector<std::pair<std::int32_t, double>>* terms) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  std::array<double, kBlock> w;
  const double md = m;
  double total = 0.0;
  for (std::size_t begin = 0; begin < scores.size(); begin += kBlock) {
    const std::size_t len = std::min(kBlock, scores.size() - begin);
    kernels::exp_shifted_f64(scores.data() + begin, len, m, w.data());
    for (std::size_t j = 0; j < len; ++j) {
      const float s = scores[begin + j];
      if (s == kNegInf) continue;
      const double d = static_cast<double>(s) - md;
      double next;
      if (d >= kernels::kExpF64Min) {  // false for NaN too: those take std::exp's NaN
        const double e = w[j] * kMargin;
        const double lo = total + (w[j] - e), hi = total + (w[j] + e);
        next = lo == hi ? lo : total + std::exp(d);
      } else {
        const double exact = std::exp(d);
        if (!(exact > 0.0) && !std::isnan(exact)) continue;  // underflow: adds nothing
        next = total + exact;
      }
      total = next;
      if (terms != nullptr) terms->emplace_back(static_cast<std::int32_t>(begin + j), total);
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
