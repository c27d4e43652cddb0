// llama-quantize's mixed file types (Q2_K, Q3_K_M, Q4_K_M, Q5_K_M): one default K-quant for the
// matrices and more bits for some of them (the tied token embedding or output matrix, attn_v,
// attn_output, ffn_down of chosen layers), as llama-quantize picks them per tensor for a dense
// model without an importance matrix.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/dtype.h"
#include "formats/tensor_names.h"

namespace ls::convert {

enum class QuantMix : std::uint8_t { Q2_K, Q3_K_M, Q4_K_M, Q5_K_M };

// "q2_k", "q3_k_m", "q4_k_m", "q5_k_m" (any case); nullopt for anything else.
std::optional<QuantMix> quant_mix_from_name(std::string_view name);
std::string_view quant_mix_name(QuantMix mix);    // "Q4_K_M", ...
DType quant_mix_default_type(QuantMix mix);       // Q2_K, Q3_K, Q4_K, Q5_K
std::uint32_t quant_mix_file_type(QuantMix mix);  // general.file_type: 10, 12, 15, 17

// The type llama-quantize gives matrix `role` of layer `layer` (of n_layers; -1 for the global
// ones) before the fallback for rows that are not whole blocks (gguf_tensor_type). n_gqa is
// attention heads / key-value heads; tied: the token embedding is also the output matrix; cols:
// the matrix's row length.
DType quant_mix_tensor_type(QuantMix mix, formats::WeightRole role, std::int64_t layer,
                            std::int64_t n_layers, std::int64_t n_gqa, bool tied,
                            std::int64_t cols);

}  // namespace ls::convert
