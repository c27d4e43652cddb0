// Decision boundaries of one recorded step: for temperature, top_k, top_p, min_p and
// repetition_penalty, each varied alone (the others as recorded), the interval around the
// recorded value over which the step's chain with its recorded draw still chooses the recorded
// token, the tokens chosen just past each end, and whether the recorded value lies within 10 %
// of an end (a fragile choice). The truncation settings are exact (their kept set is a prefix
// of the scores, so the choice is a function of the set's size); temperature and the repetition
// penalty are exact within a factor of 4 of their value (bounds on the scores certify each
// stretch; certified_interval.cpp, penalty_interval.cpp), scanned in 2 % steps when typical_p,
// epsilon or eta apply.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decode/generation_config.h"

namespace ls::inspect {

struct Boundary {
  std::string setting;  // "temperature", "top_k", "top_p", "min_p", "repetition_penalty"
  bool applies = true;  // false: the setting takes no part in this step (greedy warpers)
  std::string note;     // why not, or how it was searched
  double value = 0;     // the recorded value (top_k off: the vocabulary size)
  // The interval [lo, hi] of values that keep the choice, within [min, max] (the range
  // searched); lo == min (hi == max) means no change was found down (up) to the range's end.
  double lo = 0, hi = 0, min = 0, max = 0;
  std::optional<std::int32_t> below, above;  // the token chosen just below lo / above hi
  bool fragile = false;  // the recorded value within 10 % of lo or hi (not a range end)
};

struct StepBoundaries {
  bool greedy = false;
  std::int32_t chosen = 0;
  std::vector<Boundary> settings;
  bool fragile = false;  // any setting fragile
};

// `raw`: the step's raw logits; `history`: the tokens before it (prompt first); `draw`: the
// recorded uniform draw (sampling; ignored when greedy). Throws for a beam config, or when the
// chain with `draw` does not choose `chosen` (the recording and the settings disagree).
StepBoundaries step_boundaries(std::span<const float> raw, std::span<const std::int32_t> history,
                               std::size_t prompt_length, const decode::GenerationConfig& config,
                               std::optional<double> draw, std::int32_t chosen);

// {"greedy", "fragile", "settings": {name: {"applies", "value", "lo", "hi", "min", "max",
// "below", "above", "fragile", "note"}}} (a setting that does not apply: "applies", "note").
nlohmann::ordered_json boundaries_json(const StepBoundaries& boundaries);

}  // namespace ls::inspect
