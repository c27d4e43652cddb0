// Min-p truncation (see min_p.h).
#include "decode/min_p.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "decode/distribution.h"
#include "kernels/ops.h"

namespace ls::decode {

MinP::MinP(double min_p, int min_tokens_to_keep) : min_p_(min_p), min_keep_(min_tokens_to_keep) {
  if (!(min_p >= 0.0 && min_p <= 1.0)) fail("min_p must be in [0, 1], got {}", min_p);
}

void MinP::apply(std::span<float> scores, const TokenHistory& history) {
  require_sortable(scores, "min_p");
  // exp(d) / T < min_p / T, each side rounded a few times: any d further than this from
  // log(min_p) is on a known side. A min_p this small would need subnormal probabilities.
  constexpr double kMargin = 1e-9;
  const float m = kernels::max_not_nan(scores.data(), scores.size());
  if ((min_p_ > 0.0 && min_p_ < 1e-300) || m == -std::numeric_limits<float>::infinity())
    return apply_exact(scores, history);
  const double cut = std::log(min_p_), md = m;
  for (const float s : scores) {
    const double d = static_cast<double>(s) - md;  // -inf for removed tokens: far below the cut
    if (d != 0.0 && std::abs(d - cut) <= kMargin) return apply_exact(scores, history);
  }
  // The max scores prob 1 / T, never below min_p (<= 1) times itself: d == 0 is always kept.
  std::vector<char> protect(scores.size(), 0);
  for (std::int32_t id : ids_by_score_desc(scores, min_keep_, false)) protect[id] = 1;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (static_cast<double>(scores[i]) - md < cut && !protect[i]) scores[i] = kFilterValue;
  }
}

void MinP::apply_exact(std::span<float> scores, const TokenHistory& /*history*/) {
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
