// Qwen2-MoE as transformers' modeling_qwen2_moe computes it:
//   attention input: Qwen2's (q, k, v projections with biases; qwen2.cpp)
//   MLP of a sparse layer: softmax router over num_experts, the top num_experts_per_tok
//     (renormalised only when norm_topk_prob, false in the released models), plus the shared
//     expert gated by sigmoid(h . shared_expert_gate) (moe.cpp)
//   MLP of a layer in mlp_only_layers or off the decoder_sparse_step grid: dense SwiGLU
#include "model/qwen2_moe.h"

#include "model/qwen2.h"

namespace ls::model {

const Architecture kQwen2Moe{"qwen2_moe", "Qwen2MoeForCausalLM", true, false,
                             qwen2_attention_input};

}  // namespace ls::model
