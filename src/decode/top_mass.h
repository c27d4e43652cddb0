// The smallest set of best-scoring tokens whose probability mass reaches p, found without
// sorting the vocabulary: scores are counted into buckets by their distance from the maximum,
// with their weights; the bucket where the mass crosses p is the only one sorted. The crossing
// is decided from sums that are within 1e-9 of the exact ones; when p lies closer than that to
// a cumulative mass, no answer is given and the caller sorts (top_p.cpp keeps that path).
#pragma once

#include <cstdint>
#include <span>

namespace ls::decode {

// The order of tokens with equal scores: lower id first (llama.cpp's descending sort) or higher
// id first (the reverse of transformers' stable ascending sort).
enum class TieOrder { lower_id_first, higher_id_first };

// Applies "keep the best tokens, in score order (ties as `ties`), up to and including the first
// at which the cumulative probability is >= p, and at least `min_keep`" to the tokens scoring
// above -inf: the others get -inf. Returns false, with the scores untouched, when the crossing
// is too close to call. Scores must hold no NaN or +inf.
bool top_mass(std::span<float> scores, double p, int min_keep, TieOrder ties);

}  // namespace ls::decode
