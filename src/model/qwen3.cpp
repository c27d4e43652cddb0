// The Qwen3 attention input, as Hugging Face's Qwen3Attention computes it (float32):
//   q = h Wq^T          [T, heads * hd]      no biases
//   k = h Wk^T          [T, kv_heads * hd]
//   v = h Wv^T          [T, kv_heads * hd]
//   q[t, head] = rmsnorm(q[t, head]) * q_norm    per head, over hd; q_norm [hd]
//   k[t, head] = rmsnorm(k[t, head]) * k_norm    k_norm [hd]; v is not normed
// RoPE then rotates the normed q and k (decoder.cpp). head_dim comes from config.json and need
// not be hidden / heads (Qwen3-0.6B: hidden 1024, 16 heads of 128).
#include "model/qwen3.h"

#include "kernels/ops.h"

namespace ls::model {

namespace {

namespace k = kernels;

// Each of the rows x heads vectors of hd in `x`, normed in place with weight `w` [hd].
void head_rmsnorm(std::span<float> x, std::size_t rows, std::size_t heads, std::size_t hd,
                  std::span<const float> w, float eps) {
  for (std::size_t i = 0; i < rows * heads; ++i)
    k::rmsnorm(&x[i * hd], w.data(), hd, eps, &x[i * hd]);
}

}  // namespace

void qwen3_attention_input(const ModelConfig& c, const LayerWeights& L, std::size_t T,
                           Activations& a, ThreadPool& pool) {
  const int nt = static_cast<int>(T);
  const k::MatmulProduct qkv[] = {{&L.wq, a.q}, {&L.wk, a.k}, {&L.wv, a.v}};
  k::matmul_set(qkv, a.xn, nt, pool, a.matmul);
  const auto hd = static_cast<std::size_t>(c.head_dim);
  const auto eps = static_cast<float>(c.rms_norm_eps);
  head_rmsnorm(a.q, T, static_cast<std::size_t>(c.num_attention_heads), hd, L.q_norm, eps);
  head_rmsnorm(a.k, T, static_cast<std::size_t>(c.num_key_value_heads), hd, L.k_norm, eps);
}

const Architecture kQwen3{"qwen3", "Qwen3ForCausalLM", false, true, qwen3_attention_input};

}  // namespace ls::model
