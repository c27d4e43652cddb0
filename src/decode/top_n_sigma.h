// llama.cpp's top-n-sigma (Tang et al., "Top-nσ: Not All Logits Are You Need"): keep the tokens
// whose score is within n standard deviations of the best one, the mean and the (population)
// deviation taken over the tokens still in the running. Scale-free: the same set before or
// after temperature. n <= 0 turns it off (as llama.cpp's -1 default).
#pragma once

#include "decode/processor.h"

namespace ls::decode {

class TopNSigma final : public LogitsProcessor {
 public:
  explicit TopNSigma(double n);
  // Removes every finite score below max - n * sigma (in double; llama.cpp sums in float).
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "top_n_sigma"; }
  std::string describe() const override;

 private:
  double n_;
};

}  // namespace ls::decode
