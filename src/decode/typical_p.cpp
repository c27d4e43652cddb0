// Locally typical truncation (see typical_p.h).
#include "decode/typical_p.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "decode/distribution.h"

namespace ls::decode {

TypicalP::TypicalP(double mass, int min_tokens_to_keep)
    : mass_(mass), min_keep_(min_tokens_to_keep) {
  if (!(mass > 0.0 && mass < 1.0)) fail("typical_p must be in (0, 1) for its stage, got {}", mass);
}

void TypicalP::apply(std::span<float> scores, const TokenHistory& /*history*/) {
  require_sortable(scores, "typical_p");
  const double lse = log_sum_exp(scores);
  if (!std::isfinite(lse)) return;
  const std::size_t n = scores.size();
  std::vector<double> logp(n), p(n);
  double ent = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    logp[i] = static_cast<double>(scores[i]) - lse;
    p[i] = std::exp(logp[i]);
    if (p[i] > 0.0) ent -= p[i] * logp[i];  // transformers' nansum skips the -inf * 0 terms
  }
  std::vector<double> shifted(n);
  for (std::size_t i = 0; i < n; ++i) shifted[i] = std::abs(-logp[i] - ent);
  std::vector<std::int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int32_t a, std::int32_t b) { return shifted[a] < shifted[b]; });
  std::size_t last = 0;  // the number of sorted tokens whose cumulative mass is < typical_p
  double cumulative = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    cumulative += p[order[i]];
    if (cumulative < mass_) ++last;
  }
  last = std::min(last, n - 1);
  const double cut = shifted[order[last]];
  for (std::size_t i = 0; i < n; ++i) {
    const bool protected_rank = i < static_cast<std::size_t>(min_keep_);
    if (shifted[order[i]] > cut && !protected_rank) scores[order[i]] = kFilterValue;
  }
}

std::string TypicalP::describe() const {
  return fmt::format("typical_p(mass={}, min_keep={})", mass_, min_keep_);
}

}  // namespace ls::decode
