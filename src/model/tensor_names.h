// The one table that maps the tensor names of model files to the engine's weight roles: the
// Hugging Face (safetensors) name and the GGUF (llama.cpp) name of each role, per layer where
// "{}" stands for the layer index. Loaders, the synthetic-model writer and the tests all use it.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace ls {

enum class WeightRole : std::uint8_t {
  TokenEmbedding,
  OutputNorm,
  LmHead,  // global
  AttnNorm,
  Wq,
  Bq,
  Wk,
  Bk,
  Wv,
  Bv,
  QNorm,  // Qwen3
  KNorm,
  Wo,
  MlpNorm,
  WGate,
  WUp,
  WDown,  // per layer
};

struct TensorName {
  WeightRole role;
  bool per_layer;
  const char* hf;    // e.g. "model.layers.{}.self_attn.q_proj.weight"
  const char* gguf;  // e.g. "blk.{}.attn_q.weight"
};

extern const std::array<TensorName, 17> kTensorNames;

const TensorName& tensor_name(WeightRole role);
std::string hf_tensor_name(WeightRole role, std::int64_t layer = -1);
std::string gguf_tensor_name(WeightRole role, std::int64_t layer = -1);

}  // namespace ls
