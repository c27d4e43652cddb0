// Top-k truncation. transformers' TopKLogitsWarper removes every token scoring below the k-th
// highest score, so tokens tied with the k-th are all kept (vLLM does the same); llama.cpp keeps
// exactly k (here: among tied tokens the lower ids). k is raised to min_tokens_to_keep and capped
// at the vocabulary size.
#pragma once

#include "decode/processor.h"

namespace ls::decode {

class TopK final : public LogitsProcessor {
 public:
  TopK(int k, int min_tokens_to_keep, bool keep_ties);
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "top_k"; }
  std::string describe() const override;

 private:
  int k_;
  bool keep_ties_;
};

}  // namespace ls::decode
