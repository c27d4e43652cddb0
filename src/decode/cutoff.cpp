// Epsilon and eta truncation (see cutoff.h).
#include "decode/cutoff.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "decode/distribution.h"

namespace ls::decode {

namespace {

// Removes tokens with probability < threshold unless they score >= the min_keep-th best score.
void cut_below(std::span<float> scores, const std::vector<double>& probs, double threshold,
               int min_keep) {
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(min_keep), scores.size());
  std::vector<float> copy(scores.begin(), scores.end());
  std::nth_element(copy.begin(), copy.begin() + static_cast<long>(k - 1), copy.end(),
                   std::greater<float>());
  const float kth = copy[k - 1];
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (probs[i] < threshold && scores[i] < kth) scores[i] = kFilterValue;
  }
}

}  // namespace

EpsilonCutoff::EpsilonCutoff(double epsilon, int min_tokens_to_keep)
    : epsilon_(epsilon), min_keep_(min_tokens_to_keep) {
  if (!(epsilon > 0.0 && epsilon < 1.0)) fail("epsilon_cutoff must be in (0, 1), got {}", epsilon);
  if (min_tokens_to_keep < 1) fail("epsilon_cutoff: min_tokens_to_keep must be >= 1");
}

void EpsilonCutoff::apply(std::span<float> scores, const TokenHistory& /*history*/) {
  require_sortable(scores, "epsilon_cutoff");
  cut_below(scores, softmax(scores), epsilon_, min_keep_);
}

std::string EpsilonCutoff::describe() const {
  return fmt::format("epsilon_cutoff(epsilon={}, min_keep={})", epsilon_, min_keep_);
}

EtaCutoff::EtaCutoff(double eta, int min_tokens_to_keep)
    : eta_(eta), min_keep_(min_tokens_to_keep) {
  if (!(eta > 0.0 && eta < 1.0)) fail("eta_cutoff must be in (0, 1), got {}", eta);
  if (min_tokens_to_keep < 1) fail("eta_cutoff: min_tokens_to_keep must be >= 1");
}

void EtaCutoff::apply(std::span<float> scores, const TokenHistory& /*history*/) {
  require_sortable(scores, "eta_cutoff");
  const double h = entropy(scores);
  const double threshold = std::min(eta_, std::sqrt(eta_) * std::exp(-h));
  cut_below(scores, softmax(scores), threshold, min_keep_);
}

std::string EtaCutoff::describe() const {
  return fmt::format("eta_cutoff(eta={}, min_keep={})", eta_, min_keep_);
}

}  // namespace ls::decode
