// Internal to the decision boundaries (boundaries.h): the recorded step's chain re-run under a
// modified config, the interval bookkeeping shared by every setting, and the two searches that
// certify stretches of a continuous setting with bounds on the scores (certified_interval.cpp):
// temperature and the repetition penalty.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "decode/distribution.h"
#include "decode/generation_config.h"
#include "decode/sampler.h"
#include "inspect/boundaries.h"

namespace ls::inspect::detail {

inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();
inline constexpr double kFragile = 0.10;   // within 10 % of a boundary
inline constexpr double kScanStep = 1.02;  // scanned settings: 2 % steps ...
inline constexpr double kScanRange = 4.0;  // ... within a factor of 4 of the recorded value
inline constexpr int kBisections = 40;

// The step's chain under modified configs: its raw logits, history, mode and recorded draw.
struct StepChain {
  std::span<const float> raw;
  decode::TokenHistory history;
  decode::DecodeMode mode;
  std::int32_t vocab;
  std::optional<double> draw;
  std::vector<float> work;

  std::int32_t choose(const decode::GenerationConfig& c) {
    decode::Sampler s(c, mode, vocab, c.seed.value_or(0));
    decode::ChoiceOptions how;
    how.draw = draw;
    how.accept = false;
    how.logprobs = {};  // none: no raw log-sum-exp
    return s.choose(raw, history, how).token;
  }
  // The final scores (-inf for removed tokens); valid until the next call.
  std::span<const float> process(const decode::GenerationConfig& c) {
    decode::Sampler s(c, mode, vocab, c.seed.value_or(0));
    work.assign(raw.begin(), raw.end());
    s.process(work, history);
    return work;
  }
  std::int32_t kept(const decode::GenerationConfig& c) {
    return decode::count_candidates(process(c));
  }
};

// `base` with one setting ("temperature", "top_k", "top_p", "min_p", "repetition_penalty").
decode::GenerationConfig with(const decode::GenerationConfig& base, const std::string& field,
                              double v);

// How far a search got from the recorded value: the last value keeping the choice, and the
// token chosen just past it (none: it reached the end of the range).
using Found = std::pair<double, std::optional<std::int32_t>>;

// The interval the searches up to b.max and down to b.min found, and whether the recorded value
// lies within 10 % of an end that is not a range end (top_k: of the nearest k that changes it).
void set_interval(Boundary& b, const Found& up, const Found& down, bool integer = false);

// A value of a continuous setting with what the chain does there.
struct Point {
  double v = 0;
  std::vector<std::size_t> kept;  // ascending ids of the final distribution
  std::vector<float> scores;      // the final scores with no truncation (the penalty's bounds)
  std::int32_t choice = 0;
  double top = 0;  // the highest of `scores`
};

// The ids of the tokens a final distribution keeps (its finite scores), ascending.
std::vector<std::size_t> kept_ids(std::span<const float> final_scores);

// Searches from b.value up to b.max and down to b.min, setting b's interval: stretches of a
// quarter of the value (most are certified whole), each uncertified one halved down to a width
// of 1e-6 relative, where the chain's choice at the far end decides (then bisected). `at(v)`
// evaluates the chain at v; `certified(a, z)` (a.v < z.v) proves no change inside [a.v, z.v].
void certified_search(Boundary& b, StepChain& chain, const decode::GenerationConfig& config,
                      std::int32_t chosen, const std::function<Point(double)>& at,
                      const std::function<bool(const Point&, const Point&)>& certified);

// Temperature within a factor of 4 of its value, exactly (sampling steps without typical_p,
// epsilon or eta cutoffs or dynamic temperature).
void temperature_interval(Boundary& b, StepChain& chain, const decode::GenerationConfig& config,
                          std::int32_t chosen, double draw);

// The repetition penalty within a factor of 4 of its value, exactly. Returns false, doing
// nothing, when the chain is one the bounds do not cover (typical_p, epsilon, eta, top_n_sigma,
// dynamic temperature, XTC, DRY, or the penalty placed after a truncation by `order`): the caller
// scans.
bool penalty_interval(Boundary& b, StepChain& chain, const decode::GenerationConfig& config,
                      std::int32_t chosen);

}  // namespace ls::inspect::detail
