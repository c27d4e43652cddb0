// Softmax statistics in double precision: logits are float32, but sums over 150k terms and
// entropies are accumulated in double so that printed figures are accurate to their last digit.
#include "inspect/distribution.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace ls {

std::vector<std::int32_t> top_ids(std::span<const float> logits, std::size_t n) {
  std::vector<std::int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  n = std::min(n, ids.size());
  auto better = [&](std::int32_t a, std::int32_t b) {
    const float la = logits[static_cast<std::size_t>(a)], lb = logits[static_cast<std::size_t>(b)];
    if (std::isnan(la) != std::isnan(lb)) return std::isnan(lb);  // NaN sorts last
    return la > lb || (la == lb && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), better);
  ids.resize(n);
  return ids;
}

DistributionSummary summarize_logits(std::span<const float> logits, double temperature,
                                     std::size_t top_n) {
  if (logits.empty()) fail("summarize_logits: no logits");
  if (!(temperature > 0) || !std::isfinite(temperature))
    fail("--temperature must be a positive number, got {}", temperature);
  DistributionSummary s;
  s.temperature = temperature;
  const auto [mn, mx] = std::minmax_element(logits.begin(), logits.end());
  s.min_logit = *mn;
  s.max_logit = *mx;
  const double m = static_cast<double>(*mx) / temperature;
  double z = 0;
  for (float l : logits) z += std::exp(static_cast<double>(l) / temperature - m);
  s.log_partition = m + std::log(z);
  double h = 0;
  for (float l : logits) {
    const double lp = static_cast<double>(l) / temperature - s.log_partition;
    const double p = std::exp(lp);
    if (p > 0) h -= p * lp;
  }
  s.entropy_nats = h;
  s.entropy_bits = h / std::log(2.0);
  std::int64_t rank = 1;
  for (std::int32_t id : top_ids(logits, top_n)) {
    const float l = logits[static_cast<std::size_t>(id)];
    const double lp = static_cast<double>(l) / temperature - s.log_partition;
    s.top.push_back({rank++, id, l, std::exp(lp), lp});
  }
  return s;
}

}  // namespace ls
