// Qwen3 dense (Qwen3ForCausalLM, model_type "qwen3"): the shared decoder with unbiased q, k, v
// projections and a per-head RMSNorm on q and k before RoPE (qwen3.cpp).
#pragma once

#include "model/decoder.h"

namespace ls {

extern const Architecture kQwen3;

}  // namespace ls
