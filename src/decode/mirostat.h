// llama.cpp's mirostat (Basu et al., "Mirostat: a neural text decoding algorithm that directly
// controls perplexity"), versions 1 and 2, as a stateful truncation stage. It holds mu, a bound
// on the surprise (-log2 p, in bits) of the tokens it keeps, starting at 2 tau; apply() keeps
//   v2: the tokens whose surprise under the softmax of the tokens still in is <= mu (at least
//       the best one);
//   v1: the k best, k = (e 2^mu / (1 - V^-e))^(1/s), s the Zipf exponent fitted by least squares
//       to the m = 100 best probabilities and e = s - 1;
// and accept(token) moves mu by eta (tau - surprise of the chosen token in the distribution the
// stage left). llama.cpp draws the token inside the stage; here the chain's final softmax and the
// sampler's draw do it: the same distribution. It runs last, after temperature (see order.h).
#pragma once

#include <cstdint>
#include <vector>

#include "decode/processor.h"

namespace ls::decode {

class Mirostat final : public LogitsProcessor {
 public:
  // vocab_size: V in version 1's formula (the width of the scores).
  Mirostat(int version, double tau, double eta, std::int32_t vocab_size);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  // mu -= eta (surprise - tau), the surprise of `token` in the last apply()'s output. A token that
  // output had removed (a forced one: replay --fork) leaves mu as it was.
  void accept(std::int32_t token) override;
  void reset() override;
  std::string name() const override { return "mirostat"; }
  // With the current mu: "mirostat(version=2, tau=5, eta=0.1, mu=10)".
  std::string describe() const override;
  double mu() const { return mu_; }

  // Version 1's k for a distribution sorted best first (probabilities, summing to 1), V and mu;
  // at least 1. k outside int's range (or NaN) gives 1, as llama.cpp's float-to-int conversion
  // does on x86-64. apply() fits over the tokens still in only: llama.cpp's array also holds
  // tokens an earlier stage (a -inf logit bias, the grammar) removed, at p = 0, whose ratio
  // makes its fit infinite and k 1 when fewer than 100 tokens remain. Double precision
  // throughout, where llama.cpp computes in float; ties in score order keep the lower id first.
  static std::int64_t v1_k(std::span<const double> sorted_probs, std::int32_t vocab_size,
                           double mu);

 private:
  int version_;
  double tau_, eta_, mu_;
  std::int32_t vocab_size_;
  // The last apply()'s kept tokens and the log of their scores' sum of exps, for accept().
  std::vector<float> kept_;
  double kept_lse_ = 0;
};

}  // namespace ls::decode
