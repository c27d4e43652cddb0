// Element types of weight tensors and conversions between them. BF16 is the top half of an
// IEEE float32; F16 is IEEE half. Conversions to float32 are exact; float32 -> BF16 rounds to
// nearest even (as torch does), NaN stays NaN. Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL (32 weights
// a block) and Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (256) are GGML's block formats (kernels/quant.h has
// the layouts); Q8_K is the activation format the K-quant dot products use.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ls {

enum class DType : std::uint8_t {
  F32,
  F16,
  BF16,
  Q8_0,
  Q4_0,
  Q4_K,
  Q6_K,
  Q8_K,
  Q5_0,
  Q5_1,
  Q4_1,
  IQ4_NL,
  Q5_K,
  Q3_K,
  Q2_K
};

std::string_view dtype_name(DType t);    // "F32", "F16", "BF16", "Q8_0", ... (file spellings)
std::size_t dtype_size(DType t);         // bytes per element; 0 for block formats
bool dtype_is_quantized(DType t);        // a block format
std::size_t dtype_block_elems(DType t);  // elements per block: 1, 32 or 256
std::size_t dtype_block_bytes(DType t);  // bytes per block (dtype_size for the float types)
// Bytes of n consecutive elements; throws when n is not a whole number of blocks.
std::size_t dtype_bytes(DType t, std::int64_t n);

inline float bf16_to_f32(std::uint16_t h) {
  return std::bit_cast<float>(std::uint32_t{h} << 16);
}

inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);  // round to nearest even; overflow gives +-inf

}  // namespace ls
