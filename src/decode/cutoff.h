// transformers' EpsilonLogitsWarper and EtaLogitsWarper (truncation sampling, Hewitt et al.
// 2022). Epsilon removes tokens with probability below a fixed epsilon; eta uses the threshold
// min(eta, sqrt(eta) * exp(-entropy)), which loosens when the distribution is flat. Both keep
// every token scoring at least the min_tokens_to_keep-th best score.
#pragma once

#include "decode/processor.h"

namespace ls::decode {

class EpsilonCutoff final : public LogitsProcessor {
 public:
  EpsilonCutoff(double epsilon, int min_tokens_to_keep);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "epsilon_cutoff"; }
  std::string describe() const override;

 private:
  double epsilon_;
  int min_keep_;
};

class EtaCutoff final : public LogitsProcessor {
 public:
  EtaCutoff(double eta, int min_tokens_to_keep);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "eta_cutoff"; }
  std::string describe() const override;

 private:
  double eta_;
  int min_keep_;
};

}  // namespace ls::decode
