// transformers' MinPLogitsWarper: remove tokens whose probability is below min_p times the
// probability of the most likely token, keeping at least min_tokens_to_keep of the best tokens.
// The threshold scales with the model's confidence (llama.cpp's min-p keeps the same set).
#pragma once

#include "decode/processor.h"

namespace ls::decode {

class MinP final : public LogitsProcessor {
 public:
  MinP(double min_p, int min_tokens_to_keep);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "min_p"; }
  std::string describe() const override;
  // The reference: softmax, the threshold min_p * max(probs), every probability compared.
  // apply() decides the same from each score's distance to the maximum (probs[i] < threshold
  // exactly when score - max < log(min_p), but for scores within 1e-9 of that line, where it
  // calls this).
  void apply_exact(std::span<float> scores, const TokenHistory& history);

 private:
  double min_p_;
  int min_keep_;
};

}  // namespace ls::decode
