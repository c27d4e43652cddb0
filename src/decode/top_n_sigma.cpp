// Top-n-sigma truncation (see top_n_sigma.h).
#include "decode/top_n_sigma.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "decode/distribution.h"

namespace ls::decode {

TopNSigma::TopNSigma(double n) : n_(n) {
  if (!std::isfinite(n) || n <= 0.0) fail("top_n_sigma must be a finite number > 0, got {}", n);
}

void TopNSigma::apply(std::span<float> scores, const TokenHistory& /*history*/) {
  require_sortable(scores, "top_n_sigma");
  double max = -std::numeric_limits<double>::infinity(), sum = 0;
  std::size_t n = 0;
  for (const float s : scores)
    if (s > kFilterValue) max = std::max(max, static_cast<double>(s)), sum += s, ++n;
  if (n <= 1) return;
  const double mean = sum / static_cast<double>(n);
  double squares = 0;
  for (const float s : scores)
    if (s > kFilterValue) squares += (s - mean) * (s - mean);
  const double cut = max - n_ * std::sqrt(squares / static_cast<double>(n));
  for (float& s : scores)
    if (static_cast<double>(s) < cut) s = kFilterValue;
}

std::string TopNSigma::describe() const {
  return fmt::format("top_n_sigma(n={})", n_);
}

}  // namespace ls::decode
