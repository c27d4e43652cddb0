// Top-k truncation with either tie rule (see top_k.h).
#include "decode/top_k.h"

#include <algorithm>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "decode/distribution.h"

namespace ls::decode {

namespace {

// The k-th largest score (no NaN). For the usual small k a min-heap of the k best seen so far
// is one comparison per token, where nth_element copies and partitions the whole vocabulary;
// both give the same value.
float kth_largest(std::span<const float> scores, std::size_t k) {
  if (k > 512) {
    std::vector<float> copy(scores.begin(), scores.end());
    std::nth_element(copy.begin(), copy.begin() + static_cast<long>(k - 1), copy.end(),
                     std::greater<float>());
    return copy[k - 1];
  }
  std::vector<float> heap(scores.begin(), scores.begin() + static_cast<long>(k));
  std::make_heap(heap.begin(), heap.end(), std::greater<float>());  // front: the smallest kept
  for (std::size_t i = k; i < scores.size(); ++i) {
    if (!(scores[i] > heap.front())) continue;
    std::pop_heap(heap.begin(), heap.end(), std::greater<float>());
    heap.back() = scores[i];
    std::push_heap(heap.begin(), heap.end(), std::greater<float>());
  }
  return heap.front();
}

}  // namespace

TopK::TopK(int k, int min_tokens_to_keep, bool keep_ties)
    : k_(std::max(k, min_tokens_to_keep)), keep_ties_(keep_ties) {
  if (k <= 0) fail("top_k must be > 0 for the top_k stage, got {}", k);
}

void TopK::apply(std::span<float> scores, const TokenHistory& /*history*/) {
  if (static_cast<std::size_t>(k_) >= scores.size()) return;
  require_sortable(scores, "top_k");
  const auto k = static_cast<std::size_t>(k_);
  if (keep_ties_) {
    const float kth = kth_largest(scores, k);
    for (float& s : scores) {
      if (s < kth) s = kFilterValue;
    }
    return;
  }
  const auto keep = ids_by_score_desc(scores, k_, /*finite_only=*/false);
  std::vector<char> kept(scores.size(), 0);
  for (std::int32_t id : keep) kept[id] = 1;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (!kept[i]) scores[i] = kFilterValue;
  }
}

std::string TopK::describe() const {
  return fmt::format("top_k(k={}, {})", k_, keep_ties_ ? "keep ties" : "exactly k");
}

}  // namespace ls::decode
