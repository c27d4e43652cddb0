// The decoder every architecture of the family shares (decoder.cpp, top to bottom): embedding,
// per layer RMSNorm -> attention input (the architecture's own: qwen2.cpp, qwen3.cpp) -> RoPE
// -> causal GQA attention over the KV cache -> o_proj -> residual -> RMSNorm -> SwiGLU MLP (a
// sparse layer: the mixture of experts, moe.cpp) -> residual, then the final norm and lm_head. One
// call takes a ragged batch: any number of sequences, each appending its own tokens after what its
// KV cache already holds (different lengths and positions, no padding). All tokens of the batch
// share every matrix product, so the weights are read once per call; each logit is computed by the
// same arithmetic whatever the batch, chunking or thread count, so results agree bit for bit.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/aligned.h"
#include "core/thread_pool.h"
#include "formats/tensor_names.h"
#include "kernels/matmul.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/weights.h"

namespace ls::model {

// Rows [row0, row0 + count) of a forward chunk are tokens [start, start + count) of sequence
// `seq` of the batch.
struct ChunkSegment {
  std::size_t seq, start, count, row0;
};
// A chunk row whose logits are wanted, and where they go.
struct LogitRow {
  std::size_t row;
  float* dst;
};

// One of a row's chosen experts in a sparse layer and its weight in the row's sum.
struct ExpertRoute {
  int expert = 0;
  float weight = 0;
};
// A chunk row routed to an expert, with the expert's weight for it.
struct RoutedRow {
  std::size_t row;
  float weight;
};

// Scratch buffers for up to max_tokens tokens per forward chunk; sized once, reused, so the
// decode loop does not allocate (the logits scratch grows only for multi-sequence batches).
struct Activations {
  std::int64_t max_tokens = 0;
  AlignedVector<float> x;     // [T, hidden]      residual stream
  AlignedVector<float> xn;    // [T, hidden]      normed input of a sub-layer
  AlignedVector<float> q;     // [T, heads*hd]
  AlignedVector<float> k;     // [T, kv_heads*hd]
  AlignedVector<float> v;     // [T, kv_heads*hd]
  AlignedVector<float> att;   // [T, heads*hd]    attention output before o_proj
  AlignedVector<float> proj;  // [T, hidden]      o_proj / down_proj output
  AlignedVector<float> gate;  // [T, max intermediate (dense, expert, shared)]
  AlignedVector<float> up;    // [T, max intermediate]
  // Sparse layers (moe.cpp; empty in dense models):
  AlignedVector<float> router;            // [T, experts]     router logits
  std::vector<ExpertRoute> routes;        // [T, experts_per_token]  each row's choice
  std::vector<RoutedRow> routed;          // [T * experts_per_token] the rows, by expert
  std::vector<std::size_t> expert_first;  // [experts + 1]    expert e's rows in `routed`
  std::vector<std::size_t> expert_fill;   // [experts]
  AlignedVector<float> moe_in;            // [T * per_token, hidden]  xn rows, by expert
  AlignedVector<float> expert_gate;       // [T * per_token, expert intermediate]
  AlignedVector<float> expert_up;         // [T * per_token, expert intermediate]
  AlignedVector<float> moe_out;           // [T * per_token, hidden]  each expert's output
  AlignedVector<float> shared_out;        // [T, hidden]      the shared expert's output
  std::vector<kernels::GroupedProduct> moe_products[2];  // gate and up; down
  std::vector<kernels::InputProducer> moe_producers;     // silu(gate) * up of each down
  AlignedVector<float> rope_cos, rope_sin;               // [T, hd/2]
  AlignedVector<float> logits;         // [rows, vocab] when a batch's logits are scattered
  kernels::MatmulScratch matmul;       // quantized activations
  std::vector<ChunkSegment> segments;  // the current chunk's rows, by sequence
  std::vector<LogitRow> logit_rows;    // the current chunk's rows that want logits

  Activations(const ModelConfig& c, std::int64_t max_tokens);
};

// One sequence's share of a forward call.
struct SequenceInput {
  KVCache* cache = nullptr;              // the sequence's cache; tokens are appended to it
  std::span<const std::int32_t> tokens;  // at positions cache->length, cache->length + 1, ...
  bool all_positions = false;            // logits for every token, else for the last one only
  std::span<float> logits;               // [tokens.size() or 1, vocab]
  // When not empty, [n_layers + 1, hidden]: the residual stream of the last token after the
  // embedding (row 0) and after each layer l (row l), for the logit lens (final_logits).
  std::span<float> residuals;
  // When not empty, [n_layers, experts_per_token] of a mixture of experts: the experts the last
  // token was routed to in each layer and their weights, best first (a dense layer's row:
  // expert -1, weight 0).
  std::span<ExpertRoute> expert_routes;
};

// What differs between the architectures of the family: the names a model_type goes by, the
// attention-input weights its layers have, and how those turn the normed input into q, k, v.
struct Architecture {
  const char* model_type;  // config.json "model_type" and GGUF general.architecture
  const char* hf_class;    // config.json "architectures"
  bool qkv_bias;           // q, k, v projections have biases (Qwen2)
  bool qk_norm;            // per-head RMSNorm weights for q and k (Qwen3)
  // q, k, v ([T, heads*hd], [T, kv_heads*hd] twice) of the chunk's T rows from acts.xn, before
  // RoPE.
  void (*attention_input)(const ModelConfig& config, const LayerWeights& layer, std::size_t T,
                          Activations& acts, ThreadPool& pool);
};

// The architecture of a config's model_type; throws naming the supported ones.
const Architecture& architecture(const std::string& model_type);
// Whether layer `layer` (-1: the global tensors) of the architecture's models has tensors of
// `role` (Qwen3: no biases, q/k norms; a sparse layer: router and experts, no dense MLP).
bool has_weight(const Architecture& arch, const ModelConfig& config, formats::WeightRole role,
                std::int64_t layer);

// Diagnostics a forward call can run on its own results.
struct ForwardChecks {
  // After every step of every layer (q/k/v, attention, o_proj, gate/up, down_proj, the final
  // norm), a NaN or infinity in its output is an error naming the layer, the step, the
  // sequence and the position: where a non-finite value first appeared. Costs one pass over
  // each activation (--debug-nonfinite).
  bool nonfinite = false;
};

// Runs every sequence's tokens through the model in chunks of at most acts.max_tokens tokens
// and writes their logits. Throws (before touching any cache) on an out-of-range token id, a
// context past max_position_embeddings or a logits buffer that is too small.
void forward(const Architecture& arch, const ModelConfig& config, const Weights& weights,
             std::span<const SequenceInput> batch, Activations& acts, ThreadPool& pool,
             const ForwardChecks& checks = {});

// The final norm and lm_head over `n` residual-stream rows x [n, hidden] into logits
// [n, vocab], computed as forward computes a sequence's logits (the same bits for the last
// layer's row): the logit lens reads every layer's row through it. `xn`: [n, hidden] scratch.
void final_logits(const ModelConfig& config, const Weights& weights, std::span<const float> x,
                  std::size_t n, std::span<float> xn, std::span<float> logits, ThreadPool& pool,
                  kernels::MatmulScratch& scratch);

}  // namespace ls::model
