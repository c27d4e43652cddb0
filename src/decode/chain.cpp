// ProcessorChain: runs its stages in order (see chain.h).
#include "decode/chain.h"

namespace ls::decode {

void ProcessorChain::apply(std::span<float> scores, const TokenHistory& history) {
  for (auto& stage : stages_) stage->apply(scores, history);
}

void ProcessorChain::apply_observed(std::span<float> scores, const TokenHistory& history,
                                    const Observer& observer) {
  for (auto& stage : stages_) {
    stage->apply(scores, history);
    if (observer) observer(*stage, scores);
  }
}

void ProcessorChain::accept(std::int32_t token) {
  for (auto& stage : stages_) stage->accept(token);
}

void ProcessorChain::reset() {
  for (auto& stage : stages_) stage->reset();
}

std::string ProcessorChain::describe() const {
  if (stages_.empty()) return "(no stages)";
  std::string out;
  for (const auto& stage : stages_) {
    if (!out.empty()) out += " -> ";
    out += stage->describe();
  }
  return out;
}

std::vector<std::string> ProcessorChain::names() const {
  std::vector<std::string> out;
  for (const auto& stage : stages_) out.push_back(stage->name());
  return out;
}

}  // namespace ls::decode
