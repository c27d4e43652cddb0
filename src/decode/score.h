// Scoring a given continuation: the log-probability the model assigns to each of its tokens after
// the prompt (log_softmax of the raw logits, like transformers' compute_transition_scores with
// normalize_logits=True and no processors), their sum, mean and the perplexity exp(-mean).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "decode/logits_source.h"

namespace ls::decode {

struct TokenLogprob {
  std::int32_t id = 0;
  float logit = 0;
  double logprob = 0;
  std::int32_t rank = 0;    // 1 = the model's top choice (ties: lower id first)
  std::int32_t top_id = 0;  // the model's top choice at that position
  float top_logit = 0;
};

struct ScoreResult {
  std::vector<TokenLogprob> tokens;
  double sum = 0;
  double mean = 0;
  double perplexity = 0;
};

// `rows` holds continuation.size() score vectors of `vocab` floats each; row i is what the model
// gave for the position of continuation[i] (e.g. the last prompt row, then all-position logits of
// the continuation minus its last token, from one forward pass).
ScoreResult score_rows(std::span<const float> rows, std::int32_t vocab,
                       std::span<const std::int32_t> continuation);

// Feeds the prompt and then the continuation token by token into sequence `seq` of the source.
// Throws ls::Error on an empty prompt or continuation or on a token id outside the vocabulary.
ScoreResult score_continuation(LogitsSource& source, std::span<const std::int32_t> prompt,
                               std::span<const std::int32_t> continuation, int seq = 0);

}  // namespace ls::decode
