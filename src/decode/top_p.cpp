// Top-p truncation under the transformers and llama.cpp rules (see top_p.h).
#include "decode/top_p.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "decode/distribution.h"
#include "decode/top_mass.h"

namespace ls::decode {

TopP::TopP(double p, int min_tokens_to_keep, TopPRule rule)
    : p_(p), min_keep_(min_tokens_to_keep), rule_(rule) {
  if (!(p >= 0.0 && p <= 1.0)) fail("top_p must be in [0, 1], got {}", p);
  if (min_tokens_to_keep < 1) fail("top_p: min_tokens_to_keep must be >= 1, got {}", min_keep_);
}

namespace {
// Pools this small are sorted: cheaper than a pass of buckets over the whole vocabulary.
constexpr std::int32_t kSortBelow = 2048;
}  // namespace

void TopP::apply(std::span<float> scores, const TokenHistory& history) {
  require_sortable(scores, "top_p");
  if (count_candidates(scores) >= kSortBelow) {
    const TieOrder ties =
        rule_ == TopPRule::hf ? TieOrder::higher_id_first : TieOrder::lower_id_first;
    if (top_mass(scores, p_, min_keep_, ties)) return;
  }
  apply_sorted(scores, history);
}

void TopP::apply_sorted(std::span<float> scores, const TokenHistory& /*history*/) {
  const SoftmaxNormalizer softmax = softmax_normalizer(scores);
  // Tokens already at -inf have probability 0 and would be removed first anyway: skip them.
  std::vector<std::int32_t> order = ids_by_score_desc(scores, -1, /*finite_only=*/true);
  const std::size_t n = order.size();
  std::vector<char> remove(n, 0);
  if (rule_ == TopPRule::hf) {
    // Ascending by score, ties by ascending id: what a stable ascending sort of the vocabulary
    // gives (torch.sort on small rows behaves so), so the lower id of a tie is removed first.
    std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
      return scores[a] < scores[b] || (scores[a] == scores[b] && a < b);
    });
    double cumulative = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      cumulative += softmax.prob(scores[order[i]]);
      remove[i] = cumulative <= 1.0 - p_ ? 1 : 0;
    }
    const std::size_t keep = std::min<std::size_t>(static_cast<std::size_t>(min_keep_), n);
    for (std::size_t i = n - keep; i < n; ++i) remove[i] = 0;
  } else {
    double cumulative = 0.0;
    std::size_t last = n;
    for (std::size_t i = 0; i < n; ++i) {
      cumulative += softmax.prob(scores[order[i]]);
      if (cumulative >= p_ && i + 1 >= static_cast<std::size_t>(min_keep_)) {
        last = i + 1;
        break;
      }
    }
    for (std::size_t i = last; i < n; ++i) remove[i] = 1;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (remove[i]) scores[order[i]] = kFilterValue;
  }
}

std::string TopP::describe() const {
  return fmt::format("top_p(p={}, min_keep={}, {})", p_, min_keep_,
                     rule_ == TopPRule::hf ? "remove while cum<=1-p" : "keep until cum>=p");
}

}  // namespace ls::decode
