// The per-step record of how one token was chosen: raw top-N, the pool after every stage, the
// chosen token with its raw rank, probabilities, margin, entropies, truncated mass, the random
// draw and the running sequence log-probability; for beam search the live, finished and pruned
// hypotheses with their length-penalised scores. Token text is added when printing, through a
// callback, so this layer does not need the tokenizer.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "decode/generation_config.h"
#include "decode/logits_source.h"
#include "decode/processor.h"

namespace ls::decode {

// Returns a token's bytes (they may be part of one UTF-8 character).
using TokenBytesFn = std::function<std::string(std::int32_t)>;

struct TokenScore {
  std::int32_t id = 0;
  float logit = 0;  // the score at that point of the chain
  double prob = 0;  // softmax of the scores at that point
};

struct StageTrace {
  std::string name;
  std::string description;
  std::int32_t candidates = 0;  // tokens with a score > -inf after the stage
  double entropy = 0;           // nats, of softmax after the stage
  double mass_removed = 0;      // probability (before the stage) of the tokens it removed
  // The rank before the stage (1 = its best) of the best token left after it (0: none left).
  // Above 1, the stage removed every better token: for a grammar, how hard the constraint
  // pressed against what the model wanted.
  std::int32_t best_kept_rank = 0;
  std::vector<TokenScore> top;
};

struct BeamTrace {
  std::vector<std::int32_t> tokens;  // generated tokens of the hypothesis
  double sum_logprob = 0;
  double score = 0;    // sum_logprob / length^length_penalty
  int parent = -1;     // the beam it extends
  std::string status;  // "live", "finished", "pruned" or "dropped" (EOS outside the top)
};

struct StepTrace {
  int sequence = 0;
  int step = 0;
  DecodeMode mode = DecodeMode::greedy;
  std::int32_t raw_candidates = 0;
  std::vector<TokenScore> raw_top;
  std::vector<StageTrace> stages;
  std::int32_t chosen = -1;
  std::int32_t chosen_raw_rank = 0;  // 1 = the raw argmax
  float chosen_logit = 0;            // raw
  double chosen_raw_prob = 0;
  double chosen_raw_logprob = 0;
  double chosen_prob = 0;  // in the final distribution the token was drawn from
  double chosen_logprob = 0;
  std::int32_t runner_up = -1;  // the best other token of the final distribution
  double margin_prob = 0;       // chosen_prob - runner-up probability
  double margin_logit = 0;      // final score difference
  double entropy_before = 0;    // raw distribution
  double entropy_after = 0;     // final distribution
  std::int32_t final_candidates = 0;
  double mass_removed = 0;  // raw probability of every token the chain removed
  std::optional<double> draw;
  double sequence_logprob = 0;  // running sum of raw logprobs (the model's likelihood)
  std::vector<BeamTrace> beams;
  // A mixture of experts with GenerateOptions::expert_routes: per layer, the experts that
  // processed the input token of this step (the token whose logits this step chose from) and
  // their weights, best first; a dense layer's row is empty. Empty otherwise.
  std::vector<std::vector<ExpertChoice>> experts;
  // Beam search, the same for each beam that ran this step (index = BeamTrace::parent): the
  // experts of the token that beam was fed, whose logits its continuations came from.
  std::vector<std::vector<std::vector<ExpertChoice>>> beam_experts;
};

// The top `n` tokens (score > -inf) of `scores`, with their softmax probabilities.
std::vector<TokenScore> top_tokens(std::span<const float> scores, int n);
// Records the raw distribution of a step.
void trace_raw(StepTrace& step, std::span<const float> raw, int n);
// Records one stage given the scores before and after it.
StageTrace trace_stage(const LogitsProcessor& stage, std::span<const float> before,
                       std::span<const float> after, int n);
// Records the choice, given raw and final scores.
void trace_choice(StepTrace& step, std::span<const float> raw, std::span<const float> final_scores,
                  std::int32_t chosen);

}  // namespace ls::decode
