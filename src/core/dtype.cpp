// Names and sizes of the element types.
#include "core/dtype.h"

#include "core/error.h"

#include <cmath>

namespace ls {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::Q8_0:
      return "Q8_0";
    case DType::Q4_0:
      return "Q4_0";
    case DType::Q4_K:
      return "Q4_K";
    case DType::Q6_K:
      return "Q6_K";
    case DType::Q8_K:
      return "Q8_K";
    case DType::Q5_0:
      return "Q5_0";
    case DType::Q5_1:
      return "Q5_1";
    case DType::Q4_1:
      return "Q4_1";
    case DType::IQ4_NL:
      return "IQ4_NL";
    case DType::Q5_K:
      return "Q5_K";
    case DType::Q3_K:
      return "Q3_K";
    case DType::Q2_K:
      return "Q2_K";
  }
  return "?";
}

bool dtype_is_quantized(DType t) {
  return t != DType::F32 && t != DType::F16 && t != DType::BF16;
}

std::size_t dtype_size(DType t) {
  return dtype_is_quantized(t) ? 0 : dtype_block_bytes(t);
}

std::size_t dtype_block_elems(DType t) {
  switch (t) {
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q4_1:
    case DType::IQ4_NL:
      return 32;
    case DType::Q4_K:
    case DType::Q6_K:
    case DType::Q8_K:
    case DType::Q5_K:
    case DType::Q3_K:
    case DType::Q2_K:
      return 256;
    default:
      return 1;
  }
}

std::size_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::F32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::Q8_0:
      return 34;  // f16 scale + 32 int8
    case DType::Q4_0:
      return 18;  // f16 scale + 32 nibbles
    case DType::Q4_K:
      return 144;  // f16 d, dmin + 12 bytes of 6-bit scales/mins + 128 nibble bytes
    case DType::Q6_K:
      return 210;  // 128 low nibbles + 64 high 2-bit + 16 int8 scales + f16 d
    case DType::Q8_K:
      return 292;  // f32 d + 256 int8 + 16 int16 block sums
    case DType::Q5_0:
      return 22;  // f16 d + 32 fifth bits + 32 nibbles
    case DType::Q5_1:
      return 24;  // f16 d, m + 32 fifth bits + 32 nibbles
    case DType::Q4_1:
      return 20;  // f16 d, m + 32 nibbles
    case DType::IQ4_NL:
      return 18;  // f16 d + 32 nibbles (indices into a 16-entry table)
    case DType::Q5_K:
      return 176;  // f16 d, dmin + 12 bytes of 6-bit scales/mins + 32 fifth-bit bytes + 128 nibbles
    case DType::Q3_K:
      return 110;  // 32 high-bit bytes + 64 bytes of 2-bit quants + 12 bytes of 6-bit scales + f16
                   // d
    case DType::Q2_K:
      return 84;  // 16 bytes of 4-bit scale/min + 64 bytes of 2-bit quants + f16 d, dmin
  }
  return 0;
}

std::size_t dtype_bytes(DType t, std::int64_t n) {
  const auto block = static_cast<std::int64_t>(dtype_block_elems(t));
  if (n < 0 || n % block != 0)
    fail("{} stores elements in blocks of {}, but a row has {} elements", dtype_name(t), block, n);
  return static_cast<std::size_t>(n / block) * dtype_block_bytes(t);
}

}  // namespace ls

namespace ls {

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf/NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  // zero or subnormal: mant * 2^-24, exact in float32
  const float v = static_cast<float>(mant) * 0x1p-24f;
  return sign ? -v : v;
}

std::uint16_t f32_to_f16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;                      // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;                     // rounds to >= 65520: inf
  if (a < 0x38800000u) {                                           // below 2^-14: subnormal or zero
    const float v = std::bit_cast<float>(a) * 0x1p24f;             // exact scaling into [0, 1024)
    const auto m = static_cast<std::uint32_t>(std::nearbyint(v));  // default mode: ties to even
    return static_cast<std::uint16_t>(sign | m);
  }
  std::uint32_t r = a + 0xfffu + ((a >> 13) & 1u);  // round mantissa to 10 bits
  return static_cast<std::uint16_t>(sign | (((r >> 13) - (112u << 10)) & 0x7fffu));
}

}  // namespace ls
