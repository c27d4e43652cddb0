// Qwen2 (Qwen2ForCausalLM, model_type "qwen2"; Qwen2.5 too): the shared decoder with biased
// q, k, v projections (qwen2.cpp).
#pragma once

#include "model/decoder.h"

namespace ls::model {

extern const Architecture kQwen2;
// Its attention input (Architecture::attention_input), which its mixture-of-experts sibling
// (qwen2_moe.cpp) shares.
void qwen2_attention_input(const ModelConfig& config, const LayerWeights& layer, std::size_t T,
                           Activations& acts, ThreadPool& pool);

}  // namespace ls::model
