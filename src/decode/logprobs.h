// Token log-probabilities as callers report them (the server's logprobs, top_logprobs,
// prompt_logprobs, token_ids_logprob and n_probs): which ones a caller wants, one plain type
// from the request to the sampler, and one token's entry (its logprob, the best alternatives
// in one order with one tie rule, ranks) computed in one place.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace ls::decode {

// Which log-probabilities a caller wants for each token. Default: none.
struct LogprobRequest {
  bool wanted = false;
  int top = 0;             // best alternatives per token (0: the token's own logprob only)
  bool processed = false;  // under the distribution drawn from (after the chain), not the raw one
  // The raw distribution's log-sum-exp is needed: one pass over the vocabulary per token that
  // the sampler skips otherwise.
  bool needs_raw() const { return wanted && !processed; }
};

// A token's logprob and 1-based rank in one distribution (ties: the lower id first).
struct RankedLogprob {
  std::int32_t token = -1;
  double logprob = 0;
  std::int64_t rank = 0;
};

struct TokenLogprob {
  std::int32_t token = -1;
  double logprob = 0;
  std::vector<std::pair<std::int32_t, double>> top;  // best first (top_logprobs' order)
  std::int64_t rank = 0;                             // of `token` when asked (0: not computed)
  std::vector<RankedLogprob> named;                  // the named ids, in the order asked
};

// `token`'s entry under `scores`, whose log-sum-exp is `lse`: its logprob (score - lse, the
// sampler's own arithmetic, so the same bits), its `top` best alternatives (top_logprobs: finite
// scores, lower id first on ties), its rank when `rank` is set, and each of `named`'s logprob
// and rank.
TokenLogprob token_logprob(std::span<const float> scores, double lse, std::int32_t token, int top,
                           bool rank, std::span<const std::int32_t> named = {});

}  // namespace ls::decode
