// The shared decoder (see decoder.h); an architecture's file gives its formula for q, k, v.
//   x = embed[tokens]
//   per layer:  h = rmsnorm(x); q, k, v = attention_input(h)     (qwen2.cpp, qwen3.cpp)
//               rope(q, k) at each token's position (NeoX rotate-half; default or YaRN angles)
//               att = softmax(q k^T / sqrt(hd), causal) v   (each kv head serves heads/kv_heads q
//               heads) x += att Wo^T;  h = rmsnorm(x);  x += (silu(h Wg^T) * (h Wu^T)) Wd^T
//               (a sparse layer: x += the mixture of experts of h, moe.cpp)
//   logits = rmsnorm(x) lm_head^T
// A chunk holds rows from one or more sequences ("segments"); only attention and the KV cache
// look at which sequence a row belongs to.
#include "model/decoder.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/ops.h"
#include "model/moe.h"

namespace ls::model {

namespace k = kernels;

Activations::Activations(const ModelConfig& c, std::int64_t max_t) : max_tokens(max_t) {
  if (max_t < 1) fail("forward: chunk size must be at least 1 token, got {}", max_t);
  const auto T = static_cast<std::size_t>(max_t);
  x.resize(T * c.hidden_size);
  xn.resize(T * c.hidden_size);
  q.resize(T * c.q_dim());
  k.resize(T * c.kv_dim());
  v.resize(T * c.kv_dim());
  att.resize(T * c.q_dim());
  proj.resize(T * c.hidden_size);
  gate.resize(T * c.max_intermediate());
  up.resize(T * c.max_intermediate());
  if (c.moe.num_experts > 0) {
    const auto E = static_cast<std::size_t>(c.moe.num_experts);
    const auto K = static_cast<std::size_t>(c.moe.experts_per_token);
    router.resize(T * E);
    routes.resize(T * K);
    routed.resize(T * K);
    expert_first.reserve(E + 1);
    expert_fill.reserve(E);
    const auto FE = static_cast<std::size_t>(c.moe.expert_intermediate);
    moe_in.resize(T * K * c.hidden_size);
    expert_gate.resize(T * K * FE);
    expert_up.resize(T * K * FE);
    moe_out.resize(T * K * c.hidden_size);
    if (c.moe.shared_intermediate > 0) shared_out.resize(T * c.hidden_size);
  }
  rope_cos.resize(T * c.head_dim / 2);
  rope_sin.resize(T * c.head_dim / 2);
  segments.reserve(T);
  logit_rows.reserve(T);
}

namespace {

using Segment = ChunkSegment;

void add_into(std::span<float> x, std::span<const float> y, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) x[i] += y[i];
}

// Prefill's norms over the pool (each row is computed alone, so any split gives the same bits):
// on the calling thread alone, a chunk's norms kept the other threads waiting (128-token prefill
// 3-5% faster without that, SiLU included). Decode's single row stays serial.
constexpr std::size_t kParallelRows = 4;
void rmsnorm_rows(ThreadPool& pool, const float* x, const float* w, std::size_t T, std::size_t H,
                  float eps, float* out) {
  const auto rows = [&](std::size_t begin, std::size_t end) {
    for (std::size_t t = begin; t < end; ++t) k::rmsnorm(&x[t * H], w, H, eps, &out[t * H]);
  };
  if (T < kParallelRows) return rows(0, T);
  pool.parallel_for(T, rows);
}

// Attention for every (row, kv head) pair of the chunk over its sequence's cache, which already
// holds the chunk's own keys and values. A row at position p sees positions [0, p].
void attention(const ModelConfig& c, std::span<const SequenceInput> batch,
               std::span<const Segment> segs, std::size_t layer, std::size_t n_rows, Activations& a,
               ThreadPool& pool) {
  const auto kv_heads = static_cast<std::size_t>(c.num_key_value_heads);
  const auto hd = static_cast<std::size_t>(c.head_dim);
  const std::size_t group = static_cast<std::size_t>(c.num_attention_heads) / kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  pool.parallel_for(n_rows * kv_heads, [&](std::size_t begin, std::size_t end) {
    // Grows with the context only (doubling), never per token.
    thread_local std::vector<float> scratch;
    for (std::size_t i = begin; i < end; ++i) {
      // Rows in the order first, last, second, second to last, ...: a row's cost grows with its
      // position, so contiguous chunks of this order cost about the same (in row order, the
      // thread with the prompt's end did three times the work of the one with its start).
      const std::size_t k = i / kv_heads, h = i % kv_heads;
      const std::size_t row = k % 2 == 0 ? k / 2 : n_rows - 1 - k / 2;
      std::size_t s = 0;
      while (row >= segs[s].row0 + segs[s].count) ++s;
      const Segment& seg = segs[s];
      KVCache& cache = *batch[seg.seq].cache;
      const auto n_ctx = static_cast<std::size_t>(cache.length) + seg.start + (row - seg.row0) + 1;
      const std::size_t need = group * (n_ctx + 2 * hd);
      if (scratch.size() < need) scratch.resize(std::max(need, 2 * scratch.size()));
      k::attend_group(&a.q[row * group * kv_heads * hd + h * group * hd], group,
                      cache.rows(layer, 0, h), cache.rows(layer, 1, h), cache.dtype(), n_ctx, hd,
                      scale, scratch.data(), &a.att[row * group * kv_heads * hd + h * group * hd]);
    }
  });
}

// --debug-nonfinite: throws when rows [0, T) of `buf` (`width` values each) hold a NaN or an
// infinity, naming the step and the sequence and position of the first such row.
void check_finite(std::span<const float> buf, std::size_t width,
                  std::span<const SequenceInput> batch, std::span<const Segment> segs,
                  const std::string_view step, std::int64_t layer) {
  for (const Segment& s : segs)
    for (std::size_t j = 0; j < s.count; ++j) {
      const float* row = &buf[(s.row0 + j) * width];
      std::size_t i = 0;
      while (i < width && std::isfinite(row[i])) ++i;
      if (i == width) continue;
      const auto pos = batch[s.seq].cache->length + static_cast<std::int64_t>(s.start + j);
      const std::string where =
          layer < 0 ? std::string(step) : fmt::format("layer {} {}", layer, step);
      fail(
          "--debug-nonfinite: the first non-finite value is in {}: {} at index {} of {}, "
          "sequence {} position {} (token id {})",
          where, row[i], i, width, s.seq, pos, batch[s.seq].tokens[s.start + j]);
    }
}

void forward_chunk(const Architecture& arch, const ModelConfig& c, const Weights& w,
                   std::span<const SequenceInput> batch, std::span<const Segment> segs,
                   std::size_t T, Activations& a, ThreadPool& pool, const ForwardChecks& checks) {
  const auto H = static_cast<std::size_t>(c.hidden_size);
  const auto hd = static_cast<std::size_t>(c.head_dim);
  const auto kv = static_cast<std::size_t>(c.kv_dim());
  const auto ff = static_cast<std::size_t>(c.intermediate_size);
  const auto eps = static_cast<float>(c.rms_norm_eps);
  const int nt = static_cast<int>(T);

  for (const Segment& s : segs) {
    const SequenceInput& in = batch[s.seq];
    in.cache->prepare_write(in.cache->length + static_cast<std::int64_t>(s.start),
                            in.cache->length + static_cast<std::int64_t>(s.start + s.count));
    for (std::size_t j = 0; j < s.count; ++j) {
      const std::size_t t = s.row0 + j;
      const auto pos = static_cast<std::size_t>(in.cache->length) + s.start + j;
      k::row_to_f32(w.embed, in.tokens[s.start + j], {&a.x[t * H], H});
      k::rope_angles(pos, c.rope.inv_freq, c.rope.attention_factor, &a.rope_cos[t * hd / 2],
                     &a.rope_sin[t * hd / 2]);
    }
  }
  if (checks.nonfinite) check_finite(a.x, H, batch, segs, "the token embedding", -1);
  // The logit lens: copy a sequence's last row of the residual stream after the embedding and
  // after every layer (one row of `hidden` floats per layer; nothing when no one asked).
  const auto capture = [&](std::size_t row_of_layer) {
    for (const Segment& s : segs) {
      const SequenceInput& in = batch[s.seq];
      if (in.residuals.empty() || s.start + s.count != in.tokens.size()) continue;
      const float* src = &a.x[(s.row0 + s.count - 1) * H];
      std::copy_n(src, H, &in.residuals[row_of_layer * H]);
    }
  };
  capture(0);
  // The router's choice for a sequence's last token, layer by layer (--trace, the page).
  const auto capture_routes = [&](std::size_t layer, bool sparse) {
    const auto K = static_cast<std::size_t>(c.moe.experts_per_token);
    for (const Segment& s : segs) {
      const SequenceInput& in = batch[s.seq];
      if (in.expert_routes.empty() || s.start + s.count != in.tokens.size()) continue;
      for (std::size_t j = 0; j < K; ++j)
        in.expert_routes[layer * K + j] =
            sparse ? a.routes[(s.row0 + s.count - 1) * K + j] : ExpertRoute{-1, 0.0f};
    }
  };
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& L = w.layers[l];
    rmsnorm_rows(pool, a.x.data(), L.attn_norm.data(), T, H, eps, a.xn.data());
    arch.attention_input(c, L, T, a, pool);
    const auto li = static_cast<std::int64_t>(l);
    const auto check = [&](std::span<const float> buf, std::size_t width, const char* step) {
      if (checks.nonfinite) check_finite(buf, width, batch, segs, step, li);
    };
    check(a.q, static_cast<std::size_t>(c.q_dim()), "q projection");
    check(a.k, kv, "k projection");
    check(a.v, kv, "v projection");
    for (const Segment& s : segs) {
      KVCache& cache = *batch[s.seq].cache;
      for (std::size_t j = 0; j < s.count; ++j) {
        const std::size_t t = s.row0 + j;
        const float* cs = &a.rope_cos[t * hd / 2];
        const float* sn = &a.rope_sin[t * hd / 2];
        k::rope_neox(&a.q[t * c.q_dim()], static_cast<std::size_t>(c.num_attention_heads), hd, cs,
                     sn);
        k::rope_neox(&a.k[t * kv], static_cast<std::size_t>(c.num_key_value_heads), hd, cs, sn);
        const std::int64_t pos = cache.length + static_cast<std::int64_t>(s.start + j);
        cache.store(l, pos, &a.k[t * kv], &a.v[t * kv]);
      }
    }
    attention(c, batch, segs, l, T, a, pool);
    check(a.att, static_cast<std::size_t>(c.q_dim()), "attention");
    k::matmul(L.wo, a.att, nt, a.proj, pool, a.matmul);
    check(a.proj, H, "o_proj");
    add_into(a.x, a.proj, T * H);
    check(a.x, H, "residual after attention");

    rmsnorm_rows(pool, a.x.data(), L.mlp_norm.data(), T, H, eps, a.xn.data());
    if (L.sparse()) {
      sparse_mlp(c, L.moe, T, a, pool);
      check(a.proj, H, "mixture of experts");
      capture_routes(l, true);
    } else {
      if (c.moe.num_experts > 0) capture_routes(l, false);
      const std::span<float> gate{a.gate.data(), T * ff}, up{a.up.data(), T * ff};
      const k::MatmulProduct gate_up[] = {{&L.w_gate, gate}, {&L.w_up, up}};
      k::matmul_set(gate_up, a.xn, nt, pool, a.matmul);
      check(gate, ff, "gate_proj");
      check(up, ff, "up_proj");
      // silu(gate) * up into gate, computed by ffn_down's threads as they prepare its input.
      const k::InputProducer silu_mul = [&](std::size_t t) {
        k::silu_mul(&gate[t * ff], &up[t * ff], ff, &gate[t * ff]);
      };
      k::matmul(L.w_down, gate, nt, a.proj, pool, a.matmul, &silu_mul);
      check(gate, ff, "silu(gate) * up");
      check(a.proj, H, "down_proj");
    }
    add_into(a.x, a.proj, T * H);
    check(a.x, H, "residual after the MLP");
    capture(l + 1);
  }
}

// Final norm and lm_head for the rows of the chunk that want logits: every row of an
// all_positions sequence, else only a sequence's last token. When those rows are one run of a
// single sequence's output, the product writes there directly; otherwise through a scratch.
void chunk_logits(const ModelConfig& c, const Weights& w, std::span<const SequenceInput> batch,
                  std::span<const Segment> segs, Activations& a, ThreadPool& pool,
                  const ForwardChecks& checks) {
  const auto H = static_cast<std::size_t>(c.hidden_size);
  const auto V = static_cast<std::size_t>(c.vocab_size);
  std::vector<LogitRow>& outs = a.logit_rows;  // reserved for max_tokens rows
  outs.clear();
  for (const Segment& s : segs) {
    const SequenceInput& in = batch[s.seq];
    for (std::size_t j = 0; j < s.count; ++j) {
      const std::size_t tok = s.start + j;
      if (in.all_positions)
        outs.push_back({s.row0 + j, &in.logits[tok * V]});
      else if (tok + 1 == in.tokens.size())
        outs.push_back({s.row0 + j, in.logits.data()});
    }
  }
  if (outs.empty()) return;
  const std::size_t n = outs.size();
  for (std::size_t g = 0; g < n; ++g)
    k::rmsnorm(&a.x[outs[g].row * H], w.final_norm.data(), H, static_cast<float>(c.rms_norm_eps),
               &a.xn[g * H]);
  bool contiguous = true;
  for (std::size_t g = 1; g < n; ++g) contiguous &= outs[g].dst == outs[0].dst + g * V;
  float* dst = outs[0].dst;
  if (!contiguous) {
    if (a.logits.size() < n * V) a.logits.resize(n * V);
    dst = a.logits.data();
  }
  k::matmul(w.lm_head, {a.xn.data(), n * H}, static_cast<int>(n), {dst, n * V}, pool, a.matmul);
  for (std::size_t g = 0; checks.nonfinite && g < n; ++g) {
    const auto first_bad = [](const float* row, std::size_t width) {
      std::size_t i = 0;
      while (i < width && std::isfinite(row[i])) ++i;
      return i;
    };
    const char* step = nullptr;
    std::size_t i = first_bad(&a.xn[g * H], H);
    if (i < H)
      step = "the final norm";
    else if ((i = first_bad(&dst[g * V], V)) < V)
      step = "lm_head";
    if (step != nullptr)
      fail(
          "--debug-nonfinite: every layer's output is finite; the first non-finite value is in "
          "{} (logits row {} of this chunk, index {})",
          step, g, i);
  }
  if (!contiguous)
    for (std::size_t g = 0; g < n; ++g) std::copy_n(&dst[g * V], V, outs[g].dst);
}

void check_input(const ModelConfig& c, const SequenceInput& in) {
  const auto V = static_cast<std::size_t>(c.vocab_size);
  const auto want_residuals = static_cast<std::size_t>(c.num_hidden_layers + 1) * c.hidden_size;
  if (!in.residuals.empty() && in.residuals.size() < want_residuals)
    fail("forward: residuals buffer holds {} floats, need {}", in.residuals.size(), want_residuals);
  const auto want_routes = static_cast<std::size_t>(c.num_hidden_layers * c.moe.experts_per_token);
  if (!in.expert_routes.empty() && in.expert_routes.size() < want_routes)
    fail("forward: expert_routes buffer holds {} entries, need {}", in.expert_routes.size(),
         want_routes);
  if (in.cache == nullptr) fail("forward: a sequence has no KV cache");
  if (in.tokens.empty()) fail("forward: no tokens to process");
  const std::size_t want = (in.all_positions ? in.tokens.size() : 1) * V;
  if (in.logits.size() < want)
    fail("forward: logits buffer holds {} floats, need {}", in.logits.size(), want);
  for (std::int32_t id : in.tokens)
    if (id < 0 || id >= c.vocab_size)
      fail("token id {} is out of range: the model's vocab_size is {}", id, c.vocab_size);
  in.cache->check_room(in.cache->length + static_cast<std::int64_t>(in.tokens.size()));
}

}  // namespace

void final_logits(const ModelConfig& c, const Weights& w, std::span<const float> x, std::size_t n,
                  std::span<float> xn, std::span<float> logits, ThreadPool& pool,
                  k::MatmulScratch& scratch) {
  const auto H = static_cast<std::size_t>(c.hidden_size);
  const auto V = static_cast<std::size_t>(c.vocab_size);
  if (x.size() < n * H || xn.size() < n * H || logits.size() < n * V)
    fail("final_logits: buffers hold {}, {} and {} floats for {} rows of hidden {}, vocab {}",
         x.size(), xn.size(), logits.size(), n, H, V);
  for (std::size_t g = 0; g < n; ++g)
    k::rmsnorm(&x[g * H], w.final_norm.data(), H, static_cast<float>(c.rms_norm_eps), &xn[g * H]);
  k::matmul(w.lm_head, {xn.data(), n * H}, static_cast<int>(n), {logits.data(), n * V}, pool,
            scratch);
}

void forward(const Architecture& arch, const ModelConfig& c, const Weights& w,
             std::span<const SequenceInput> batch, Activations& a, ThreadPool& pool,
             const ForwardChecks& checks) {
  for (const SequenceInput& in : batch) check_input(c, in);
  const auto chunk = static_cast<std::size_t>(a.max_tokens);
  std::vector<Segment>& segs = a.segments;  // reserved for max_tokens segments
  std::size_t seq = 0, start = 0;
  while (seq < batch.size()) {
    // Fill one chunk with the next tokens of the batch, in order.
    segs.clear();
    std::size_t rows = 0;
    while (seq < batch.size() && rows < chunk) {
      const std::size_t n = std::min(chunk - rows, batch[seq].tokens.size() - start);
      segs.push_back({seq, start, n, rows});
      rows += n;
      start += n;
      if (start == batch[seq].tokens.size()) ++seq, start = 0;
    }
    forward_chunk(arch, c, w, batch, segs, rows, a, pool, checks);
    chunk_logits(c, w, batch, segs, a, pool, checks);
    // The chunk's keys and values are in the caches: advance each sequence past them.
    for (const Segment& s : segs)
      if (s.start + s.count == batch[s.seq].tokens.size())
        batch[s.seq].cache->length += static_cast<std::int64_t>(batch[s.seq].tokens.size());
  }
}

}  // namespace ls::model
