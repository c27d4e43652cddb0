// The sparse MLP of Qwen's mixture-of-experts models (qwen2_moe, qwen3_moe), as transformers'
// Qwen2MoeSparseMoeBlock and Qwen3MoeSparseMoeBlock compute it, in float32 (moe.cpp).
#pragma once

#include <cstddef>

#include "core/thread_pool.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/weights.h"

namespace ls::model {

// acts.proj[T, hidden] = the layer's mixture of experts over acts.xn[T, hidden]; records each
// row's chosen experts and their weights in acts.routes.
void sparse_mlp(const ModelConfig& config, const MoeWeights& moe, std::size_t T, Activations& acts,
                ThreadPool& pool);

}  // namespace ls::model
