// Scalar dot products of the k-quants against Q8_K activations: bit-exact executions of their
// accumulation model (quant/detail.h), which the x86 tiles reproduce, and the double-precision
// references (the same exact integer block sums, scaled and summed in double).
#include <cmath>
#include <cstddef>
#include <cstring>

#include "kernels/quant.h"
#include "kernels/quant/detail.h"

namespace ls::kernels::quant_detail {
namespace {

// ---- Q4_K, Q6_K ------------------------------------------------------------------------------

// Exact integer sums of one 256-element block pair: isum (scaled by d) and msum (by dmin).
void block_sums_q4_k(const BlockQ4_K& w, const BlockQ8_K& x, int* isum, int* msum) {
  int is = 0, ms = 0;
  for (int g = 0; g < 4; ++g) {
    int sc0, m0, sc1, m1;
    q4_k_scale_min(w.scales, 2 * g, &sc0, &m0);
    q4_k_scale_min(w.scales, 2 * g + 1, &sc1, &m1);
    int s0 = 0, s1 = 0;
    for (int l = 0; l < 32; ++l) {
      s0 += (w.qs[32 * g + l] & 0x0F) * x.qs[64 * g + l];
      s1 += (w.qs[32 * g + l] >> 4) * x.qs[64 * g + 32 + l];
    }
    is += sc0 * s0 + sc1 * s1;
    ms +=
        m0 * (x.bsums[4 * g] + x.bsums[4 * g + 1]) + m1 * (x.bsums[4 * g + 2] + x.bsums[4 * g + 3]);
  }
  *isum = is;
  *msum = ms;
}
int block_sum_q6_k(const BlockQ6_K& w, const BlockQ8_K& x) {
  int total = 0;
  for (int h = 0; h < 2; ++h) {
    const std::uint8_t* ql = w.ql + 64 * h;
    const std::uint8_t* qh = w.qh + 32 * h;
    const std::int8_t* y = x.qs + 128 * h;
    int sub[8] = {};
    for (int l = 0; l < 32; ++l) {
      const int s = l / 16;
      sub[s] += (((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) - 32) * y[l];
      sub[s + 2] += (((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32) * y[l + 32];
      sub[s + 4] += (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32) * y[l + 64];
      sub[s + 6] += (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32) * y[l + 96];
    }
    for (int j = 0; j < 8; ++j) total += w.scales[8 * h + j] * sub[j];
  }
  return total;
}

// ---- Q5_K, Q3_K, Q2_K --------------------------------------------------------------------------

// Exact integer sums of one K-quant block pair: isum (scaled by d) and msum (by dmin; 0 for Q3_K).
template <DType kType>
void block_sums_k(const std::uint8_t* w, const BlockQ8_K& x, int* isum, int* msum) {
  int is = 0, ms = 0;
  if (kType == DType::Q5_K) {
    BlockQ5_K b;
    std::memcpy(&b, w, sizeof b);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      q4_k_scale_min(b.scales, j, &sc, &m);
      const int g = j / 2, h = j % 2;
      int s = 0;
      for (int l = 0; l < 32; ++l) {
        const int q = ((b.qs[32 * g + l] >> (4 * h)) & 0x0F) | (((b.qh[l] >> j) & 1) << 4);
        s += q * x.qs[32 * j + l];
      }
      is += sc * s;
      ms += m * (x.bsums[2 * j] + x.bsums[2 * j + 1]);
    }
  } else {
    // Q3_K and Q2_K: 16 sub-blocks of 16; element e = 128h + 32j + l has its 2 low bits in
    // byte 32h + l of qs at bit 2j.
    const std::size_t qs_at =
        kType == DType::Q3_K ? offsetof(BlockQ3_K, qs) : offsetof(BlockQ2_K, qs);
    const std::uint8_t* qs = w + qs_at;
    for (int k = 0; k < 16; ++k) {
      int s = 0;
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * k + i;
        int q = (qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
        if (kType == DType::Q3_K && ((w[e % 32] >> (e / 32)) & 1) == 0) q -= 4;  // hmask first
        s += q * x.qs[e];
      }
      if (kType == DType::Q3_K) {
        const std::uint8_t* sc = w + offsetof(BlockQ3_K, scales);
        const int lo = k < 8 ? sc[k] & 0x0F : sc[k - 8] >> 4;
        is += ((lo | (((sc[8 + k % 4] >> (2 * (k / 4))) & 3) << 4)) - 32) * s;
      } else {
        const std::uint8_t sm = w[offsetof(BlockQ2_K, scales) + k];
        is += (sm & 0x0F) * s;
        ms += (sm >> 4) * x.bsums[k];
      }
    }
  }
  *isum = is;
  *msum = ms;
}

// Where a K-quant block keeps its f16 d and dmin.
template <DType kType>
std::size_t d_at() {
  return kType == DType::Q5_K   ? 0
         : kType == DType::Q3_K ? offsetof(BlockQ3_K, d)
                                : offsetof(BlockQ2_K, d);
}

template <DType kType>
float dot_k_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  const std::size_t bw = dtype_block_bytes(kType);
  float a = 0.0f, m = 0.0f;
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* wb = w + b * bw;
    BlockQ8_K xb;
    std::memcpy(&xb, xq + b * sizeof xb, sizeof xb);
    int isum, msum;
    block_sums_k<kType>(wb, xb, &isum, &msum);
    a = std::fma(static_cast<float>(isum), xb.d * f16_field(wb + d_at<kType>()), a);
    if (kType != DType::Q3_K)
      m = std::fma(static_cast<float>(msum), xb.d * f16_field(wb + d_at<kType>() + 2), m);
  }
  return kType == DType::Q3_K ? a : a - m;
}

template <DType kType>
double dot_k_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  const std::size_t bw = dtype_block_bytes(kType);
  double sum = 0.0;
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* wb = w + b * bw;
    BlockQ8_K xb;
    std::memcpy(&xb, xq + b * sizeof xb, sizeof xb);
    int isum, msum;
    block_sums_k<kType>(wb, xb, &isum, &msum);
    double v = double{f16_field(wb + d_at<kType>())} * isum;
    if (kType != DType::Q3_K) v -= double{f16_field(wb + d_at<kType>() + 2)} * msum;
    sum += double{xb.d} * v;
  }
  return sum;
}

}  // namespace

float dot_q4_k_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  float a = 0.0f, m = 0.0f;
  for (std::size_t b = 0; b < nb; ++b) {
    const auto wb = load_block<BlockQ4_K>(w + b * sizeof(BlockQ4_K));
    const auto xb = load_block<BlockQ8_K>(xq + b * sizeof(BlockQ8_K));
    int isum, msum;
    block_sums_q4_k(wb, xb, &isum, &msum);
    a = std::fma(static_cast<float>(isum), xb.d * f16_to_f32(wb.d), a);
    m = std::fma(static_cast<float>(msum), xb.d * f16_to_f32(wb.dmin), m);
  }
  return a - m;
}

float dot_q6_k_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  float a = 0.0f;
  for (std::size_t b = 0; b < nb; ++b) {
    const auto wb = load_block<BlockQ6_K>(w + b * sizeof(BlockQ6_K));
    const auto xb = load_block<BlockQ8_K>(xq + b * sizeof(BlockQ8_K));
    a = std::fma(static_cast<float>(block_sum_q6_k(wb, xb)), xb.d * f16_to_f32(wb.d), a);
  }
  return a;
}

double dot_q4_k_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  double sum = 0.0;
  for (std::size_t b = 0; b < nb; ++b) {
    const auto wb = load_block<BlockQ4_K>(w + b * sizeof(BlockQ4_K));
    const auto xb = load_block<BlockQ8_K>(xq + b * sizeof(BlockQ8_K));
    int isum, msum;
    block_sums_q4_k(wb, xb, &isum, &msum);
    sum += double{xb.d} * (double{f16_to_f32(wb.d)} * isum - double{f16_to_f32(wb.dmin)} * msum);
  }
  return sum;
}

double dot_q6_k_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  double sum = 0.0;
  for (std::size_t b = 0; b < nb; ++b) {
    const auto wb = load_block<BlockQ6_K>(w + b * sizeof(BlockQ6_K));
    const auto xb = load_block<BlockQ8_K>(xq + b * sizeof(BlockQ8_K));
    sum += double{xb.d} * f16_to_f32(wb.d) * block_sum_q6_k(wb, xb);
  }
  return sum;
}

float dot_q5_k_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_k_scalar<DType::Q5_K>(w, xq, nb);
}
double dot_q5_k_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_k_ref<DType::Q5_K>(w, xq, nb);
}
float dot_q3_k_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_k_scalar<DType::Q3_K>(w, xq, nb);
}
double dot_q3_k_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_k_ref<DType::Q3_K>(w, xq, nb);
}
float dot_q2_k_scalar(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_k_scalar<DType::Q2_K>(w, xq, nb);
}
double dot_q2_k_ref(const std::uint8_t* w, const std::uint8_t* xq, std::size_t nb) {
  return dot_k_ref<DType::Q2_K>(w, xq, nb);
}

}  // namespace ls::kernels::quant_detail
