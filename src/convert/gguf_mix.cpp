// llama-quantize's per-tensor choices for its mixed file types; see gguf_mix.h. The rules are
// those of llama.cpp's llama_tensor_get_type for a dense, non-Falcon model, no importance matrix.
#include "convert/gguf_mix.h"

#include <cctype>
#include <string>

namespace ls::convert {

namespace {

// More bits for the first and last eighth of the layers and every third one between them.
bool use_more_bits(std::int64_t i, std::int64_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

}  // namespace

std::optional<QuantMix> quant_mix_from_name(std::string_view name) {
  std::string s;
  for (char c : name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "q2_k") return QuantMix::Q2_K;
  if (s == "q3_k_m") return QuantMix::Q3_K_M;
  if (s == "q4_k_m") return QuantMix::Q4_K_M;
  if (s == "q5_k_m") return QuantMix::Q5_K_M;
  return std::nullopt;
}

std::string_view quant_mix_name(QuantMix mix) {
  switch (mix) {
    case QuantMix::Q2_K:
      return "Q2_K";
    case QuantMix::Q3_K_M:
      return "Q3_K_M";
    case QuantMix::Q4_K_M:
      return "Q4_K_M";
    case QuantMix::Q5_K_M:
      return "Q5_K_M";
  }
  return "?";
}

DType quant_mix_default_type(QuantMix mix) {
  switch (mix) {
    case QuantMix::Q2_K:
      return DType::Q2_K;
    case QuantMix::Q3_K_M:
      return DType::Q3_K;
    case QuantMix::Q4_K_M:
      return DType::Q4_K;
    case QuantMix::Q5_K_M:
      return DType::Q5_K;
  }
  return DType::Q4_K;
}

std::uint32_t quant_mix_file_type(QuantMix mix) {
  switch (mix) {
    case QuantMix::Q2_K:
      return 10;  // LLAMA_FTYPE_MOSTLY_Q2_K
    case QuantMix::Q3_K_M:
      return 12;
    case QuantMix::Q4_K_M:
      return 15;
    case QuantMix::Q5_K_M:
      return 17;
  }
  return 0;
}

DType quant_mix_tensor_type(QuantMix mix, formats::WeightRole role, std::int64_t layer,
                            std::int64_t n_layers, std::int64_t n_gqa, bool tied,
                            std::int64_t cols) {
  const DType base = quant_mix_default_type(mix);
  // The output matrix (the token embedding when tied): Q6_K, or Q8_0 for rows that are not
  // whole 256-blocks.
  if (role == formats::WeightRole::LmHead || (tied && role == formats::WeightRole::TokenEmbedding))
    return cols % 256 != 0 ? DType::Q8_0 : DType::Q6_K;
  switch (role) {
    case formats::WeightRole::Wv:
      if (mix == QuantMix::Q2_K) return n_gqa >= 4 ? DType::Q4_K : DType::Q3_K;
      if (mix == QuantMix::Q3_K_M) return layer < 2 ? DType::Q5_K : DType::Q4_K;
      return use_more_bits(layer, n_layers) ? DType::Q6_K : base;
    case formats::WeightRole::WDown:
      if (mix == QuantMix::Q2_K) return DType::Q3_K;
      if (mix == QuantMix::Q3_K_M) return layer < n_layers / 16 ? DType::Q5_K : DType::Q4_K;
      return use_more_bits(layer, n_layers) ? DType::Q6_K : base;
    case formats::WeightRole::Wo:
      if (mix == QuantMix::Q2_K) return DType::Q3_K;
      if (mix == QuantMix::Q3_K_M) return DType::Q4_K;
      return base;
    default:
      return base;
  }
}

}  // namespace ls::convert
