// The per-type table of quant/traits.h: one row per GGML block type, the 32-element blocks first,
// then the k-quants (each row's functions live in quant/<family>*.cpp and x86/<family>_*.cpp).
#include "kernels/quant/traits.h"

#include <iterator>

#include "kernels/quant/detail.h"
#include "kernels/x86/quant_x86.h"

namespace ls::kernels::quant_detail {
namespace {

constexpr auto kBlocks32 = QuantFamily::kBlocks32;
constexpr auto kKQuants = QuantFamily::kKQuants;
constexpr auto kNone = Interleaving::kNone;
constexpr auto kWords = Interleaving::kWords;
constexpr auto kWholeBlocks = Interleaving::kWholeBlocks;

// clang-format off
constexpr QuantTraits kTraits[] = {
// type           family     activation   quantize             dequantize             dot_scalar         dot_ref         quantize_avx2           tile_avx2         tile_vnni           rows8_avx512          interleaving  group_avx512
  {DType::Q8_0,   kBlocks32, DType::Q8_0, quantize_row_q8_0,   dequantize_row_q8_0,   dot_q8_0_scalar,   dot_q8_0_ref,   quantize_row_q8_0_avx2, tile_q8_0_avx2,   dot_tile_q8_0_vnni, nullptr,              kWords,       nullptr},
  {DType::Q4_0,   kBlocks32, DType::Q8_0, quantize_row_q4_0,   dequantize_row_q4_0,   dot_q4_0_scalar,   dot_q4_0_ref,   nullptr,                tile_q4_0_avx2,   nullptr,            nullptr,              kWords,       nullptr},
  {DType::Q4_1,   kBlocks32, DType::Q8_0, quantize_row_q4_1,   dequantize_row_q4_1,   dot_q4_1_scalar,   dot_q4_1_ref,   nullptr,                tile_q4_1_avx2,   nullptr,            dot_tile_q4_1_avx512, kNone,        nullptr},
  {DType::Q5_0,   kBlocks32, DType::Q8_0, quantize_row_q5_0,   dequantize_row_q5_0,   dot_q5_0_scalar,   dot_q5_0_ref,   nullptr,                tile_q5_0_avx2,   nullptr,            dot_tile_q5_0_avx512, kWords,       nullptr},
  {DType::Q5_1,   kBlocks32, DType::Q8_0, quantize_row_q5_1,   dequantize_row_q5_1,   dot_q5_1_scalar,   dot_q5_1_ref,   nullptr,                tile_q5_1_avx2,   nullptr,            dot_tile_q5_1_avx512, kWords,       nullptr},
  {DType::IQ4_NL, kBlocks32, DType::Q8_0, quantize_row_iq4_nl, dequantize_row_iq4_nl, dot_iq4_nl_scalar, dot_iq4_nl_ref, nullptr,                tile_iq4_nl_avx2, nullptr,            nullptr,              kWords,       nullptr},
  {DType::Q2_K,   kKQuants,  DType::Q8_K, quantize_row_q2_k,   dequantize_row_q2_k,   dot_q2_k_scalar,   dot_q2_k_ref,   nullptr,                tile_q2_k_avx2,   nullptr,            nullptr,              kNone,        nullptr},
  {DType::Q3_K,   kKQuants,  DType::Q8_K, quantize_row_q3_k,   dequantize_row_q3_k,   dot_q3_k_scalar,   dot_q3_k_ref,   nullptr,                tile_q3_k_avx2,   nullptr,            nullptr,              kNone,        nullptr},
  {DType::Q4_K,   kKQuants,  DType::Q8_K, quantize_row_q4_k,   dequantize_row_q4_k,   dot_q4_k_scalar,   dot_q4_k_ref,   nullptr,                tile_q4_k_avx2,   nullptr,            dot_tile_q4_k_avx512, kWholeBlocks, group_q4_k_avx512},
  {DType::Q5_K,   kKQuants,  DType::Q8_K, quantize_row_q5_k,   dequantize_row_q5_k,   dot_q5_k_scalar,   dot_q5_k_ref,   nullptr,                tile_q5_k_avx2,   nullptr,            dot_tile_q5_k_avx512, kWholeBlocks, group_q5_k_avx512},
  {DType::Q6_K,   kKQuants,  DType::Q8_K, quantize_row_q6_k,   dequantize_row_q6_k,   dot_q6_k_scalar,   dot_q6_k_ref,   nullptr,                tile_q6_k_avx2,   nullptr,            dot_tile_q6_k_avx512, kWholeBlocks, group_q6_k_avx512},
  {DType::Q8_K,   kKQuants,  DType::Q8_K, quantize_row_q8_k,   dequantize_row_q8_k,   nullptr,           nullptr,        quantize_row_q8_k_avx2, nullptr,          nullptr,            nullptr,              kNone,        nullptr},
};
// clang-format on

// The rows by DType value (built once; the enum is small).
struct Index {
  const QuantTraits* row[32] = {};
  constexpr Index() {
    for (const QuantTraits& t : kTraits) row[static_cast<std::size_t>(t.type)] = &t;
  }
};
constexpr Index kIndex;

}  // namespace

const QuantTraits* find_quant_traits(DType t) {
  const auto i = static_cast<std::size_t>(t);
  return i < std::size(kIndex.row) ? kIndex.row[i] : nullptr;
}

}  // namespace ls::kernels::quant_detail
