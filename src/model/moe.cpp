// The sparse MLP (see moe.h), for the chunk's T normed rows h:
//   p[t]  = softmax(h[t] Wr^T)                   [experts]   router probabilities, float32
//   top   = the experts_per_token largest p[t]   (ties: the lower expert index first)
//   w[t]  = p[t][top] / sum(p[t][top])  when norm_topk_prob, else p[t][top]
//   y[t]  = sum over e in top, in expert order, of w_e * (silu(h Wg_e^T) * (h Wu_e^T)) Wd_e^T
//   qwen2_moe:  y[t] += sigmoid(h[t] . ws) * (silu(h Wg_s^T) * (h Wu_s^T)) Wd_s^T  (shared expert)
// The rows routed to an expert go through it together: one product per expert per chunk, so
// its weights are read once however many rows chose it. Each row's sum runs over its experts in
// index order (transformers' index_add_ order) whatever else is in the batch, and every product
// computes a row alone, so a row's result is the same bits alone or in a crowd.
#include "model/moe.h"

#include <algorithm>
#include <cmath>

#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"

namespace ls::model {

namespace k = kernels;

namespace {

// Row t's experts and weights into routes[t * k ...], best first.
void route_row(const float* logits, std::size_t n_experts, std::size_t top_k, bool normalize,
               ExpertRoute* routes) {
  float max = logits[0];
  for (std::size_t e = 1; e < n_experts; ++e) max = std::max(max, logits[e]);
  float sum = 0;
  for (std::size_t e = 0; e < n_experts; ++e) sum += std::exp(logits[e] - max);
  // top_k passes of a linear scan (k <= 8 and 128 experts in the real models): the largest
  // logit not yet taken, the lower index on a tie; its probability from the softmax above.
  for (std::size_t i = 0; i < top_k; ++i) {
    std::size_t best = n_experts;
    for (std::size_t e = 0; e < n_experts; ++e) {
      bool taken = false;
      for (std::size_t j = 0; j < i; ++j) taken |= routes[j].expert == static_cast<int>(e);
      if (!taken && (best == n_experts || logits[e] > logits[best])) best = e;
    }
    routes[i] = {static_cast<int>(best), std::exp(logits[best] - max) / sum};
  }
  if (!normalize) return;
  float chosen = 0;
  for (std::size_t i = 0; i < top_k; ++i) chosen += routes[i].weight;
  for (std::size_t i = 0; i < top_k; ++i) routes[i].weight /= chosen;
}

}  // namespace

void sparse_mlp(const ModelConfig& c, const MoeWeights& m, std::size_t T, Activations& a,
                ThreadPool& pool) {
  const auto H = static_cast<std::size_t>(c.hidden_size);
  const auto E = static_cast<std::size_t>(c.moe.num_experts);
  const auto K = static_cast<std::size_t>(c.moe.experts_per_token);
  const std::span<float> logits{a.router.data(), T * E};
  k::matmul(m.router, {a.xn.data(), T * H}, static_cast<int>(T), logits, pool, a.matmul);
  for (std::size_t t = 0; t < T; ++t)
    route_row(&logits[t * E], E, K, c.moe.norm_topk_prob, &a.routes[t * K]);

  // Counting sort of the (row, weight) pairs by expert: expert e's rows, in row order, are
  // a.routed[first[e] .. first[e + 1]).
  std::vector<std::size_t>& first = a.expert_first;
  first.assign(E + 1, 0);
  for (std::size_t i = 0; i < T * K; ++i) ++first[static_cast<std::size_t>(a.routes[i].expert) + 1];
  for (std::size_t e = 0; e < E; ++e) first[e + 1] += first[e];
  std::vector<std::size_t>& fill = a.expert_fill;
  fill.assign(first.begin(), first.end() - 1);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < K; ++j) {
      const ExpertRoute& r = a.routes[t * K + j];
      a.routed[fill[static_cast<std::size_t>(r.expert)]++] = {t, r.weight};
    }

  // Slot i of the expert buffers holds a.routed[i]: expert e's rows are one run of slots, its
  // input rows gathered from xn. Two grouped products run every chosen expert (and the shared
  // expert, over all T rows) at once: gate and up, then down of silu(gate) * up.
  const auto FE = static_cast<std::size_t>(c.moe.expert_intermediate);
  const auto FS = static_cast<std::size_t>(c.moe.shared_intermediate);
  for (std::size_t i = 0; i < T * K; ++i)
    std::copy_n(&a.xn[a.routed[i].row * H], H, &a.moe_in[i * H]);
  std::vector<k::GroupedProduct>& gate_up = a.moe_products[0];
  std::vector<k::GroupedProduct>& down = a.moe_products[1];
  std::vector<k::InputProducer>& silu = a.moe_producers;
  gate_up.clear(), down.clear(), silu.clear();
  const auto add = [&](const MlpWeights& mlp, const float* x, float* gate, float* up, float* out,
                       std::size_t n, std::size_t ff) {
    const int nt = static_cast<int>(n);
    gate_up.push_back({&mlp.gate, {x, n * H}, nt, {gate, n * ff}});
    gate_up.push_back({&mlp.up, {x, n * H}, nt, {up, n * ff}});
    silu.emplace_back([gate, up, ff](std::size_t t) {
      k::silu_mul(&gate[t * ff], &up[t * ff], ff, &gate[t * ff]);
    });
    down.push_back({&mlp.down, {gate, n * ff}, nt, {out, n * H}});
  };
  silu.reserve(E + 1);  // the producers stay where down's products point
  for (std::size_t e = 0; e < E; ++e)
    if (const std::size_t n = first[e + 1] - first[e]; n > 0)
      add(m.experts[e], &a.moe_in[first[e] * H], &a.expert_gate[first[e] * FE],
          &a.expert_up[first[e] * FE], &a.moe_out[first[e] * H], n, FE);
  if (FS > 0) add(m.shared, a.xn.data(), a.gate.data(), a.up.data(), a.shared_out.data(), T, FS);
  for (std::size_t i = 0; i < down.size(); ++i) down[i].produce = &silu[i];
  k::matmul_grouped(gate_up, pool, a.matmul);
  k::matmul_grouped(down, pool, a.matmul);

  // Each row's weighted sum over its experts in expert order (slots run by expert).
  std::fill_n(a.proj.begin(), T * H, 0.0f);
  for (std::size_t i = 0; i < T * K; ++i) {
    float* y = &a.proj[a.routed[i].row * H];
    const float* o = &a.moe_out[i * H];
    const float w = a.routed[i].weight;
    for (std::size_t d = 0; d < H; ++d) y[d] += w * o[d];
  }
  if (FS == 0) return;
  for (std::size_t t = 0; t < T; ++t) {
    const float z = k::dot_f32(m.shared_gate.data(), &a.xn[t * H], H);  // as a 1-row matmul
    const float s = 1.0f / (1.0f + std::exp(-z));
    float* y = &a.proj[t * H];
    const float* o = &a.shared_out[t * H];
    for (std::size_t d = 0; d < H; ++d) y[d] += s * o[d];
  }
}

}  // namespace ls::model
