// Repetition-type penalties. repetition_penalty is transformers' RepetitionPenaltyLogitsProcessor
// (every distinct token of prompt + generated text: positive scores divided by the penalty,
// negative ones multiplied); presence_penalty and frequency_penalty are OpenAI's (generated tokens
// only: subtract presence once per seen token and frequency times its count). With a window
// (`last_n` > 0, llama.cpp's repeat_last_n) all three count the last n tokens of prompt +
// generated instead, as llama.cpp's penalties sampler does; last_n 0 sees no tokens.
#pragma once

#include "decode/processor.h"

namespace ls::decode {

class RepetitionPenalty final : public LogitsProcessor {
 public:
  // last_n: -1 the span above; n >= 0 the last n tokens of prompt + generated.
  explicit RepetitionPenalty(double penalty, int last_n = -1);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "repetition_penalty"; }
  std::string describe() const override;

 private:
  double penalty_;
  int last_n_;
};

class PresencePenalty final : public LogitsProcessor {
 public:
  explicit PresencePenalty(double penalty, int last_n = -1);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "presence_penalty"; }
  std::string describe() const override;

 private:
  double penalty_;
  int last_n_;
};

class FrequencyPenalty final : public LogitsProcessor {
 public:
  explicit FrequencyPenalty(double penalty, int last_n = -1);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "frequency_penalty"; }
  std::string describe() const override;

 private:
  double penalty_;
  int last_n_;
};

}  // namespace ls::decode
