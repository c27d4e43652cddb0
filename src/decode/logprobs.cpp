// One token's log-probability entry (see logprobs.h).
#include "decode/logprobs.h"

#include "decode/distribution.h"

namespace ls::decode {

TokenLogprob token_logprob(std::span<const float> scores, double lse, std::int32_t token, int top,
                           bool rank, std::span<const std::int32_t> named) {
  TokenLogprob t;
  t.token = token;
  t.logprob = static_cast<double>(scores[static_cast<std::size_t>(token)]) - lse;
  t.top = top_logprobs(scores, top, lse);
  if (rank) t.rank = rank_of(scores, token);
  if (!named.empty()) {
    const std::vector<std::int64_t> ranks = ranks_of(scores, named);
    for (std::size_t k = 0; k < named.size(); ++k)
      t.named.push_back({named[k],
                         static_cast<double>(scores[static_cast<std::size_t>(named[k])]) - lse,
                         ranks[k]});
  }
  return t;
}

}  // namespace ls::decode
