// transformers' NoRepeatNGramLogitsProcessor: an n-gram may occur only once in prompt + generated
// text, so every token that would complete an n-gram already present (whose first n-1 tokens equal
// the last n-1 tokens) is set to -inf. With n = 1 every token seen so far is banned.
#pragma once

#include "decode/processor.h"

namespace ls::decode {

class NoRepeatNgram final : public LogitsProcessor {
 public:
  explicit NoRepeatNgram(int ngram_size);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "no_repeat_ngram_size"; }
  std::string describe() const override;

 private:
  int n_;
};

}  // namespace ls::decode
