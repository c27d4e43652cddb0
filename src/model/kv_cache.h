// KVCache: the keys and values of every past position, per layer, as float32
// [position][kv_heads * head_dim]. It grows with the context (doubling) up to
// max_position_embeddings; going past that is an error, not a silent wrap.
#pragma once

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "model/config.h"

namespace ls {

struct KVCache {
  std::int64_t kv_dim = 0;               // kv_heads * head_dim
  std::int64_t max_positions = 0;        // max_position_embeddings
  std::int64_t length = 0;               // positions filled
  std::vector<std::vector<float>> k, v;  // per layer: [capacity, kv_dim]

  explicit KVCache(const ModelConfig& c)
      : kv_dim(c.kv_dim()),
        max_positions(c.max_position_embeddings),
        k(static_cast<std::size_t>(c.num_hidden_layers)),
        v(static_cast<std::size_t>(c.num_hidden_layers)) {}

  std::int64_t capacity() const {
    return k.empty() ? 0 : static_cast<std::int64_t>(k[0].size()) / kv_dim;
  }

  // Makes room for `positions` positions in total.
  void reserve(std::int64_t positions) {
    if (positions > max_positions)
      fail("context of {} tokens exceeds the model's max_position_embeddings {}", positions,
           max_positions);
    if (positions <= capacity()) return;
    std::int64_t cap = std::max<std::int64_t>(capacity() * 2, 256);
    cap = std::min(std::max(cap, positions), max_positions);
    for (auto* side : {&k, &v})
      for (auto& layer : *side) layer.resize(static_cast<std::size_t>(cap * kv_dim));
  }

  float* k_at(std::size_t layer, std::int64_t pos) {
    return &k[layer][static_cast<std::size_t>(pos * kv_dim)];
  }
  float* v_at(std::size_t layer, std::int64_t pos) {
    return &v[layer][static_cast<std::size_t>(pos * kv_dim)];
  }

  std::size_t bytes() const { return 2 * k.size() * (k.empty() ? 0 : k[0].size()) * sizeof(float); }
};

}  // namespace ls
