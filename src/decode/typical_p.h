// transformers' TypicalLogitsWarper (locally typical sampling): rank tokens by how far their
// surprisal -log p is from the distribution's entropy, and keep the closest tokens until their
// probability mass reaches typical_p (plus tokens tied with the last kept one), at least
// min_tokens_to_keep.
#pragma once

#include "decode/processor.h"

namespace ls::decode {

class TypicalP final : public LogitsProcessor {
 public:
  TypicalP(double mass, int min_tokens_to_keep);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "typical_p"; }
  std::string describe() const override;

 private:
  double mass_;
  int min_keep_;
};

}  // namespace ls::decode
