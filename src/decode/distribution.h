// Probability helpers shared by the warpers, samplers and the trace. Probabilities are computed in
// double from float32 scores (max-subtracted softmax), -inf scores get probability 0. Warpers that
// sort call require_sortable() first: NaN or +inf scores are an error, not undefined behaviour.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace ls::decode {

// softmax(scores) in double; -inf entries get 0. All entries -inf gives all zeros.
std::vector<double> softmax(std::span<const float> scores);
// softmax() one token at a time: the same max and sum (in index order), so prob(s) has exactly
// softmax's bits, without a vocabulary-sized vector when only a few candidates are left.
struct SoftmaxNormalizer {
  double max = 0, total = 0;
  double prob(float score) const;
};
SoftmaxNormalizer softmax_normalizer(std::span<const float> scores);
// log(sum(exp(scores))) in double; -inf when every score is -inf.
double log_sum_exp(std::span<const float> scores);
// Shannon entropy in nats of softmax(scores).
double entropy(std::span<const float> scores);
// The number of tokens still in the pool (score > -inf).
std::int32_t count_candidates(std::span<const float> scores);
// Throws ls::Error naming `stage` if a score is NaN or +inf (those have no ordering/softmax).
void require_sortable(std::span<const float> scores, std::string_view stage);
// Throws ls::Error if the model's raw logits at `position` (the token they follow) hold a NaN or
// an infinity: a broken weight or an overflow, never a distribution to print or sample from.
// `remedy` is added to the message (how to go on anyway, where there is a way); a position of
// std::size_t(-1) is left out.
void require_finite_logits(std::span<const float> logits, std::size_t position,
                           std::string_view remedy = "");

// 1-based rank of `id`: 1 + the ids ordered before it (a higher score, or an equal one and a
// lower id), the order ids_by_score_desc lists them in.
std::int64_t rank_of(std::span<const float> scores, std::int32_t id);
// rank_of for each of `ids` in one pass over the scores (O(V log ids) rather than O(V ids)).
std::vector<std::int64_t> ranks_of(std::span<const float> scores,
                                   std::span<const std::int32_t> ids);

// Token ids ordered by score descending; ties broken by the lower id first. Only tokens with a
// score > -inf are listed when `finite_only` is set. `limit` < 0 means all.
std::vector<std::int32_t> ids_by_score_desc(std::span<const float> scores, int limit,
                                            bool finite_only);

// The `k` best finite scores (lower id first on ties), best first, as log-probabilities under
// `lse` (score - lse): OpenAI's top_logprobs. One pass that keeps the k best seen so far.
std::vector<std::pair<std::int32_t, double>> top_logprobs(std::span<const float> scores, int k,
                                                          double lse);

}  // namespace ls::decode
