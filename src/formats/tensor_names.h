// The one table that maps the tensor names of model files to the engine's weight roles: the
// Hugging Face (safetensors) name and the GGUF (llama.cpp) name of each role, per layer where
// "{}" stands for the layer index (and, in a Hugging Face expert's name, then the expert index:
// GGUF stacks a layer's experts in one 3-D tensor [expert, out, in]). Loaders, the
// synthetic-model writer and the tests all use it.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace ls::formats {

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
  // Mixture of experts (qwen2_moe, qwen3_moe), in a sparse layer in place of WGate/WUp/WDown.
  Router,            // [experts, hidden]: mlp.gate / ffn_gate_inp
  ExpertGate,        // per expert [expert_intermediate, hidden] (GGUF: stacked)
  ExpertUp,          // per expert [expert_intermediate, hidden]
  ExpertDown,        // per expert [hidden, expert_intermediate]
  SharedGate,        // qwen2_moe's shared expert [shared_intermediate, hidden]
  SharedUp,          // [shared_intermediate, hidden]
  SharedDown,        // [hidden, shared_intermediate]
  SharedExpertGate,  // [1, hidden] (GGUF: [hidden]): the shared expert's sigmoid gate
};

struct TensorName {
  WeightRole role;
  bool per_layer;
  bool per_expert;   // the Hugging Face name has an expert index; GGUF stacks the experts
  const char* hf;    // e.g. "model.layers.{}.self_attn.q_proj.weight"
  const char* gguf;  // e.g. "blk.{}.attn_q.weight"
};

extern const std::array<TensorName, 25> kTensorNames;

const TensorName& tensor_name(WeightRole role);
// `expert`: the expert's index for a per-expert role (ignored by GGUF names: stacked).
std::string hf_tensor_name(WeightRole role, std::int64_t layer = -1, std::int64_t expert = -1);
std::string gguf_tensor_name(WeightRole role, std::int64_t layer = -1);

}  // namespace ls::formats
