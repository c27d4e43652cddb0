// Element types of weight tensors and conversions between them. BF16 is the top half of an
// IEEE float32; F16 is IEEE half. Conversions to float32 are exact; float32 -> BF16 rounds to
// nearest even (as torch does), NaN stays NaN.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ls {

enum class DType : std::uint8_t { F32, F16, BF16 };

std::string_view dtype_name(DType t);  // "F32", "F16", "BF16" (safetensors spelling)
std::size_t dtype_size(DType t);       // bytes per element

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
