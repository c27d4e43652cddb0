// KVCache: the keys and values of every past position of one sequence, per layer, laid out
// [position][kv_heads * head_dim] in F32, F16 or BF16 (F16/BF16 halve the memory; attention
// widens them to float32). Memory = 2 x layers x kv_dim x capacity x element size; the
// capacity grows (doubling) with the context up to max_position_embeddings, and going past that
// is an error, not a silent wrap.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "model/config.h"

namespace ls {

struct KVCache {
  DType dtype = DType::F32;
  std::int64_t kv_dim = 0;                      // kv_heads * head_dim
  std::int64_t max_positions = 0;               // max_position_embeddings
  std::int64_t length = 0;                      // positions filled
  std::vector<std::vector<std::uint8_t>> k, v;  // per layer: [capacity, kv_dim] elements

  KVCache(const ModelConfig& c, DType type)
      : dtype(type),
        kv_dim(c.kv_dim()),
        max_positions(c.max_position_embeddings),
        k(static_cast<std::size_t>(c.num_hidden_layers)),
        v(static_cast<std::size_t>(c.num_hidden_layers)) {
    if (type != DType::F32 && type != DType::F16 && type != DType::BF16)
      fail("KV cache type must be F32, F16 or BF16, got {}", dtype_name(type));
  }

  std::size_t row_bytes() const { return static_cast<std::size_t>(kv_dim) * dtype_size(dtype); }
  std::int64_t capacity() const {
    return k.empty() ? 0 : static_cast<std::int64_t>(k[0].size() / row_bytes());
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
      for (auto& layer : *side) layer.resize(static_cast<std::size_t>(cap) * row_bytes());
  }

  std::uint8_t* k_at(std::size_t layer, std::int64_t pos) {
    return &k[layer][static_cast<std::size_t>(pos) * row_bytes()];
  }
  std::uint8_t* v_at(std::size_t layer, std::int64_t pos) {
    return &v[layer][static_cast<std::size_t>(pos) * row_bytes()];
  }

  std::size_t bytes() const { return 2 * k.size() * (k.empty() ? 0 : k[0].size()); }
};

}  // namespace ls
