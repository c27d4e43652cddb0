// Session: one sequence decoded on its own, a batch of one with its own KV blocks and scratch
// (the Engine runs many over shared blocks). The logit lens, the side-by-side comparison of two
// models and the tests run on it; the logits are bit-identical to the same sequence in an Engine.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "model/decoder.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace ls::engine {

class Session {
 public:
  // max_chunk: tokens processed per forward chunk (bounds scratch memory during prefill).
  // kv_type: element type of the KV cache (F32, F16 or BF16); default: model.kv_type().
  Session(const model::Model& model, ThreadPool& pool, std::int64_t max_chunk = 64,
          std::optional<DType> kv_type = std::nullopt);

  // Appends tokens and returns the logits after the last one ([vocab]), or for every appended
  // token ([tokens, vocab]) when all_positions. The span stays valid until the next call.
  // `residuals` ([n_layers + 1, hidden], or empty) receives the last token's residual stream
  // after the embedding and after every layer (SequenceInput::residuals).
  std::span<const float> feed(std::span<const std::int32_t> tokens, bool all_positions = false,
                              std::span<float> residuals = {});

  std::int64_t length() const { return cache_.length; }
  void reset() { cache_.clear(); }
  const model::KVCache& cache() const { return cache_; }
  const model::Model& model() const { return model_; }

 private:
  const model::Model& model_;
  ThreadPool& pool_;
  model::KvBlockPool blocks_;
  model::KVCache cache_;
  model::Activations acts_;
  std::vector<float> logits_;
};

}  // namespace ls::engine
