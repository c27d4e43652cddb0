// Names and sizes of the element types: one table, the single home of these facts (kernels
// keep the functions of each block type, kernels/quant/traits.h); f16 conversions.
#include "core/dtype.h"

#include "core/error.h"

#include <cmath>
#include <iterator>

namespace ls {

namespace {

// One row per element type, in the enum's order: its file spelling, elements per block and
// bytes per block (the float types: 1 element of their own size). kernels/quant/blocks.h has
// the block layouts behind the byte counts; kernels/quant/traits.h the functions of each type.
struct DTypeInfo {
  DType type;
  std::string_view name;
  std::size_t block_elems;
  std::size_t block_bytes;
};

// clang-format off
constexpr DTypeInfo kDTypes[] = {
    {DType::F32,    "F32",      1,   4},
    {DType::F16,    "F16",      1,   2},
    {DType::BF16,   "BF16",     1,   2},
    {DType::Q8_0,   "Q8_0",    32,  34},
    {DType::Q4_0,   "Q4_0",    32,  18},
    {DType::Q4_K,   "Q4_K",   256, 144},
    {DType::Q6_K,   "Q6_K",   256, 210},
    {DType::Q8_K,   "Q8_K",   256, 292},
    {DType::Q5_0,   "Q5_0",    32,  22},
    {DType::Q5_1,   "Q5_1",    32,  24},
    {DType::Q4_1,   "Q4_1",    32,  20},
    {DType::IQ4_NL, "IQ4_NL",  32,  18},
    {DType::Q5_K,   "Q5_K",   256, 176},
    {DType::Q3_K,   "Q3_K",   256, 110},
    {DType::Q2_K,   "Q2_K",   256,  84},
};
// clang-format on

constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < std::size(kDTypes); ++i)
    if (static_cast<std::size_t>(kDTypes[i].type) != i) return false;
  return true;
}
static_assert(in_enum_order() && std::size(kDTypes) == static_cast<std::size_t>(DType::Q2_K) + 1);

const DTypeInfo* info(DType t) {
  const auto i = static_cast<std::size_t>(t);
  return i < std::size(kDTypes) ? &kDTypes[i] : nullptr;
}

}  // namespace

std::string_view dtype_name(DType t) {
  const DTypeInfo* d = info(t);
  return d != nullptr ? d->name : "?";
}

bool dtype_is_quantized(DType t) {
  const DTypeInfo* d = info(t);
  return d != nullptr && d->block_elems > 1;
}

std::size_t dtype_size(DType t) {
  return dtype_is_quantized(t) ? 0 : dtype_block_bytes(t);
}

std::size_t dtype_block_elems(DType t) {
  const DTypeInfo* d = info(t);
  return d != nullptr ? d->block_elems : 1;
}

std::size_t dtype_block_bytes(DType t) {
  const DTypeInfo* d = info(t);
  return d != nullptr ? d->block_bytes : 0;
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
