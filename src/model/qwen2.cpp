// The Qwen2 attention input, as Hugging Face's Qwen2Attention computes it (float32):
//   q = h Wq^T + bq    [T, heads * hd]
//   k = h Wk^T + bk    [T, kv_heads * hd]
//   v = h Wv^T + bv    [T, kv_heads * hd]
// Everything else is the shared decoder (decoder.cpp).
#include "model/qwen2.h"

#include "kernels/ops.h"

namespace ls::model {

namespace {

namespace k = kernels;

void add_bias(std::span<float> y, std::span<const float> b, std::size_t n_tokens) {
  const std::size_t n = b.size();
  for (std::size_t t = 0; t < n_tokens; ++t)
    for (std::size_t i = 0; i < n; ++i) y[t * n + i] += b[i];
}

}  // namespace

void qwen2_attention_input(const ModelConfig&, const LayerWeights& L, std::size_t T, Activations& a,
                           ThreadPool& pool) {
  const int nt = static_cast<int>(T);
  const k::MatmulProduct qkv[] = {{&L.wq, a.q}, {&L.wk, a.k}, {&L.wv, a.v}};
  k::matmul_set(qkv, a.xn, nt, pool, a.matmul);
  add_bias(a.q, L.bq, T);
  add_bias(a.k, L.bk, T);
  add_bias(a.v, L.bv, T);
}

const Architecture kQwen2{"qwen2", "Qwen2ForCausalLM", true, false, qwen2_attention_input};

}  // namespace ls::model
