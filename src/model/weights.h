// Weights: non-owning views of every parameter of a Qwen2 model, bound by name through the
// tensor-name table and checked against the shapes the config implies. Matrices are stored as
// in the file ([out_features, in_features]); 1-D parameters (norm weights, biases: ~0.01% of
// the bytes) are upcast once to float32 so the per-token loop has no dtype switches on them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"

namespace ls::model {

// One SwiGLU MLP's matrices: an expert's or the shared expert's.
struct MlpWeights {
  TensorView gate;  // [ff, hidden]
  TensorView up;    // [ff, hidden]
  TensorView down;  // [hidden, ff]
};

// A sparse layer's mixture of experts (qwen2_moe, qwen3_moe).
struct MoeWeights {
  TensorView router;                // [experts, hidden]
  std::vector<MlpWeights> experts;  // [experts]; GGUF: slices of the stacked [expert, out, in]
  MlpWeights shared;                // qwen2_moe's shared expert; empty views otherwise
  std::vector<float> shared_gate;   // [hidden] (qwen2_moe)
};

struct LayerWeights {
  std::vector<float> attn_norm;  // [hidden]
  TensorView wq;                 // [heads * head_dim, hidden]
  std::vector<float> bq;         // [heads * head_dim]
  TensorView wk;                 // [kv_heads * head_dim, hidden]
  std::vector<float> bk;         // [kv_heads * head_dim]
  TensorView wv;                 // [kv_heads * head_dim, hidden]
  std::vector<float> bv;         // [kv_heads * head_dim]
  std::vector<float> q_norm;     // [head_dim] (Qwen3; Qwen2: empty, as the biases are for Qwen3)
  std::vector<float> k_norm;     // [head_dim]
  TensorView wo;                 // [hidden, heads * head_dim]
  std::vector<float> mlp_norm;   // [hidden]
  TensorView w_gate;             // [intermediate, hidden]
  TensorView w_up;               // [intermediate, hidden]
  TensorView w_down;             // [hidden, intermediate]
  MoeWeights moe;                // a sparse layer's; w_gate, w_up and w_down are then empty

  bool sparse() const { return !moe.experts.empty(); }
  // Every matrix of the layer that is present (attention, MLP or router, experts, shared
  // expert), for passes over all of them (repacking, activation formats, byte counts).
  std::vector<TensorView*> matrices();
  std::vector<const TensorView*> matrices() const;
};

struct Weights {
  TensorView embed;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;  // [hidden]
  TensorView lm_head;             // [vocab, hidden]; the same view as embed when tied
};

// Looks a tensor up by its file name; nullptr when absent.
using TensorLookup = std::function<const TensorView*(const std::string& name)>;

// Binds every weight the architecture has via the name table, checking presence and shape;
// `source` names the model in error messages. Unused extra tensors are ignored (e.g. rotary
// inv_freq buffers). `validate`: norm weights, biases and every GGML block scale must be finite
// (the scale scan touches every page of a quantized file; --no-validate skips it).
Weights bind_weights(const ModelConfig& config, bool qkv_bias, bool qk_norm,
                     const TensorLookup& lookup, bool gguf_names, bool validate,
                     const std::string& source);

}  // namespace ls::model
