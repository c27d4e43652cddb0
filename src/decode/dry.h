// llama.cpp's DRY, "don't repeat yourself" (p-e-w, text-generation-webui #5677; koboldcpp's
// implementation): a token that would extend a sequence already seen earlier in the history is
// penalised by multiplier * base^(length - allowed_length), length being the longest such
// repeated sequence it would continue (at least allowed_length to count). Sequence breakers cut
// the scan: a repetition never reaches back across the last breaker in the history, and a token
// that alone holds a breaker is never penalised. Subtracted from the score, before temperature.
#pragma once

#include <cstdint>
#include <memory>

#include "decode/dry_breakers.h"
#include "decode/processor.h"

namespace ls::decode {

class Dry final : public LogitsProcessor {
 public:
  // penalty_last_n: the last n tokens of the history are scanned; -1: all of it. `breakers` may
  // be null (no breakers).
  Dry(double multiplier, double base, int allowed_length, int penalty_last_n,
      std::shared_ptr<const DryBreakers> breakers);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "dry"; }
  std::string describe() const override;

  // Per token id (ascending), the longest repeated sequence in `tokens` it would extend, capped
  // where the last breaker ends, for the tokens where that reaches allowed_length. apply()
  // penalises each of them but the tokens that alone hold a breaker.
  std::vector<std::pair<std::int32_t, int>> repeat_lengths(
      std::span<const std::int32_t> tokens) const;

 private:
  double multiplier_, base_;
  int allowed_length_, penalty_last_n_;
  std::shared_ptr<const DryBreakers> breakers_;
};

}  // namespace ls::decode
