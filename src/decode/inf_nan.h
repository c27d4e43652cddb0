// transformers' InfNanRemoveLogitsProcessor (remove_invalid_values): NaN becomes 0, +inf the
// largest float and -inf the lowest float, so that sampling never sees an invalid value. Note
// that this also turns tokens removed by earlier stages back into (very unlikely) candidates.
#pragma once

#include "decode/processor.h"

namespace ls::decode {

class InfNanRemove final : public LogitsProcessor {
 public:
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "remove_invalid_values"; }
  std::string describe() const override {
    return "remove_invalid_values(nan->0, +inf->float max, -inf->float lowest)";
  }
};

}  // namespace ls::decode
