// Per-token log-probabilities of a continuation (see score.h).
#include "decode/score.h"

#include <cmath>

#include "core/error.h"
#include "decode/distribution.h"

namespace ls::decode {

ScoreResult score_continuation(LogitsSource& source, std::span<const std::int32_t> prompt,
                               std::span<const std::int32_t> continuation, int seq) {
  if (prompt.empty()) fail("score: the prompt is empty; the first token has no context to score");
  if (continuation.empty()) fail("score: the text to score is empty");
  const std::int32_t vocab = source.vocab_size();
  for (std::int32_t t : continuation) {
    if (t < 0 || t >= vocab) fail("score: token id {} is outside the vocabulary of {}", t, vocab);
  }
  ScoreResult result;
  source.reset(seq);
  std::span<const float> scores = source.feed(seq, prompt);
  for (std::size_t i = 0; i < continuation.size(); ++i) {
    const std::int32_t t = continuation[i];
    TokenLogprob tl;
    tl.id = t;
    tl.logit = scores[t];
    tl.logprob = static_cast<double>(scores[t]) - log_sum_exp(scores);
    const auto best = ids_by_score_desc(scores, 1, false);
    tl.top_id = best.empty() ? 0 : best[0];
    tl.top_logit = scores[tl.top_id];
    tl.rank = 1;
    for (std::int32_t id = 0; id < vocab; ++id) {
      if (scores[id] > scores[t] || (scores[id] == scores[t] && id < t)) ++tl.rank;
    }
    result.sum += tl.logprob;
    result.tokens.push_back(tl);
    if (i + 1 < continuation.size()) scores = source.feed(seq, continuation.subspan(i, 1));
  }
  result.mean = result.sum / static_cast<double>(continuation.size());
  result.perplexity = std::exp(-result.mean);
  return result;
}

}  // namespace ls::decode
