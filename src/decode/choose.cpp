// Greedy and inverse-CDF sampling (see choose.h).
#include "decode/choose.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "decode/distribution.h"

namespace ls::decode {

namespace {
float checked_max(std::span<const float> scores, const char* what) {
  require_sortable(scores, what);
  float m = -std::numeric_limits<float>::infinity();
  for (float s : scores) m = std::max(m, s);
  if (m == -std::numeric_limits<float>::infinity()) {
    fail(
        "{}: every token was removed (all {} scores are -inf); loosen the truncation or the "
        "banned tokens",
        what, scores.size());
  }
  return m;
}
}  // namespace

std::int32_t choose_greedy(std::span<const float> scores) {
  const float m = checked_max(scores, "greedy");
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (scores[i] == m) return static_cast<std::int32_t>(i);
  }
  return 0;  // unreachable: m is one of the scores
}

std::int32_t choose_sample(std::span<const float> scores, double draw, double* log_sum_exp) {
  const double m = checked_max(scores, "sample");
  if (!(draw >= 0.0 && draw < 1.0)) fail("sample: the draw must be in [0, 1), got {}", draw);
  // Weights of the remaining candidates only (after truncation, a handful of the vocabulary),
  // in a list kept per thread: without truncation it is the whole vocabulary on every step.
  thread_local std::vector<std::pair<std::int32_t, double>> weights;
  weights.clear();
  double total = 0.0;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (scores[i] == -std::numeric_limits<float>::infinity()) continue;
    const double w = std::exp(static_cast<double>(scores[i]) - m);
    if (w <= 0.0) continue;
    weights.emplace_back(static_cast<std::int32_t>(i), w);
    total += w;
  }
  if (log_sum_exp != nullptr) *log_sum_exp = m + std::log(total);
  const double target = draw * total;
  double cumulative = 0.0;
  for (const auto& [id, w] : weights) {
    cumulative += w;
    if (cumulative > target) return id;
  }
  return weights.back().first;  // rounding left the target at the very end
}

}  // namespace ls::decode
