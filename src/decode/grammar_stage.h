// The `grammar` stage: removes (-inf) every token the request's grammar cannot take next, and
// the end-of-sequence tokens until the grammar's text is complete. It runs first in every chain,
// so temperature, top_k, top_p and the rest see only tokens that keep the text valid (as vLLM's
// and llama.cpp's grammars act on the logits before their samplers). The parse follows the
// history's generated tokens, so forks, beams and replays that switch histories stay right.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "decode/processor.h"
#include "grammar/constraint.h"
#include "grammar/matcher.h"

namespace ls::decode {

class GrammarStage final : public LogitsProcessor {
 public:
  GrammarStage(std::shared_ptr<const grammar::Constraint> constraint,
               std::vector<std::int32_t> eos_ids);

  void apply(std::span<float> scores, const TokenHistory& history) override;
  void reset() override;
  std::string name() const override { return "grammar"; }
  std::string describe() const override;

 private:
  // The parse state after the generated tokens (walked on from what they share with the last).
  std::uint32_t sync(std::span<const std::int32_t> generated);
  const std::vector<std::uint64_t>& mask(std::uint32_t state);

  std::shared_ptr<const grammar::Constraint> constraint_;
  std::vector<std::int32_t> eos_;
  grammar::StateSpace space_;
  std::vector<std::int32_t> tokens_;   // the generated tokens walked so far
  std::vector<std::uint32_t> states_;  // states_[i]: after tokens_[0 .. i); states_[0] = start
  std::unordered_map<std::uint32_t, std::vector<std::uint64_t>> masks_;  // by state
};

}  // namespace ls::decode
