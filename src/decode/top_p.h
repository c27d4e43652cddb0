// Top-p (nucleus) truncation: keep the smallest set of most likely tokens whose probability mass
// reaches p, and at least min_tokens_to_keep. Two rules, which differ only at ties and exact
// boundaries: transformers/vLLM sort ascending and remove tokens while the cumulative mass is
// <= 1 - p (a stable sort, so among tied scores the lower id goes first); llama.cpp sorts
// descending and keeps tokens up to the first one at which the cumulative mass is >= p.
#pragma once

#include "decode/processor.h"

namespace ls::decode {

enum class TopPRule { hf, llama_cpp };

class TopP final : public LogitsProcessor {
 public:
  TopP(double p, int min_tokens_to_keep, TopPRule rule);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "top_p"; }
  std::string describe() const override;
  // The reference: the candidates sorted, the cumulative mass walked in the rule's order. apply()
  // finds the same kept set with top_mass() (top_mass.h) and falls back to this when the
  // crossing is too close to call or the pool is small.
  void apply_sorted(std::span<float> scores, const TokenHistory& history);

 private:
  double p_;
  int min_keep_;
  TopPRule rule_;
};

}  // namespace ls::decode
