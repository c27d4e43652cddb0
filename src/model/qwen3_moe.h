// Qwen3-MoE (Qwen3MoeForCausalLM, model_type "qwen3_moe"; Qwen3-30B-A3B, Qwen3-235B-A22B): the
// shared decoder with Qwen3's attention (per-head q/k norms) and, in sparse layers, the mixture
// of experts (qwen3_moe.cpp, moe.cpp).
#pragma once

#include "model/decoder.h"

namespace ls::model {

extern const Architecture kQwen3Moe;

}  // namespace ls::model
