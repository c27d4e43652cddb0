// transformers' TemperatureLogitsWarper: scores / temperature. Below 1 sharpens the distribution,
// above 1 flattens it. Temperature 0 is not a division: the generation config turns it into
// greedy decoding before any chain is built, so this stage requires temperature > 0.
#pragma once

#include "decode/processor.h"

namespace ls::decode {

class Temperature final : public LogitsProcessor {
 public:
  explicit Temperature(double temperature);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "temperature"; }
  std::string describe() const override;

 private:
  double t_;
};

}  // namespace ls::decode
