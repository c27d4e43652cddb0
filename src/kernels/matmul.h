// Matrix products with a weight matrix stored row-major as [rows, cols] in the file (the
// PyTorch nn.Linear layout: out_features x in_features), F32, BF16, F16 or a GGML block format.
// y[t, r] = sum_i W[r, i] * x[t, i] for n_tokens rows of x. Rows of W are split across the
// thread pool; every output element is one dot product computed the same way whatever the
// thread count or n_tokens, so prefill, incremental decode and any thread count agree bit for bit.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "core/aligned.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/interleave.h"

namespace ls::kernels {

// The activations of one call in the form a weight's kernels take: quantized for block formats
// (and each block's scale and sum for interleaved rows), rounded to BF16 for bf16_activations.
struct PreparedActivations {
  AlignedVector<std::uint8_t> xq;    // [n_tokens, quantized row bytes]
  std::vector<ActBlock> act_blocks;  // [n_tokens, cols / 32] for interleaved weights
};

// Buffers a matrix product reuses from call to call (no allocation once warmed up): one set of
// prepared activations per product of a matmul_set (products whose weights take the same form
// share the first one's).
struct MatmulScratch {
  std::vector<PreparedActivations> forms;
};

// Optional: writes row t of x (the product's input, e.g. silu(gate) * up). The product calls it
// once for every row before reading x, as it prepares the activations (for several rows on all
// the threads): one parallel pass instead of a separate element-wise loop.
using InputProducer = std::function<void(std::size_t t)>;

// x: [n_tokens, cols], y: [n_tokens, rows]. Throws if w is not 2-D or sizes disagree.
void matmul(const TensorView& w, std::span<const float> x, int n_tokens, std::span<float> y,
            ThreadPool& pool, MatmulScratch& scratch, const InputProducer* produce = nullptr);

// One product of a matmul_set: y = x W^T.
struct MatmulProduct {
  const TensorView* w;
  std::span<float> y;
};

// Several products of the same x (q, k and v; gate and up) as one parallel loop over all their
// rows: one wait for the threads instead of one per product, and the activations prepared once
// per form. Every output element is the one matmul computes: the same bits.
void matmul_set(std::span<const MatmulProduct> products, std::span<const float> x, int n_tokens,
                ThreadPool& pool, MatmulScratch& scratch, const InputProducer* produce = nullptr);

// One product of a matmul_grouped: y = x W^T over its own n_tokens rows of x.
struct GroupedProduct {
  const TensorView* w;
  std::span<const float> x;  // [n_tokens, cols]
  int n_tokens;
  std::span<float> y;                      // [n_tokens, rows]
  const InputProducer* produce = nullptr;  // writes row t of this x before it is read
};

// Products that each have their own input (the experts of a sparse layer, each over the tokens
// routed to it) as one parallel loop over all their rows: one wait for the threads instead of
// one per product. Every output element is the one matmul computes: the same bits.
void matmul_grouped(std::span<const GroupedProduct> products, ThreadPool& pool,
                    MatmulScratch& scratch);

// One row of W as float32 (e.g. an embedding lookup).
void row_to_f32(const TensorView& w, std::int64_t row, std::span<float> out);

// Any 1-D tensor as float32 (norm weights, biases).
void tensor_to_f32(const TensorView& t, std::span<float> out);

}  // namespace ls::kernels
