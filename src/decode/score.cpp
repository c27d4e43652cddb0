// Per-token log-probabilities of a continuation (see score.h).
#include "decode/score.h"

#include <cmath>

#include "core/error.h"
#include "decode/distribution.h"

namespace ls::decode {

namespace {

void check_ids(std::span<const std::int32_t> continuation, std::int32_t vocab) {
  if (continuation.empty()) fail("score: the text to score is empty");
  for (std::int32_t t : continuation) {
    if (t < 0 || t >= vocab) fail("score: token id {} is outside the vocabulary of {}", t, vocab);
  }
}

TokenLogprob score_token(std::span<const float> scores, std::int32_t t) {
  TokenLogprob tl;
  tl.id = t;
  tl.logit = scores[t];
  tl.logprob = static_cast<double>(scores[t]) - log_sum_exp(scores);
  tl.top_id = ids_by_score_desc(scores, 1, false).at(0);
  tl.top_logit = scores[tl.top_id];
  tl.rank = static_cast<std::int32_t>(rank_of(scores, t));
  return tl;
}

void finish(ScoreResult& r) {
  for (const auto& t : r.tokens) r.sum += t.logprob;
  r.mean = r.sum / static_cast<double>(r.tokens.size());
  r.perplexity = std::exp(-r.mean);
}

}  // namespace

ScoreResult score_rows(std::span<const float> rows, std::int32_t vocab,
                       std::span<const std::int32_t> continuation) {
  check_ids(continuation, vocab);
  const auto v = static_cast<std::size_t>(vocab);
  if (rows.size() != continuation.size() * v) {
    fail("score: {} logits for {} tokens of a vocabulary of {}", rows.size(), continuation.size(),
         vocab);
  }
  ScoreResult result;
  for (std::size_t i = 0; i < continuation.size(); ++i) {
    result.tokens.push_back(score_token(rows.subspan(i * v, v), continuation[i]));
  }
  finish(result);
  return result;
}

ScoreResult score_continuation(LogitsSource& source, std::span<const std::int32_t> prompt,
                               std::span<const std::int32_t> continuation, int seq) {
  if (prompt.empty()) fail("score: the prompt is empty; the first token has no context to score");
  check_ids(continuation, source.vocab_size());
  ScoreResult result;
  source.release(seq);
  std::span<const float> scores = source.feed(seq, prompt);
  for (std::size_t i = 0; i < continuation.size(); ++i) {
    result.tokens.push_back(score_token(scores, continuation[i]));
    if (i + 1 < continuation.size()) scores = source.feed(seq, continuation.subspan(i, 1));
  }
  finish(result);
  return result;
}

}  // namespace ls::decode
