// Greedy and inverse-CDF sampling (see choose.h).
#include "decode/choose.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "decode/distribution.h"
#include "decode/exp_sum.h"
#include "kernels/ops.h"

namespace ls::decode {

namespace {
float checked_max(std::span<const float> scores, const char* what) {
  require_sortable(scores, what);
  const float m = kernels::max_not_nan(scores.data(), scores.size());
  if (m == -std::numeric_limits<float>::infinity()) {
    fail(
        "{}: every token was removed (all {} scores are -inf); loosen the truncation, the "
        "banned tokens, min_new_tokens or the grammar (a grammar whose text is complete allows "
        "only end-of-sequence tokens)",
        what, scores.size());
  }
  return m;
}
}  // namespace

std::int32_t choose_greedy(std::span<const float> scores) {
  const float m = checked_max(scores, "greedy");
  return static_cast<std::int32_t>(kernels::first_equal(scores.data(), scores.size(), m));
}

std::int32_t choose_sample(std::span<const float> scores, double draw, double* log_sum_exp) {
  const double m = checked_max(scores, "sample");
  if (!(draw >= 0.0 && draw < 1.0)) fail("sample: the draw must be in [0, 1), got {}", draw);
  // The running total of the weights after each token (a removed one leaves it as it was), in
  // a buffer kept per thread.
  thread_local std::vector<double> cumulative;
  cumulative.resize(scores.size());
  const double total = exp_sum(scores, static_cast<float>(m), cumulative.data());
  if (log_sum_exp != nullptr) *log_sum_exp = m + std::log(total);
  const double target = draw * total;
  // The first token whose running total exceeds the target: its weight raised the total, so it
  // is a candidate (the totals never decrease).
  const auto first = std::upper_bound(cumulative.begin(), cumulative.end(), target);
  if (first != cumulative.end()) return static_cast<std::int32_t>(first - cumulative.begin());
  // Rounding left the target at the very end: the last token of positive weight.
  for (std::size_t i = scores.size(); i-- > 0;)
    if (scores[i] != -std::numeric_limits<float>::infinity() &&
        std::exp(static_cast<double>(scores[i]) - m) > 0.0)
      return static_cast<std::int32_t>(i);
  return 0;  // unreachable: the max scores weight 1
}

}  // namespace ls::decode
