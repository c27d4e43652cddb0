// The Qwen2 decoder, as Hugging Face's Qwen2ForCausalLM defines it (all math in float32):
//   x = embed[tokens]
//   per layer:  h = rmsnorm(x); q,k,v = h Wq^T + bq, h Wk^T + bk, h Wv^T + bv
//               rope(q, k) at each token's position (NeoX rotate-half)
//               att = softmax(q k^T / sqrt(hd), causal) v   (each kv head serves heads/kv_heads q
//               heads) x += att Wo^T;  h = rmsnorm(x);  x += (silu(h Wg^T) * (h Wu^T)) Wd^T
//   logits = rmsnorm(x) lm_head^T
#include "model/qwen2.h"

#include <cmath>

#include "kernels/matmul.h"
#include "kernels/ops.h"

namespace ls {

namespace k = kernels;

Activations::Activations(const ModelConfig& c, std::int64_t max_t) : max_tokens(max_t) {
  const auto T = static_cast<std::size_t>(max_t);
  x.resize(T * c.hidden_size);
  xn.resize(T * c.hidden_size);
  q.resize(T * c.q_dim());
  k.resize(T * c.kv_dim());
  v.resize(T * c.kv_dim());
  att.resize(T * c.q_dim());
  proj.resize(T * c.hidden_size);
  gate.resize(T * c.intermediate_size);
  up.resize(T * c.intermediate_size);
  rope_cos.resize(T * c.head_dim / 2);
  rope_sin.resize(T * c.head_dim / 2);
}

namespace {

void add_bias(std::vector<float>& y, const std::vector<float>& b, std::size_t n_tokens) {
  const std::size_t n = b.size();
  for (std::size_t t = 0; t < n_tokens; ++t)
    for (std::size_t i = 0; i < n; ++i) y[t * n + i] += b[i];
}

void add_into(std::vector<float>& x, const std::vector<float>& y, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) x[i] += y[i];
}

// Attention for every (token, head) pair of the chunk over the cache, which already holds
// the chunk's own keys and values. Token t sits at position pos0 + t and sees [0, pos0 + t].
void attention(const ModelConfig& c, KVCache& cache, std::size_t layer, std::int64_t pos0,
               std::size_t n_tokens, Activations& a, ThreadPool& pool) {
  const auto heads = static_cast<std::size_t>(c.num_attention_heads);
  const auto hd = static_cast<std::size_t>(c.head_dim);
  const std::size_t group = heads / static_cast<std::size_t>(c.num_key_value_heads);
  const auto kv_stride = static_cast<std::size_t>(c.kv_dim());
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const float* k_base = cache.k_at(layer, 0);
  const float* v_base = cache.v_at(layer, 0);
  pool.parallel_for(n_tokens * heads, [&](std::size_t begin, std::size_t end) {
    thread_local std::vector<float> scratch;
    const std::size_t need = static_cast<std::size_t>(pos0) + n_tokens;
    if (scratch.size() < need) scratch.resize(need);
    for (std::size_t i = begin; i < end; ++i) {
      const std::size_t t = i / heads, h = i % heads;
      const std::size_t kv_off = (h / group) * hd;
      const std::size_t n_ctx = static_cast<std::size_t>(pos0) + t + 1;
      k::attend(&a.q[t * heads * hd + h * hd], k_base + kv_off, v_base + kv_off, n_ctx, kv_stride,
                hd, scale, scratch.data(), &a.att[t * heads * hd + h * hd]);
    }
  });
}

void forward_chunk(const ModelConfig& c, const Weights& w, KVCache& cache, Activations& a,
                   std::span<const std::int32_t> tokens, ThreadPool& pool) {
  const std::size_t T = tokens.size();
  const auto H = static_cast<std::size_t>(c.hidden_size);
  const auto hd = static_cast<std::size_t>(c.head_dim);
  const auto kv = static_cast<std::size_t>(c.kv_dim());
  const auto ff = static_cast<std::size_t>(c.intermediate_size);
  const auto eps = static_cast<float>(c.rms_norm_eps);
  const std::int64_t pos0 = cache.length;
  const int nt = static_cast<int>(T);
  cache.reserve(pos0 + static_cast<std::int64_t>(T));

  for (std::size_t t = 0; t < T; ++t) {
    k::row_to_f32(w.embed, tokens[t], {&a.x[t * H], H});
    k::rope_angles(static_cast<std::size_t>(pos0) + t, hd, c.rope_theta, &a.rope_cos[t * hd / 2],
                   &a.rope_sin[t * hd / 2]);
  }
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& L = w.layers[l];
    for (std::size_t t = 0; t < T; ++t)
      k::rmsnorm(&a.x[t * H], L.attn_norm.data(), H, eps, &a.xn[t * H]);
    k::matmul(L.wq, a.xn, nt, a.q, pool);
    k::matmul(L.wk, a.xn, nt, a.k, pool);
    k::matmul(L.wv, a.xn, nt, a.v, pool);
    add_bias(a.q, L.bq, T);
    add_bias(a.k, L.bk, T);
    add_bias(a.v, L.bv, T);
    for (std::size_t t = 0; t < T; ++t) {
      const float* cs = &a.rope_cos[t * hd / 2];
      const float* sn = &a.rope_sin[t * hd / 2];
      k::rope_neox(&a.q[t * c.q_dim()], static_cast<std::size_t>(c.num_attention_heads), hd, cs,
                   sn);
      k::rope_neox(&a.k[t * kv], static_cast<std::size_t>(c.num_key_value_heads), hd, cs, sn);
      std::copy_n(&a.k[t * kv], kv, cache.k_at(l, pos0 + static_cast<std::int64_t>(t)));
      std::copy_n(&a.v[t * kv], kv, cache.v_at(l, pos0 + static_cast<std::int64_t>(t)));
    }
    attention(c, cache, l, pos0, T, a, pool);
    k::matmul(L.wo, a.att, nt, a.proj, pool);
    add_into(a.x, a.proj, T * H);

    for (std::size_t t = 0; t < T; ++t)
      k::rmsnorm(&a.x[t * H], L.mlp_norm.data(), H, eps, &a.xn[t * H]);
    k::matmul(L.w_gate, a.xn, nt, a.gate, pool);
    k::matmul(L.w_up, a.xn, nt, a.up, pool);
    k::silu_mul(a.gate.data(), a.up.data(), T * ff, a.gate.data());
    k::matmul(L.w_down, a.gate, nt, a.proj, pool);
    add_into(a.x, a.proj, T * H);
  }
  cache.length = pos0 + static_cast<std::int64_t>(T);
}

}  // namespace

void qwen2_forward(const ModelConfig& c, const Weights& w, KVCache& cache, Activations& a,
                   std::span<const std::int32_t> tokens, bool all_positions,
                   std::span<float> logits, ThreadPool& pool) {
  if (tokens.empty()) fail("forward: no tokens to process");
  const auto V = static_cast<std::size_t>(c.vocab_size);
  const auto H = static_cast<std::size_t>(c.hidden_size);
  const std::size_t want = (all_positions ? tokens.size() : 1) * V;
  if (logits.size() < want)
    fail("forward: logits buffer holds {} floats, need {}", logits.size(), want);
  for (std::int32_t id : tokens)
    if (id < 0 || id >= c.vocab_size)
      fail("token id {} is out of range: the model's vocab_size is {}", id, c.vocab_size);
  if (cache.length + static_cast<std::int64_t>(tokens.size()) > c.max_position_embeddings)
    fail("context of {} tokens exceeds the model's max_position_embeddings {}",
         cache.length + static_cast<std::int64_t>(tokens.size()), c.max_position_embeddings);

  const auto chunk = static_cast<std::size_t>(a.max_tokens);
  for (std::size_t start = 0; start < tokens.size(); start += chunk) {
    const std::size_t n = std::min(chunk, tokens.size() - start);
    forward_chunk(c, w, cache, a, tokens.subspan(start, n), pool);
    const bool last_chunk = start + n == tokens.size();
    if (!all_positions && !last_chunk) continue;
    // Final norm and lm_head: every position of the chunk, or only the very last token.
    const std::size_t first = all_positions ? 0 : n - 1;
    const std::size_t count = n - first;
    for (std::size_t t = 0; t < count; ++t)
      k::rmsnorm(&a.x[(first + t) * H], w.final_norm.data(), H, static_cast<float>(c.rms_norm_eps),
                 &a.xn[t * H]);
    float* out = all_positions ? &logits[start * V] : logits.data();
    k::matmul(w.lm_head, {a.xn.data(), count * H}, static_cast<int>(count), {out, count * V}, pool);
  }
}

}  // namespace ls
