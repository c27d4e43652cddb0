// The logit lens read through the decoding chain: given the lens logits of one position (row l:
// the residual stream after l layers through the final norm and lm_head, model/decoder.h), per
// layer the raw distribution's top candidates, entropy and the ranks of the tokens that matter,
// and what the request's own chain, with one fixed draw, would choose from that layer. Then where
// the final choice first appears, where it settles, and until when the runner-up led.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decode/generation_config.h"

namespace ls::inspect {

struct LensRequest {
  std::span<const float> rows;  // [layers + 1, vocab] raw lens logits
  std::int32_t vocab = 0;
  std::span<const std::int32_t> history;     // the tokens through the lensed position
  std::optional<std::size_t> prompt_length;  // of history, the prompt (default: all of it)
  const decode::GenerationConfig* config;    // the chain (greedy or sampling; not beams)
  std::optional<double> draw;                // sampling: the one draw every layer uses
  std::optional<std::int32_t> token;         // the final choice to follow (default: the chain's)
  std::vector<std::int32_t> track;           // more ids whose rank and logprob to report
  int top = 5;                               // candidates per layer
};

struct LensCandidate {
  std::int32_t id = 0;
  double logprob = 0;  // raw log_softmax of the layer's lens logits
};

struct LensLayer {
  int layer = 0;
  std::vector<LensCandidate> top;
  double entropy = 0;  // nats, of softmax(raw lens logits)
  // For chosen, runner_up and every tracked id (in that order, each once): 1-based raw rank
  // (as `score` ranks: 1 + the ids with a higher logit or an equal one and a lower id) and raw
  // logprob.
  std::vector<std::int32_t> ids;
  std::vector<std::int64_t> ranks;
  std::vector<double> logprobs;
  std::int32_t sampler_choice = 0;  // what the chain with the draw picks from this layer
  double chosen_prob = 0;           // `chosen`'s probability after the chain (0: removed)
};

struct LensReport {
  std::string chain;           // the chain's description
  std::optional<double> draw;  // the draw used (sampling only)
  std::int32_t chosen = 0;     // the chain's choice from the last layer, or LensRequest::token
  std::optional<std::int32_t> runner_up;  // best other id after the chain (then by raw logit)
  std::optional<int> first_chosen_layer;  // first layer whose choice is `chosen`
  std::optional<int> settled_layer;       // first layer from which every choice is `chosen`
  std::optional<int> runner_up_lost_at;   // last layer where runner_up out-ranked chosen (raw)
  std::vector<LensLayer> layers;          // every layer 0..L, in order
};

// Throws naming the field for a tracked or forced id outside the vocabulary, or a beam config.
LensReport lens_report(const LensRequest& request);

// The report as the CLI's --json and the server's /v1/logitscope/lens print it (docs/lens.md):
// {"chain", "draw", "chosen": {"id","token"}, "runner_up", "first_chosen_layer",
// "settled_layer", "runner_up_lost_at", "layers": [{"layer", "top", "entropy", "rank_of",
// "logprob_of", "sampler_choice", "chosen_prob"}...]}, only the layers in `layers` (all: empty).
using TokenTextFn = std::function<std::string(std::int32_t)>;
nlohmann::ordered_json lens_json(const LensReport& report, const TokenTextFn& token_text,
                                 std::span<const int> layers = {});

}  // namespace ls::inspect
