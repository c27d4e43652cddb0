// transformers' SequenceBiasLogitsProcessor and the stages built on it. A bias on a token sequence
// is added to the score of its last token whenever the history ends with the sequence's other
// tokens (single-token sequences are always biased). OpenAI-style logit_bias is the single-token
// case; bad_words_ids (NoBadWordsLogitsProcessor) is a bias of -inf; suppress_tokens sets -inf.
#pragma once

#include <memory>
#include <vector>

#include "decode/processor.h"

namespace ls::decode {

struct BiasedSequence {
  std::vector<std::int32_t> tokens;  // non-empty
  double bias = 0.0;
};

class SequenceBias final : public LogitsProcessor {
 public:
  // `stage_name` is "sequence_bias" or "bad_words_ids"; `vocab_size` validates the ids.
  SequenceBias(std::vector<BiasedSequence> sequences, std::int32_t vocab_size,
               std::string stage_name = "sequence_bias");
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return stage_name_; }
  std::string describe() const override;

 private:
  std::vector<BiasedSequence> sequences_;
  std::string stage_name_;
};

// bad_words_ids as transformers builds it: each sequence gets -inf, except sequences that are
// exactly one EOS token (transformers drops those so that generation can still end).
std::unique_ptr<SequenceBias> make_bad_words(const std::vector<std::vector<std::int32_t>>& words,
                                             std::span<const std::int32_t> eos_ids,
                                             std::int32_t vocab_size);

class SuppressTokens final : public LogitsProcessor {
 public:
  SuppressTokens(std::vector<std::int32_t> tokens, std::int32_t vocab_size);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "suppress_tokens"; }
  std::string describe() const override;

 private:
  std::vector<std::int32_t> tokens_;
};

}  // namespace ls::decode
