// Token choice from final scores. Greedy is the argmax with the lowest id winning ties (as
// torch.argmax returns the first maximum). Sampling is an inverse-CDF walk: the weights
// exp(score - max) in double, in ascending token-id order, and the first token whose cumulative
// weight exceeds draw * total is chosen, so one uniform draw in [0, 1) replays a step exactly.
#pragma once

#include <cstdint>
#include <span>

namespace ls::decode {

// Both throw ls::Error when no token is left (all -inf) or a score is NaN or +inf.
std::int32_t choose_greedy(std::span<const float> scores);
// `log_sum_exp`, when given, receives log-sum-exp(scores) from the same weights, bit for bit
// what log_sum_exp() computes (the same max, the same sum in the same order).
std::int32_t choose_sample(std::span<const float> scores, double draw,
                           double* log_sum_exp = nullptr);

}  // namespace ls::decode
