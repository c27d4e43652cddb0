// The name table; see tensor_names.h.
#include "model/tensor_names.h"

#include <fmt/format.h>

#include "core/error.h"

namespace ls {

using R = WeightRole;

const std::array<TensorName, 17> kTensorNames = {{
    {R::TokenEmbedding, false, "model.embed_tokens.weight", "token_embd.weight"},
    {R::OutputNorm, false, "model.norm.weight", "output_norm.weight"},
    {R::LmHead, false, "lm_head.weight", "output.weight"},
    {R::AttnNorm, true, "model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},
    {R::Wq, true, "model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight"},
    {R::Bq, true, "model.layers.{}.self_attn.q_proj.bias", "blk.{}.attn_q.bias"},
    {R::Wk, true, "model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight"},
    {R::Bk, true, "model.layers.{}.self_attn.k_proj.bias", "blk.{}.attn_k.bias"},
    {R::Wv, true, "model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight"},
    {R::Bv, true, "model.layers.{}.self_attn.v_proj.bias", "blk.{}.attn_v.bias"},
    {R::QNorm, true, "model.layers.{}.self_attn.q_norm.weight", "blk.{}.attn_q_norm.weight"},
    {R::KNorm, true, "model.layers.{}.self_attn.k_norm.weight", "blk.{}.attn_k_norm.weight"},
    {R::Wo, true, "model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight"},
    {R::MlpNorm, true, "model.layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight"},
    {R::WGate, true, "model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight"},
    {R::WUp, true, "model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight"},
    {R::WDown, true, "model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight"},
}};

const TensorName& tensor_name(WeightRole role) {
  for (const auto& n : kTensorNames)
    if (n.role == role) return n;
  fail("tensor_name: unknown weight role {}", static_cast<int>(role));
}

namespace {
std::string expand(const char* pattern, bool per_layer, std::int64_t layer) {
  return per_layer ? fmt::format(fmt::runtime(pattern), layer) : std::string(pattern);
}
}  // namespace

std::string hf_tensor_name(WeightRole role, std::int64_t layer) {
  const auto& n = tensor_name(role);
  return expand(n.hf, n.per_layer, layer);
}

std::string gguf_tensor_name(WeightRole role, std::int64_t layer) {
  const auto& n = tensor_name(role);
  return expand(n.gguf, n.per_layer, layer);
}

}  // namespace ls
