// Softmax, log-sum-exp, entropy and ordering helpers over float32 score vectors (double math).
#include "decode/distribution.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "core/error.h"
#include "decode/exp_sum.h"
#include "kernels/ops.h"

namespace ls::decode {

namespace {
// The largest score, NaN skipped (what a loop of std::max(m, s) from -inf gives), in vectors.
float max_score(std::span<const float> scores) {
  return kernels::max_not_nan(scores.data(), scores.size());
}
}  // namespace

std::vector<double> softmax(std::span<const float> scores) {
  std::vector<double> p(scores.size(), 0.0);
  const float m = max_score(scores);
  if (m == -std::numeric_limits<float>::infinity()) return p;
  // Removed tokens (-inf) are skipped: after truncation they are nearly the whole vocabulary.
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  double total = 0.0;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (scores[i] == kNegInf) continue;
    p[i] = std::exp(static_cast<double>(scores[i]) - static_cast<double>(m));
    total += p[i];
  }
  for (double& v : p)
    if (v != 0.0) v /= total;  // most are removed tokens: 0 / total is 0 anyway
  return p;
}

SoftmaxNormalizer softmax_normalizer(std::span<const float> scores) {
  const float m = max_score(scores);
  SoftmaxNormalizer n{static_cast<double>(m), 0.0};
  if (m == -std::numeric_limits<float>::infinity()) return n;
  n.total = exp_sum(scores, m);
  return n;
}

double SoftmaxNormalizer::prob(float score) const {
  if (score == -std::numeric_limits<float>::infinity()) return 0.0;
  return std::exp(static_cast<double>(score) - max) / total;
}

double log_sum_exp(std::span<const float> scores) {
  const float m = max_score(scores);
  if (m == -std::numeric_limits<float>::infinity()) return -std::numeric_limits<double>::infinity();
  return static_cast<double>(m) + std::log(exp_sum(scores, m));
}

double entropy(std::span<const float> scores) {
  const double lse = log_sum_exp(scores);
  if (!std::isfinite(lse)) return 0.0;
  double h = 0.0;
  for (float s : scores) {
    if (s == -std::numeric_limits<float>::infinity()) continue;
    const double logp = static_cast<double>(s) - lse;
    const double p = std::exp(logp);
    if (p > 0.0) h -= p * logp;
  }
  return h;
}

std::int32_t count_candidates(std::span<const float> scores) {
  std::int32_t n = 0;
  for (float s : scores) n += s > -std::numeric_limits<float>::infinity() ? 1 : 0;
  return n;
}

void require_sortable(std::span<const float> scores, std::string_view stage) {
  std::size_t bad = 0, removed = 0;
  kernels::count_special(scores.data(), scores.size(), &bad, &removed);
  if (bad == 0) return;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (std::isnan(scores[i]) || scores[i] == std::numeric_limits<float>::infinity()) {
      fail(
          "{}: the score of token {} is {}; remove invalid values first "
          "(--remove-invalid-values, as transformers' InfNanRemoveLogitsProcessor does)",
          stage, i, scores[i]);
    }
  }
}

void require_finite_logits(std::span<const float> logits, std::size_t position,
                           std::string_view remedy) {
  // NaN or +inf has no softmax; -inf is an impossible token (scripted sources use it), unless
  // every token is. Bit tests in vectors (kernels/ops.h).
  std::size_t bad = 0, impossible = 0;
  kernels::count_special(logits.data(), logits.size(), &bad, &impossible);
  if (bad == 0 && impossible < logits.size()) return;
  std::size_t first = 0;
  while (first < logits.size() && !std::isnan(logits[first]) &&
         logits[first] != std::numeric_limits<float>::infinity())
    ++first;
  if (first == logits.size()) first = 0;  // all -inf
  const std::string where =
      position == std::size_t(-1) ? "" : fmt::format(" after position {}", position);
  fail(
      "the model's logits{} are not finite: {} of {} values are NaN or infinite (the first at "
      "token id {}: {}); the weights hold a NaN or infinity, or the activations overflowed "
      "(--debug-nonfinite names the first layer where one appears){}",
      where, bad + (bad == 0 ? impossible : 0), logits.size(), first, logits[first], remedy);
}

namespace {

// ids_by_score_desc with limit 1 (greedy decoding and `bench` ask for it once per token): the
// largest score that is not NaN, then the first id holding it (two vector passes, kernels/ops.h),
// so the lower id wins ties as in the sort. When every score is NaN or -inf, the sort's first is
// id 0, or none with finite_only.
std::vector<std::int32_t> best_id(std::span<const float> scores, bool finite_only) {
  const float best = kernels::max_not_nan(scores.data(), scores.size());
  if (best == -std::numeric_limits<float>::infinity()) {
    if (finite_only || scores.empty()) return {};
    return {0};
  }
  return {static_cast<std::int32_t>(kernels::first_equal(scores.data(), scores.size(), best))};
}

}  // namespace

std::vector<std::int32_t> ids_by_score_desc(std::span<const float> scores, int limit,
                                            bool finite_only) {
  if (limit == 1) return best_id(scores, finite_only);
  std::vector<std::int32_t> ids;
  ids.reserve(scores.size());
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (finite_only && !(scores[i] > -std::numeric_limits<float>::infinity())) continue;
    ids.push_back(static_cast<std::int32_t>(i));
  }
  // NaN sorts as -inf so that the order stays a strict weak ordering whatever the input.
  auto key = [&](std::int32_t i) {
    return std::isnan(scores[i]) ? -std::numeric_limits<float>::infinity() : scores[i];
  };
  auto before = [&](std::int32_t a, std::int32_t b) {
    const float ka = key(a), kb = key(b);
    return ka > kb || (ka == kb && a < b);
  };
  if (limit >= 0 && static_cast<std::size_t>(limit) < ids.size()) {
    std::partial_sort(ids.begin(), ids.begin() + limit, ids.end(), before);
    ids.resize(static_cast<std::size_t>(limit));
  } else {
    std::sort(ids.begin(), ids.end(), before);
  }
  return ids;
}

std::vector<std::pair<std::int32_t, double>> top_logprobs(std::span<const float> scores, int k,
                                                          double lse) {
  std::vector<std::pair<std::int32_t, double>> best;  // sorted by score, descending
  if (k <= 0) return best;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const float s = scores[i];
    if (!std::isfinite(s)) continue;
    if (best.size() == static_cast<std::size_t>(k) && !(s > best.back().second)) continue;
    auto at = std::upper_bound(best.begin(), best.end(), s,
                               [](float v, const auto& e) { return v > e.second; });
    best.insert(at, {static_cast<std::int32_t>(i), s});
    if (best.size() > static_cast<std::size_t>(k)) best.pop_back();
  }
  for (auto& e : best) e.second -= lse;
  return best;
}

std::int64_t rank_of(std::span<const float> scores, std::int32_t id) {
  const auto at = static_cast<std::size_t>(id);
  std::int64_t rank = 1;
  for (std::size_t i = 0; i < scores.size(); ++i)
    rank += scores[i] > scores[at] || (scores[i] == scores[at] && i < at);
  return rank;
}

std::vector<std::int64_t> ranks_of(std::span<const float> scores,
                                   std::span<const std::int32_t> ids) {
  // The asked ids by score: each score s counts once for every asked id scoring below it (a
  // difference array over that order), and for an asked id of equal score and higher id.
  std::vector<std::size_t> order(ids.size());
  for (std::size_t k = 0; k < ids.size(); ++k) order[k] = k;
  const auto score = [&](std::size_t k) { return scores[static_cast<std::size_t>(ids[k])]; };
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return score(x) < score(y) || (score(x) == score(y) && ids[x] < ids[y]);
  });
  std::vector<float> sorted;
  for (std::size_t k : order) sorted.push_back(score(k));
  std::vector<std::int64_t> below(ids.size() + 1, 0);  // difference array over `order`
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const float s = scores[i];
    const auto lo = std::lower_bound(sorted.begin(), sorted.end(), s) - sorted.begin();
    ++below[0];
    --below[static_cast<std::size_t>(lo)];
    // Equal scores: ids above i rank after it.
    for (auto k = static_cast<std::size_t>(lo); k < sorted.size() && sorted[k] == s; ++k)
      if (static_cast<std::size_t>(ids[order[k]]) > i) ++below[k], --below[k + 1];
  }
  std::vector<std::int64_t> ranks(ids.size());
  std::int64_t run = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    run += below[k];
    ranks[order[k]] = 1 + run;
  }
  return ranks;
}

}  // namespace ls::decode
