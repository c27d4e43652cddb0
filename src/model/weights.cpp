// Binding and shape checks of the weights; see weights.h.
#include "model/weights.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "formats/tensor_names.h"
#include "kernels/matmul.h"

namespace ls::model {

namespace {

struct Binder {
  const TensorLookup& lookup;
  bool gguf;
  bool validate;
  const std::string& source;

  TensorView view(formats::WeightRole role, std::int64_t layer, std::vector<std::int64_t> shape,
                  std::int64_t expert = -1) const {
    const std::string name = name_of(role, layer, expert);
    const TensorView* t = lookup(name);
    if (t == nullptr) fail("{}: missing tensor '{}'", source, name);
    if (t->shape != shape)
      fail("{}: tensor '{}' has shape {}, expected {}", source, name, shape_str(t->shape),
           shape_str(shape));
    return *t;
  }

  std::vector<float> vec(formats::WeightRole role, std::int64_t layer, std::int64_t n,
                         std::vector<std::int64_t> shape = {}) const {
    const TensorView t = view(role, layer, shape.empty() ? std::vector<std::int64_t>{n} : shape);
    std::vector<float> out(static_cast<std::size_t>(n));
    kernels::tensor_to_f32(t, out);
    for (std::size_t i = 0; validate && i < out.size(); ++i)
      if (!std::isfinite(out[i]))
        fail("{}: tensor '{}' holds {} at index {}: a norm weight or bias must be finite", source,
             name_of(role, layer), out[i], i);
    return out;
  }

  std::string name_of(formats::WeightRole role, std::int64_t layer,
                      std::int64_t expert = -1) const {
    return gguf ? formats::gguf_tensor_name(role, layer)
                : formats::hf_tensor_name(role, layer, expert);
  }

  // The f16 scales of a GGML block matrix, each finite: a NaN scale would be masked further on
  // (the activations' int8 quantization turns NaN into ordinary numbers) and give plausible,
  // wrong logits. One 2-byte read per block (1/17 of a Q8_0 file).
  TensorView matrix(formats::WeightRole role, std::int64_t layer, std::vector<std::int64_t> shape,
                    std::int64_t expert = -1) const {
    const TensorView t = view(role, layer, std::move(shape), expert);
    if (!validate) return t;
    std::size_t scale_at = 0, scales = 1;  // offset of the f16 scale(s) in a block
    switch (t.dtype) {
      case DType::Q8_0:
      case DType::Q4_0:
      case DType::Q5_0:
      case DType::IQ4_NL:
        scale_at = 0;
        break;
      case DType::Q4_1:
      case DType::Q5_1:
        scale_at = 0, scales = 2;  // d and m
        break;
      case DType::Q4_K:
      case DType::Q5_K:
        scale_at = 0, scales = 2;  // d and dmin
        break;
      case DType::Q3_K:
        scale_at = 108;  // d after hmask, qs and the 12 bytes of scales
        break;
      case DType::Q2_K:
        scale_at = 80, scales = 2;  // d and dmin after the 16 scale bytes and qs
        break;
      case DType::Q6_K:
        scale_at = 208;  // d after ql, qh and the 16 sub-block scales
        break;
      default:
        return t;
    }
    const std::size_t block = dtype_block_bytes(t.dtype);
    const std::size_t blocks = t.nbytes() / block;
    for (std::size_t b = 0; b < blocks; ++b)
      for (std::size_t k = 0; k < scales; ++k) {
        std::uint16_t h;
        std::memcpy(&h, t.data + b * block + scale_at + 2 * k, 2);
        if ((h & 0x7c00u) == 0x7c00u)  // f16 exponent all ones: infinity or NaN
          fail(
              "{}: tensor '{}' has a non-finite block scale in block {} (of {}): the file is "
              "damaged",
              source, t.name, b, blocks);
      }
    return t;
  }

  // Expert e's [rows, cols] matrix of `role`: its own tensor in a Hugging Face file, a slice of
  // the layer's stacked [experts, rows, cols] tensor in GGUF (rows of the same bytes; every
  // block type's rows are whole blocks).
  std::vector<TensorView> experts(formats::WeightRole role, std::int64_t layer, std::int64_t n,
                                  std::int64_t rows, std::int64_t cols) const {
    std::vector<TensorView> out;
    if (!gguf) {
      for (std::int64_t e = 0; e < n; ++e) out.push_back(matrix(role, layer, {rows, cols}, e));
      return out;
    }
    const TensorView all = matrix(role, layer, {n, rows, cols});
    for (std::int64_t e = 0; e < n; ++e) {
      TensorView t = all;
      t.name = fmt::format("{}[expert {}]", all.name, e);
      t.shape = {rows, cols};
      t.data = all.data + static_cast<std::size_t>(e) * t.nbytes();
      out.push_back(std::move(t));
    }
    return out;
  }
};

// A sparse layer's router, experts and (qwen2_moe) shared expert.
MoeWeights bind_moe(const Binder& b, const ModelConfig& c, std::int64_t l) {
  using R = formats::WeightRole;
  const std::int64_t h = c.hidden_size, n = c.moe.num_experts, ff = c.moe.expert_intermediate;
  MoeWeights m;
  m.router = b.matrix(R::Router, l, {n, h});
  const auto gate = b.experts(R::ExpertGate, l, n, ff, h);
  const auto up = b.experts(R::ExpertUp, l, n, ff, h);
  const auto down = b.experts(R::ExpertDown, l, n, h, ff);
  for (std::size_t e = 0; e < gate.size(); ++e) m.experts.push_back({gate[e], up[e], down[e]});
  if (const std::int64_t sf = c.moe.shared_intermediate; sf > 0) {
    m.shared = {b.matrix(R::SharedGate, l, {sf, h}), b.matrix(R::SharedUp, l, {sf, h}),
                b.matrix(R::SharedDown, l, {h, sf})};
    // Hugging Face: a [1, hidden] linear layer; GGUF: a [hidden] vector.
    m.shared_gate = b.gguf ? b.vec(R::SharedExpertGate, l, h)
                           : b.vec(R::SharedExpertGate, l, h, std::vector<std::int64_t>{1, h});
  }
  return m;
}

template <typename View>
std::vector<View*> layer_matrices(auto& L) {
  std::vector<View*> out;
  for (View* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down, &L.moe.router,
                  &L.moe.shared.gate, &L.moe.shared.up, &L.moe.shared.down})
    if (!t->empty()) out.push_back(t);
  for (auto& e : L.moe.experts)
    for (View* t : {&e.gate, &e.up, &e.down}) out.push_back(t);
  return out;
}

}  // namespace

std::vector<TensorView*> LayerWeights::matrices() {
  return layer_matrices<TensorView>(*this);
}

std::vector<const TensorView*> LayerWeights::matrices() const {
  return layer_matrices<const TensorView>(*this);
}

Weights bind_weights(const ModelConfig& c, bool qkv_bias, bool qk_norm, const TensorLookup& lookup,
                     bool gguf_names, bool validate, const std::string& source) {
  const Binder b{lookup, gguf_names, validate, source};
  using R = formats::WeightRole;
  const std::int64_t h = c.hidden_size, q = c.q_dim(), kv = c.kv_dim(), ff = c.intermediate_size;
  Weights w;
  w.embed = b.matrix(R::TokenEmbedding, -1, {c.vocab_size, h});
  w.final_norm = b.vec(R::OutputNorm, -1, h);
  const std::string lm_name =
      gguf_names ? formats::gguf_tensor_name(R::LmHead) : formats::hf_tensor_name(R::LmHead);
  if (c.tie_word_embeddings) {
    w.lm_head = w.embed;
  } else {
    if (lookup(lm_name) == nullptr)
      fail("{}: tie_word_embeddings is false but tensor '{}' is missing", source, lm_name);
    w.lm_head = b.matrix(R::LmHead, -1, {c.vocab_size, h});
  }
  for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerWeights L;
    L.attn_norm = b.vec(R::AttnNorm, l, h);
    L.wq = b.matrix(R::Wq, l, {q, h});
    L.wk = b.matrix(R::Wk, l, {kv, h});
    L.wv = b.matrix(R::Wv, l, {kv, h});
    if (qkv_bias) {
      L.bq = b.vec(R::Bq, l, q);
      L.bk = b.vec(R::Bk, l, kv);
      L.bv = b.vec(R::Bv, l, kv);
    }
    if (qk_norm) {
      L.q_norm = b.vec(R::QNorm, l, c.head_dim);
      L.k_norm = b.vec(R::KNorm, l, c.head_dim);
    }
    L.wo = b.matrix(R::Wo, l, {h, q});
    L.mlp_norm = b.vec(R::MlpNorm, l, h);
    if (c.sparse_layer(l)) {
      L.moe = bind_moe(b, c, l);
    } else {
      L.w_gate = b.matrix(R::WGate, l, {ff, h});
      L.w_up = b.matrix(R::WUp, l, {ff, h});
      L.w_down = b.matrix(R::WDown, l, {h, ff});
    }
    w.layers.push_back(std::move(L));
  }
  return w;
}

}  // namespace ls::model
