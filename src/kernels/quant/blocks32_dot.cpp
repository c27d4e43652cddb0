// Scalar dot products of the 32-element formats against Q8_0 activations: bit-exact executions
// of their accumulation models (quant/detail.h: the chunked model of Q8_0 and Q4_0, the levels
// model of Q4_1, Q5_0, Q5_1 and IQ4_NL), which the x86 tiles reproduce, and the double-precision
// references (the same exact integer block sums, scaled and summed in double).
#include <cmath>
#include <cstddef>
#include <cstring>

#include "kernels/quant.h"
#include "kernels/quant/detail.h"

namespace ls::kernels::quant_detail {
namespace {

template <DType kType>
constexpr bool has_min() {
  return kType == DType::Q5_1 || kType == DType::Q4_1;
}

// ---- The chunked model: Q8_0, Q4_0 ---------------------------------------------------------

// Exact integer sum of one 32-element block pair.
int block_sum_q8_0(const BlockQ8_0& w, const BlockQ8_0& x) {
  int s = 0;
  for (int j = 0; j < 32; ++j) s += w.qs[j] * x.qs[j];
  return s;
}
int block_sum_q4_0(const BlockQ4_0& w, const BlockQ8_0& x) {
  int s = 0;
  for (int j = 0; j < 16; ++j)
    s += ((w.qs[j] & 0x0F) - 8) * x.qs[j] + ((w.qs[j] >> 4) - 8) * x.qs[j + 16];
  return s;
}

template <typename WBlock, int (*kSum)(const WBlock&, const BlockQ8_0&), int (*kLane)(int)>
float dot_chunked_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  float lanes[8] = {};
  for (std::size_t c = 0; c < nb; c += 8) {
    for (int k = 0; k < 8; ++k) {
      float s = 0.0f, scale = 0.0f;  // padding past the last block
      if (c + k < nb) {
        const auto wb = load_block<WBlock>(w + (c + k) * sizeof(WBlock));
        const auto xb = load_block<BlockQ8_0>(xq + (c + k) * sizeof(BlockQ8_0));
        s = static_cast<float>(kSum(wb, xb));
        scale = f16_to_f32(wb.d) * f16_to_f32(xb.d);
      }
      float& lane = lanes[kLane(k)];
      lane = std::fma(s, scale, lane);
    }
  }
  return sum_lanes(lanes);
}

// The double reference of the chunked model: the same exact block sums, scaled and summed in
// double in block order.
template <typename WBlock, int (*kSum)(const WBlock&, const BlockQ8_0&)>
double dot_chunked_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  double sum = 0.0;
  for (std::size_t b = 0; b < nb; ++b) {
    const auto wb = load_block<WBlock>(w + b * sizeof(WBlock));
    const auto xb = load_block<BlockQ8_0>(xq + b * sizeof(BlockQ8_0));
    sum += double{f16_to_f32(wb.d)} * f16_to_f32(xb.d) * kSum(wb, xb);
  }
  return sum;
}

// ---- The levels model: Q4_1, Q5_0, Q5_1, IQ4_NL ----------------------------------------------

// Exact integer sums of one 32-element block pair: s = sum qw * qx, t = sum qx.
template <DType kType>
void block_sums_32(const std::uint8_t* w, const std::uint8_t* x, int* s, int* tx) {
  int q[32];
  blocks32_levels<kType>(w, q);
  const auto* qx = reinterpret_cast<const std::int8_t*>(x + 2);
  int a = 0, b = 0;
  for (int e = 0; e < 32; ++e) {
    a += q[e] * qx[e];
    b += qx[e];
  }
  *s = a;
  *tx = b;
}

template <DType kType>
float dot_levels_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  const std::size_t bw = dtype_block_bytes(kType), bx = sizeof(BlockQ8_0);
  const bool min = has_min<kType>();
  float lanes[8] = {};
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* wb = w + b * bw;
    const std::uint8_t* xb = xq + b * bx;
    int s, tx;
    block_sums_32<kType>(wb, xb, &s, &tx);
    const float dx = f16_field(xb);
    float& lane = lanes[b % 8];
    lane = std::fma(static_cast<float>(s), f16_field(wb) * dx, lane);
    if (min) lane = std::fma(static_cast<float>(tx), f16_field(wb + 2) * dx, lane);
  }
  return sum_lanes(lanes);
}

template <DType kType>
double dot_levels_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  const std::size_t bw = dtype_block_bytes(kType), bx = sizeof(BlockQ8_0);
  double sum = 0.0;
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* wb = w + b * bw;
    const std::uint8_t* xb = xq + b * bx;
    int s, tx;
    block_sums_32<kType>(wb, xb, &s, &tx);
    const double dx = f16_field(xb);
    sum += double{f16_field(wb)} * dx * s;
    if (has_min<kType>()) sum += double{f16_field(wb + 2)} * dx * tx;
  }
  return sum;
}

}  // namespace

float dot_q8_0_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_chunked_scalar<BlockQ8_0, block_sum_q8_0, q8_0_lane>(w, xq, nb);
}
double dot_q8_0_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_chunked_ref<BlockQ8_0, block_sum_q8_0>(w, xq, nb);
}
float dot_q4_0_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_chunked_scalar<BlockQ4_0, block_sum_q4_0, q4_0_lane>(w, xq, nb);
}
double dot_q4_0_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_chunked_ref<BlockQ4_0, block_sum_q4_0>(w, xq, nb);
}
float dot_q4_1_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_levels_scalar<DType::Q4_1>(w, xq, nb);
}
double dot_q4_1_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_levels_ref<DType::Q4_1>(w, xq, nb);
}
float dot_q5_0_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_levels_scalar<DType::Q5_0>(w, xq, nb);
}
double dot_q5_0_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_levels_ref<DType::Q5_0>(w, xq, nb);
}
float dot_q5_1_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_levels_scalar<DType::Q5_1>(w, xq, nb);
}
double dot_q5_1_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_levels_ref<DType::Q5_1>(w, xq, nb);
}
float dot_iq4_nl_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_levels_scalar<DType::IQ4_NL>(w, xq, nb);
}
double dot_iq4_nl_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_levels_ref<DType::IQ4_NL>(w, xq, nb);
}

}  // namespace ls::kernels::quant_detail
