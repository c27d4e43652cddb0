// Repetition-type penalties. repetition_penalty is transformers' RepetitionPenaltyLogitsProcessor
// (every distinct token of prompt + generated text: positive scores divided by the penalty,
// negative ones multiplied); presence_penalty and frequency_penalty are OpenAI's (generated tokens
// only: subtract presence once per seen token and frequency times its count).
#pragma once

#include "decode/processor.h"

namespace ls::decode {

class RepetitionPenalty final : public LogitsProcessor {
 public:
  explicit RepetitionPenalty(double penalty);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "repetition_penalty"; }
  std::string describe() const override;

 private:
  double penalty_;
};

class PresencePenalty final : public LogitsProcessor {
 public:
  explicit PresencePenalty(double penalty);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "presence_penalty"; }
  std::string describe() const override;

 private:
  double penalty_;
};

class FrequencyPenalty final : public LogitsProcessor {
 public:
  explicit FrequencyPenalty(double penalty);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "frequency_penalty"; }
  std::string describe() const override;

 private:
  double penalty_;
};

}  // namespace ls::decode
