// The name table; see tensor_names.h.
#include "formats/tensor_names.h"

#include <fmt/format.h>

#include "core/error.h"

namespace ls::formats {

using R = WeightRole;

const std::array<TensorName, 25> kTensorNames = {{
    {R::TokenEmbedding, false, false, "model.embed_tokens.weight", "token_embd.weight"},
    {R::OutputNorm, false, false, "model.norm.weight", "output_norm.weight"},
    {R::LmHead, false, false, "lm_head.weight", "output.weight"},
    {R::AttnNorm, true, false, "model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},
    {R::Wq, true, false, "model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight"},
    {R::Bq, true, false, "model.layers.{}.self_attn.q_proj.bias", "blk.{}.attn_q.bias"},
    {R::Wk, true, false, "model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight"},
    {R::Bk, true, false, "model.layers.{}.self_attn.k_proj.bias", "blk.{}.attn_k.bias"},
    {R::Wv, true, false, "model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight"},
    {R::Bv, true, false, "model.layers.{}.self_attn.v_proj.bias", "blk.{}.attn_v.bias"},
    {R::QNorm, true, false, "model.layers.{}.self_attn.q_norm.weight", "blk.{}.attn_q_norm.weight"},
    {R::KNorm, true, false, "model.layers.{}.self_attn.k_norm.weight", "blk.{}.attn_k_norm.weight"},
    {R::Wo, true, false, "model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight"},
    {R::MlpNorm, true, false, "model.layers.{}.post_attention_layernorm.weight",
     "blk.{}.ffn_norm.weight"},
    {R::WGate, true, false, "model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight"},
    {R::WUp, true, false, "model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight"},
    {R::WDown, true, false, "model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight"},
    {R::Router, true, false, "model.layers.{}.mlp.gate.weight", "blk.{}.ffn_gate_inp.weight"},
    {R::ExpertGate, true, true, "model.layers.{}.mlp.experts.{}.gate_proj.weight",
     "blk.{}.ffn_gate_exps.weight"},
    {R::ExpertUp, true, true, "model.layers.{}.mlp.experts.{}.up_proj.weight",
     "blk.{}.ffn_up_exps.weight"},
    {R::ExpertDown, true, true, "model.layers.{}.mlp.experts.{}.down_proj.weight",
     "blk.{}.ffn_down_exps.weight"},
    {R::SharedGate, true, false, "model.layers.{}.mlp.shared_expert.gate_proj.weight",
     "blk.{}.ffn_gate_shexp.weight"},
    {R::SharedUp, true, false, "model.layers.{}.mlp.shared_expert.up_proj.weight",
     "blk.{}.ffn_up_shexp.weight"},
    {R::SharedDown, true, false, "model.layers.{}.mlp.shared_expert.down_proj.weight",
     "blk.{}.ffn_down_shexp.weight"},
    {R::SharedExpertGate, true, false, "model.layers.{}.mlp.shared_expert_gate.weight",
     "blk.{}.ffn_gate_inp_shexp.weight"},
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

std::string hf_tensor_name(WeightRole role, std::int64_t layer, std::int64_t expert) {
  const auto& n = tensor_name(role);
  if (n.per_expert) return fmt::format(fmt::runtime(n.hf), layer, expert);
  return expand(n.hf, n.per_layer, layer);
}

std::string gguf_tensor_name(WeightRole role, std::int64_t layer) {
  const auto& n = tensor_name(role);
  return expand(n.gguf, n.per_layer, layer);
}

}  // namespace ls::formats
