// llama.cpp's dynamic temperature ("temp-ext", dynatemp_range and dynatemp_exponent): the
// temperature follows the distribution's entropy. With H the entropy of the softmax over the
// tokens still in the running, normalised by its maximum log(count), the scores are divided by
//   T' = max(0, T - range) + 2 range (H / log count)^exponent   (at most T + range):
// a confident step is sharpened, an uncertain one flattened. T' of 0 keeps only the best token
// (the lowest id among equals). It takes the temperature stage's place in the chain.
#pragma once

#include "decode/processor.h"

namespace ls::decode {

class DynamicTemperature final : public LogitsProcessor {
 public:
  DynamicTemperature(double temperature, double range, double exponent);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "temperature"; }
  std::string describe() const override;
  // The temperature apply() would divide these scores by.
  double temperature_for(std::span<const float> scores) const;

 private:
  double t_, range_, exponent_;
};

}  // namespace ls::decode
