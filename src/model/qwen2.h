// Qwen2 (Qwen2ForCausalLM, model_type "qwen2"; Qwen2.5 too): the shared decoder with biased
// q, k, v projections (qwen2.cpp).
#pragma once

#include "model/decoder.h"

namespace ls {

extern const Architecture kQwen2;

}  // namespace ls
