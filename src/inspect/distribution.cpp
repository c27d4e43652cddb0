// Softmax statistics in double precision: logits are float32, but sums over 150k terms and
// entropies are accumulated in double so that printed figures are accurate to their last digit.
// The arithmetic itself is decode's (log-sum-exp, entropy, ordering), so `next`, the trace and
// the inspection commands can never disagree on a number.
#include "inspect/distribution.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "decode/distribution.h"
#include "decode/generation_config.h"

namespace ls::inspect {

std::vector<std::int32_t> top_ids(std::span<const float> logits, std::size_t n) {
  const int limit = static_cast<int>(std::min<std::size_t>(n, logits.size()));
  return decode::ids_by_score_desc(logits, limit, /*finite_only=*/false);
}

DistributionSummary summarize_logits(std::span<const float> logits, double temperature,
                                     std::size_t top_n) {
  if (logits.empty()) fail("summarize_logits: no logits");
  decode::require_finite_logits(logits, std::size_t(-1));
  if (!(temperature >= decode::kMinTemperature) || !std::isfinite(temperature))
    fail("--temperature must be a finite number >= {}, got {}", decode::kMinTemperature,
         temperature);
  DistributionSummary s;
  s.temperature = temperature;
  const auto [mn, mx] = std::minmax_element(logits.begin(), logits.end());
  s.min_logit = *mn;
  s.max_logit = *mx;
  // Temperature 1 (the common case) uses the logits as they are; otherwise logit / T in float,
  // as transformers' temperature warper computes it.
  std::vector<float> scaled;
  std::span<const float> scores = logits;
  if (temperature != 1.0) {
    scaled.resize(logits.size());
    for (std::size_t i = 0; i < logits.size(); ++i)
      scaled[i] = static_cast<float>(static_cast<double>(logits[i]) / temperature);
    scores = scaled;
  }
  s.log_partition = decode::log_sum_exp(scores);
  s.entropy_nats = decode::entropy(scores);
  s.entropy_bits = s.entropy_nats / std::log(2.0);
  std::int64_t rank = 1;
  for (std::int32_t id : top_ids(logits, top_n)) {
    const auto i = static_cast<std::size_t>(id);
    const double lp = static_cast<double>(scores[i]) - s.log_partition;
    s.top.push_back({rank++, id, logits[i], std::exp(lp), lp});
  }
  return s;
}

}  // namespace ls::inspect
