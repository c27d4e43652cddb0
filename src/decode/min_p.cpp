// Min-p truncation (see min_p.h).
#include "decode/min_p.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "decode/distribution.h"

namespace ls::decode {

MinP::MinP(double min_p, int min_tokens_to_keep) : min_p_(min_p), min_keep_(min_tokens_to_keep) {
  if (!(min_p >= 0.0 && min_p <= 1.0)) fail("min_p must be in [0, 1], got {}", min_p);
}

void MinP::apply(std::span<float> scores, const TokenHistory& /*history*/) {
  require_sortable(scores, "min_p");
  const std::vector<double> probs = softmax(scores);
  const double top = *std::max_element(probs.begin(), probs.end());
  const double threshold = min_p_ * top;
  // The min_tokens_to_keep best tokens (ties: lower id) survive whatever their probability.
  std::vector<char> protect(scores.size(), 0);
  for (std::int32_t id : ids_by_score_desc(scores, min_keep_, false)) protect[id] = 1;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (probs[i] < threshold && !protect[i]) scores[i] = kFilterValue;
  }
}

std::string MinP::describe() const {
  return fmt::format("min_p(p={}, min_keep={})", min_p_, min_keep_);
}

}  // namespace ls::decode
