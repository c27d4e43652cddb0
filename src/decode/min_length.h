// transformers' MinLengthLogitsProcessor (min_length counts prompt + generated tokens, as for
// decoder-only models) and MinNewTokensLengthLogitsProcessor (counts generated tokens only):
// while the sequence is shorter, every EOS id scores -inf so generation cannot end.
#pragma once

#include <vector>

#include "decode/processor.h"

namespace ls::decode {

class MinLength final : public LogitsProcessor {
 public:
  // `count_generated_only` selects min_new_tokens semantics.
  MinLength(int min_length, std::vector<std::int32_t> eos_ids, bool count_generated_only);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return generated_only_ ? "min_new_tokens" : "min_length"; }
  std::string describe() const override;

 private:
  int min_;
  std::vector<std::int32_t> eos_;
  bool generated_only_;
};

}  // namespace ls::decode
