// Qwen2-MoE (Qwen2MoeForCausalLM, model_type "qwen2_moe"; Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): the
// shared decoder with Qwen2's biased attention and, in sparse layers, the mixture of experts
// with a shared expert (qwen2_moe.cpp, moe.cpp).
#pragma once

#include "model/decoder.h"

namespace ls::model {

extern const Architecture kQwen2Moe;

}  // namespace ls::model
