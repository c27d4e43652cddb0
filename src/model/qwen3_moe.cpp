// Qwen3-MoE as transformers' modeling_qwen3_moe computes it:
//   attention input: Qwen3's (no biases, per-head RMSNorm of q and k before RoPE; qwen3.cpp)
//   MLP of a sparse layer: softmax router over num_experts (128), the top num_experts_per_tok
//     (8) renormalised when norm_topk_prob (true in the released models); no shared expert
//     (moe.cpp)
//   MLP of a layer in mlp_only_layers or off the decoder_sparse_step grid: dense SwiGLU
#include "model/qwen3_moe.h"

#include "model/qwen3.h"

namespace ls::model {

const Architecture kQwen3Moe{"qwen3_moe", "Qwen3MoeForCausalLM", false, true,
                             qwen3_attention_input};

}  // namespace ls::model
