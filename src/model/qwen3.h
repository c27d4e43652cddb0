// Qwen3 dense (Qwen3ForCausalLM, model_type "qwen3"): the shared decoder with unbiased q, k, v
// projections and a per-head RMSNorm on q and k before RoPE (qwen3.cpp).
#pragma once

#include "model/decoder.h"

namespace ls::model {

extern const Architecture kQwen3;
// Its attention input (Architecture::attention_input), which its mixture-of-experts sibling
// (qwen3_moe.cpp) shares.
void qwen3_attention_input(const ModelConfig& config, const LayerWeights& layer, std::size_t T,
                           Activations& acts, ThreadPool& pool);

}  // namespace ls::model
