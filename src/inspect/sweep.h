// Sweep: what each decoding setting does to one next-token distribution. Every combination of
// temperature / top_k / top_p / min_p runs the configured processor chain (warpers included,
// as when sampling) on the same raw logits; the result lists the pool left, its entropy, the
// probability mass it keeps and the top candidates with their final probabilities.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "decode/generation_config.h"
#include "decode/logits_source.h"
#include "decode/processor.h"

namespace ls::inspect {

struct SweepSetting {
  double temperature = 1.0;
  int top_k = 0;
  double top_p = 1.0;
  double min_p = 0.0;
};

struct SweepCandidate {
  std::int32_t id = 0;
  float logit = 0;      // raw
  double raw_prob = 0;  // softmax(raw), the model's own probability
  double prob = 0;      // in the final (truncated, renormalised) distribution
};

struct SweepCell {
  SweepSetting setting;
  std::string chain;       // the stages that ran, described
  std::int32_t pool = 0;   // tokens left after the last stage
  double entropy = 0;      // nats, of the final distribution
  double mass_kept = 0;    // softmax(raw) summed over the pool
  double mass_kept_t = 0;  // softmax(raw / T) summed over the pool (1 for T = 0)
  std::vector<SweepCandidate> top;
};

// The cartesian product of the lists, temperature varying slowest then top_k, top_p, min_p.
std::vector<SweepSetting> sweep_grid(const std::vector<double>& temperatures,
                                     const std::vector<int>& top_ks,
                                     const std::vector<double>& top_ps,
                                     const std::vector<double>& min_ps);

// `base` with the setting's four fields replaced (marked as set by flag).
decode::GenerationConfig with_setting(const decode::GenerationConfig& base, const SweepSetting& s);

// One cell: the chain of `config` (temperature 0: greedy, the pool is the argmax) over `raw`.
SweepCell sweep_cell(std::span<const float> raw, const decode::TokenHistory& history,
                     const decode::GenerationConfig& config, int top_n);

struct SweepRun {
  std::vector<std::vector<SweepCell>> steps;  // [step][setting]
  std::vector<std::int32_t> greedy;           // the raw argmax after each step
  std::vector<float> rows;                    // each step's raw logits, [steps, vocab]
};

// Feeds `prompt` to a fresh sequence of `source`, runs every config's cell on the logits, and
// repeats along the greedy (raw argmax) continuation for up to `steps` steps, stopping after an
// EOS token or when the context is full.
SweepRun sweep_run(decode::LogitsSource& source, std::span<const std::int32_t> prompt,
                   std::span<const decode::GenerationConfig> configs, int steps, int top_n,
                   std::span<const std::int32_t> eos);

}  // namespace ls::inspect
