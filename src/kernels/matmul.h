// Matrix products with a weight matrix stored row-major as [rows, cols] in the file (the
// PyTorch nn.Linear layout: out_features x in_features), F32, BF16, F16 or a GGML block format.
// y[t, r] = sum_i W[r, i] * x[t, i] for n_tokens rows of x. Rows of W are split across the
// thread pool; every output element is one dot product computed the same way whatever the
// thread count or n_tokens, so prefill, incremental decode and any thread count agree bit for bit.
#pragma once

#include <span>
#include <vector>

#include "core/aligned.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/interleave.h"

namespace ls::kernels {

// Buffers a matrix product reuses from call to call (no allocation once warmed up).
struct MatmulScratch {
  AlignedVector<std::uint8_t> xq;  // [n_tokens, quantized row bytes] activations for block formats
  std::vector<ActBlock> act_blocks;  // [n_tokens, cols / 32] for interleaved weights
};

// x: [n_tokens, cols], y: [n_tokens, rows]. Throws if w is not 2-D or sizes disagree.
void matmul(const TensorView& w, std::span<const float> x, int n_tokens, std::span<float> y,
            ThreadPool& pool, MatmulScratch& scratch);

// One row of W as float32 (e.g. an embedding lookup).
void row_to_f32(const TensorView& w, std::int64_t row, std::span<float> out);

// Any 1-D tensor as float32 (norm weights, biases).
void tensor_to_f32(const TensorView& t, std::span<float> out);

}  // namespace ls::kernels
