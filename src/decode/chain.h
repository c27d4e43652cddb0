// An explicit, printable sequence of stages, itself a processor. The generation loop runs one
// chain per step; the trace uses apply_observed() to look at the scores after every stage.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "decode/processor.h"

namespace ls::decode {

class ProcessorChain final : public LogitsProcessor {
 public:
  using Observer = std::function<void(const LogitsProcessor& stage, std::span<const float> scores)>;

  void add(std::unique_ptr<LogitsProcessor> stage) { stages_.push_back(std::move(stage)); }
  const std::vector<std::unique_ptr<LogitsProcessor>>& stages() const { return stages_; }
  bool empty() const { return stages_.empty(); }

  void apply(std::span<float> scores, const TokenHistory& history) override;
  // apply(), calling `observer` after each stage with the scores that stage produced.
  void apply_observed(std::span<float> scores, const TokenHistory& history,
                      const Observer& observer);
  void accept(std::int32_t token) override;
  void reset() override;
  std::string name() const override { return "chain"; }
  // "repetition_penalty(...) -> temperature(t=0.7) -> ..." or "(no stages)".
  std::string describe() const override;
  // The stage names in order, e.g. {"repetition_penalty", "temperature", "top_k"}.
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<LogitsProcessor>> stages_;
};

}  // namespace ls::decode
