// The model's own forward pass read layer by layer: the logit lens of one position, and exact
// leave-one-out attribution of a token's log-probability to the prompt's tokens. Both run on an
// Engine (the lens on a sequence of its own) and cost what the docs/lens.md table says: the lens
// one forward pass plus one lm_head product over n_layers + 1 rows; attribution one pass over
// the prompt plus, per variant, only the tokens after the edit (forks share the prefix's KV).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"

namespace ls::engine {

// [n_layers + 1, vocab] raw logits: row l is the residual stream at the last of `tokens` after
// l layers (row 0: the embedding) through the final norm and lm_head; row n_layers is exactly
// the model's logits. Runs a sequence of its own (a Session) on `pool`.
std::vector<float> lens_logits(const model::Model& model, ThreadPool& pool,
                               std::span<const std::int32_t> tokens);

struct AttributionRequest {
  std::span<const std::int32_t> prompt;     // at least 1 token (2 when removing)
  std::int32_t target = 0;                  // the token after the prompt whose logprob is explained
  std::optional<std::int32_t> replacement;  // replace each token by this one, else remove it
  std::size_t max_prompt = 256;             // a longer prompt is an error (quadratic work)
  std::size_t group = 16;                   // variants per batched step (bounds logits memory)
};

struct Attribution {
  double base_logprob = 0;       // log_softmax of the logits after the whole prompt, at target
  std::vector<double> logprobs;  // per prompt position: the same with that token edited
};

// Variant i is the prompt with token i removed (or replaced); its logprob is bit-identical to
// scoring the edited prompt alone. Uses sequences 0..group of `engine` and releases them.
Attribution attribute(Engine& engine, const AttributionRequest& request);

// {"target": {"id","token"}, "base_logprob", "mode": "remove"|"replace", "replacement",
//  "attributions": [{"position", "id", "token", "logprob", "delta"}...]}, delta = base - variant.
nlohmann::ordered_json attribution_json(const Attribution& a, const AttributionRequest& request,
                                        const std::function<std::string(std::int32_t)>& text);

}  // namespace ls::engine
