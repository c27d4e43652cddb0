// Summary of a next-token distribution from raw logits: softmax at a temperature (computed in
// double, log-sum-exp stabilised), entropy in nats and bits, logit range and the top-N table.
// This is what `next` prints and what sweep/compare build on.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ls::inspect {

struct TopEntry {
  std::int64_t rank;  // 1-based
  std::int32_t id;
  float logit;     // raw, before temperature
  double prob;     // at the temperature
  double logprob;  // natural log, at the temperature
};

struct DistributionSummary {
  double temperature = 1.0;
  float min_logit = 0, max_logit = 0;
  double log_partition = 0;  // log(sum(exp(logit / T)))
  double entropy_nats = 0, entropy_bits = 0;
  std::vector<TopEntry> top;
};

// Sorted by logit descending; equal logits by lower id first (the greedy tie rule).
// Throws if temperature is not a positive finite number or logits is empty.
DistributionSummary summarize_logits(std::span<const float> logits, double temperature,
                                     std::size_t top_n);

// Ids of the n largest logits in that order (ties: lower id first).
std::vector<std::int32_t> top_ids(std::span<const float> logits, std::size_t n);

}  // namespace ls::inspect
