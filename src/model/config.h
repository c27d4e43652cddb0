// ModelConfig: every hyper-parameter the forward pass needs, parsed and validated in one
// function from Hugging Face config.json keys (the GGUF loader maps its metadata onto the same
// keys and calls the same function), so both formats obey the same rules.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ls::model {

// Rotary embedding: the inverse frequency of each of the head_dim/2 pairs and the factor on
// cos and sin, as transformers' modeling_rope_utils computes them (default or YaRN).
struct RopeConfig {
  std::string type = "default";  // "default" or "yarn"
  std::vector<double> inv_freq;  // [head_dim / 2]
  double attention_factor = 1.0;
  double factor = 1.0;                // yarn: rope_scaling.factor
  std::int64_t original_context = 0;  // yarn: original_max_position_embeddings
};

// The sparse MLP of the mixture-of-experts models (qwen2_moe, qwen3_moe); num_experts 0 in
// dense ones. Layer l is sparse when it is on the decoder_sparse_step grid and not in
// mlp_only_layers (transformers' rule); the others keep a dense MLP of intermediate_size.
struct MoeConfig {
  std::int64_t num_experts = 0;
  std::int64_t experts_per_token = 0;    // num_experts_per_tok: the top-k of the router
  std::int64_t expert_intermediate = 0;  // moe_intermediate_size
  std::int64_t shared_intermediate = 0;  // shared_expert_intermediate_size (qwen2_moe); 0: none
  bool norm_topk_prob = false;           // the chosen weights divided by their sum
  std::int64_t sparse_step = 1;          // decoder_sparse_step
  std::vector<std::int64_t> mlp_only_layers;
};

struct ModelConfig {
  std::string model_type;        // "qwen2", "qwen3", "qwen2_moe" or "qwen3_moe"
  std::int64_t hidden_size = 0;  // d_model, e.g. 896
  std::int64_t intermediate_size = 0;
  std::int64_t num_hidden_layers = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_key_value_heads = 0;
  std::int64_t head_dim = 0;  // config "head_dim" (Qwen3), else hidden_size / num_attention_heads
  std::int64_t vocab_size = 0;
  std::int64_t max_position_embeddings = 0;
  double rms_norm_eps = 0;
  double rope_theta = 0;
  RopeConfig rope;  // from rope_theta and rope_scaling
  bool tie_word_embeddings = false;
  std::int64_t bos_token_id = -1;  // -1: none given
  std::int64_t eos_token_id = -1;
  MoeConfig moe;

  std::int64_t q_dim() const { return num_attention_heads * head_dim; }
  // Whether layer l's MLP is the mixture of experts (false in every layer of a dense model).
  bool sparse_layer(std::int64_t layer) const;
  // The widest MLP hidden size any layer's product needs: dense, expert or shared expert.
  std::int64_t max_intermediate() const;
  std::int64_t kv_dim() const { return num_key_value_heads * head_dim; }
};

// `source` names the file in error messages (e.g. "models/x/config.json").
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& source);
ModelConfig load_model_config(const std::string& config_json_path);

}  // namespace ls::model
