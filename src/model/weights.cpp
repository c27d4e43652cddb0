// Binding and shape checks of the weights; see weights.h.
#include "model/weights.h"

#include "core/error.h"
#include "kernels/matmul.h"
#include "model/tensor_names.h"

namespace ls {

namespace {

struct Binder {
  const TensorLookup& lookup;
  bool gguf;
  const std::string& source;

  TensorView view(WeightRole role, std::int64_t layer, std::vector<std::int64_t> shape) const {
    const std::string name = gguf ? gguf_tensor_name(role, layer) : hf_tensor_name(role, layer);
    const TensorView* t = lookup(name);
    if (t == nullptr) fail("{}: missing tensor '{}'", source, name);
    if (t->shape != shape)
      fail("{}: tensor '{}' has shape {}, expected {}", source, name, shape_str(t->shape),
           shape_str(shape));
    return *t;
  }

  std::vector<float> vec(WeightRole role, std::int64_t layer, std::int64_t n) const {
    const TensorView t = view(role, layer, {n});
    std::vector<float> out(static_cast<std::size_t>(n));
    kernels::tensor_to_f32(t, out);
    return out;
  }
};

}  // namespace

Weights bind_weights(const ModelConfig& c, bool qkv_bias, bool qk_norm, const TensorLookup& lookup,
                     bool gguf_names, const std::string& source) {
  const Binder b{lookup, gguf_names, source};
  using R = WeightRole;
  const std::int64_t h = c.hidden_size, q = c.q_dim(), kv = c.kv_dim(), ff = c.intermediate_size;
  Weights w;
  w.embed = b.view(R::TokenEmbedding, -1, {c.vocab_size, h});
  w.final_norm = b.vec(R::OutputNorm, -1, h);
  const std::string lm_name = gguf_names ? gguf_tensor_name(R::LmHead) : hf_tensor_name(R::LmHead);
  if (c.tie_word_embeddings) {
    w.lm_head = w.embed;
  } else {
    if (lookup(lm_name) == nullptr)
      fail("{}: tie_word_embeddings is false but tensor '{}' is missing", source, lm_name);
    w.lm_head = b.view(R::LmHead, -1, {c.vocab_size, h});
  }
  for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerWeights L;
    L.attn_norm = b.vec(R::AttnNorm, l, h);
    L.wq = b.view(R::Wq, l, {q, h});
    L.wk = b.view(R::Wk, l, {kv, h});
    L.wv = b.view(R::Wv, l, {kv, h});
    if (qkv_bias) {
      L.bq = b.vec(R::Bq, l, q);
      L.bk = b.vec(R::Bk, l, kv);
      L.bv = b.vec(R::Bv, l, kv);
    }
    if (qk_norm) {
      L.q_norm = b.vec(R::QNorm, l, c.head_dim);
      L.k_norm = b.vec(R::KNorm, l, c.head_dim);
    }
    L.wo = b.view(R::Wo, l, {h, q});
    L.mlp_norm = b.vec(R::MlpNorm, l, h);
    L.w_gate = b.view(R::WGate, l, {ff, h});
    L.w_up = b.view(R::WUp, l, {ff, h});
    L.w_down = b.view(R::WDown, l, {h, ff});
    w.layers.push_back(std::move(L));
  }
  return w;
}

}  // namespace ls
