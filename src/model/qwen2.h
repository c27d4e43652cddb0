// The Qwen2 forward pass, written out once, top to bottom, in qwen2.cpp. It takes a chunk of
// tokens at the positions following what the KV cache already holds, appends their keys and
// values, and returns float32 logits over the whole vocab_size.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/weights.h"

namespace ls {

// Scratch buffers for one forward call of up to max_tokens tokens; sized once, reused.
struct Activations {
  std::int64_t max_tokens = 0;
  std::vector<float> x;                   // [T, hidden]      residual stream
  std::vector<float> xn;                  // [T, hidden]      normed input of a sub-layer
  std::vector<float> q;                   // [T, heads*hd]
  std::vector<float> k;                   // [T, kv_heads*hd]
  std::vector<float> v;                   // [T, kv_heads*hd]
  std::vector<float> att;                 // [T, heads*hd]    attention output before o_proj
  std::vector<float> proj;                // [T, hidden]      o_proj / down_proj output
  std::vector<float> gate;                // [T, intermediate]
  std::vector<float> up;                  // [T, intermediate]
  std::vector<float> rope_cos, rope_sin;  // [T, hd/2]

  Activations(const ModelConfig& c, std::int64_t max_tokens);
};

// Runs tokens (appended after cache.length) through the model. logits receives
// [T, vocab] when all_positions, else [1, vocab] for the last token. Tokens are processed in
// chunks of acts.max_tokens; results do not depend on the chunking or on the thread count.
void qwen2_forward(const ModelConfig& config, const Weights& weights, KVCache& cache,
                   Activations& acts, std::span<const std::int32_t> tokens, bool all_positions,
                   std::span<float> logits, ThreadPool& pool);

}  // namespace ls
