// The block formats and quantized dot products: quantization error bounds per format, SIMD
// activation quantizers bit-identical to the scalar definitions, dot products (AVX2 and scalar)
// against the exact-integer double reference and against the double dot of the dequantized
// rows, tiles bit-identical to single dots, and errors on bad sizes. The byte layouts themselves
// are checked against an independent numpy implementation (quant_ref.py via quant_dump).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/quant.h"
#include "kernels/quant/traits.h"
#include "kernels/x86/quant_x86.h"

namespace {

using ls::DType;
namespace k = ls::kernels;

template <typename Block>
void expect_block_size(DType t) {
  EXPECT_EQ(sizeof(Block), ls::dtype_block_bytes(t)) << ls::dtype_name(t);
}

}  // namespace

// The layouts of quant/blocks.h have core's byte counts, every block type of core has a row in
// the traits table (and the float types none), and each row is whole: a weight type has its
// scalar dot, reference and AVX2 tile and dots against an activation type's row.
TEST(QuantTraits, OneWholeRowPerBlockTypeOfCore) {
  expect_block_size<k::BlockQ8_0>(DType::Q8_0);
  expect_block_size<k::BlockQ4_0>(DType::Q4_0);
  expect_block_size<k::BlockQ4_1>(DType::Q4_1);
  expect_block_size<k::BlockQ5_0>(DType::Q5_0);
  expect_block_size<k::BlockQ5_1>(DType::Q5_1);
  expect_block_size<k::BlockIQ4_NL>(DType::IQ4_NL);
  expect_block_size<k::BlockQ2_K>(DType::Q2_K);
  expect_block_size<k::BlockQ3_K>(DType::Q3_K);
  expect_block_size<k::BlockQ4_K>(DType::Q4_K);
  expect_block_size<k::BlockQ5_K>(DType::Q5_K);
  expect_block_size<k::BlockQ6_K>(DType::Q6_K);
  expect_block_size<k::BlockQ8_K>(DType::Q8_K);
  for (int i = 0; i <= static_cast<int>(DType::Q2_K); ++i) {
    const auto t = static_cast<DType>(i);
    const k::quant_detail::QuantTraits* q = k::quant_detail::find_quant_traits(t);
    ASSERT_EQ(q != nullptr, ls::dtype_is_quantized(t)) << ls::dtype_name(t);
    if (q == nullptr) continue;
    EXPECT_EQ(q->type, t);
    EXPECT_EQ(ls::dtype_block_elems(t),
              q->family == k::quant_detail::QuantFamily::kBlocks32 ? 32u : 256u);
    EXPECT_NE(q->quantize, nullptr);
    EXPECT_NE(q->dequantize, nullptr);
    const k::quant_detail::QuantTraits* act = k::quant_detail::find_quant_traits(q->activation);
    ASSERT_NE(act, nullptr);
    EXPECT_TRUE(act->is_activation()) << ls::dtype_name(t);
    EXPECT_NE(act->quantize_avx2, nullptr) << ls::dtype_name(t);
    EXPECT_EQ(ls::dtype_block_elems(q->activation), ls::dtype_block_elems(t));
    if (q->is_weight()) {
      EXPECT_NE(q->dot_ref, nullptr) << ls::dtype_name(t);
      EXPECT_NE(q->tile_avx2, nullptr) << ls::dtype_name(t);
    }
    EXPECT_EQ(q->group_avx512 != nullptr,
              q->interleaving == k::quant_detail::Interleaving::kWholeBlocks)
        << ls::dtype_name(t);
  }
}

namespace {

// Kinds of row content the tests sweep: random normal, zeros, all equal, huge, tiny, mixed
// scales per block, and values that land exactly on rounding ties.
enum class Fill { Normal, Zero, Equal, Huge, Tiny, Mixed, Ties };
constexpr Fill kFills[] = {Fill::Normal, Fill::Zero,  Fill::Equal, Fill::Huge,
                           Fill::Tiny,   Fill::Mixed, Fill::Ties};

std::vector<float> make_row(Fill f, std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (f) {
      case Fill::Normal:
        x[i] = nd(rng);
        break;
      case Fill::Zero:
        x[i] = 0;
        break;
      case Fill::Equal:
        x[i] = -0.75f;
        break;
      case Fill::Huge:
        x[i] = nd(rng) * 3e4f;  // Q4_0 scale amax / 8 stays inside f16
        break;
      case Fill::Tiny:
        x[i] = nd(rng) * 1e-4f;  // f16 scales become subnormal
        break;
      case Fill::Mixed:
        x[i] = nd(rng) * std::pow(10.0f, static_cast<float>((i / 32) % 7) - 3);
        break;
      case Fill::Ties:
        // -127 anchors every block's scale at 1 (Q8_0: d = 1; Q8_K: iscale = 1), so x.5 values
        // are exact ties: roundf goes away from zero, GGML's nearest_int to even.
        x[i] = (i % 32 == 0) ? -127.0f : static_cast<float>(static_cast<int>(i % 97) - 48) + 0.5f;
        break;
    }
  }
  return x;
}

std::vector<std::uint8_t> quantize(DType t, const std::vector<float>& x) {
  std::vector<std::uint8_t> q(ls::dtype_bytes(t, static_cast<std::int64_t>(x.size())));
  k::quantize_row(t, x.data(), q.data(), x.size());
  return q;
}

std::vector<float> dequantize(DType t, const std::vector<std::uint8_t>& q, std::size_t n) {
  std::vector<float> y(n);
  k::dequantize_row(t, q.data(), y.data(), n);
  return y;
}

constexpr DType kWeights[] = {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K,
                              DType::Q5_0, DType::Q5_1, DType::Q4_1, DType::IQ4_NL,
                              DType::Q5_K, DType::Q3_K, DType::Q2_K};

bool has_min(DType t) {  // formats whose blocks add an f16 minimum at byte 2
  return t == DType::Q4_1 || t == DType::Q5_1;
}

// The subtracted minimum dmin * m of element i of Q5_K / Q2_K.
double k_min_at(DType t, const std::vector<std::uint8_t>& w, std::size_t i) {
  const std::uint8_t* b = &w[i / 256 * ls::dtype_block_bytes(t)];
  std::uint16_t h;
  std::memcpy(&h, b + (t == DType::Q2_K ? 82 : 2), 2);
  int m = 0;
  if (t == DType::Q2_K) {
    m = b[(i % 256) / 16] >> 4;
  } else {
    int sc;
    k::quant_detail::q4_k_scale_min(b + 4, static_cast<int>(i % 256) / 32, &sc, &m);
  }
  return static_cast<double>(ls::f16_to_f32(h)) * m;
}

// Byte offsets of a block's f16 scales (d first).
std::vector<std::size_t> scale_offsets(DType t) {
  switch (t) {
    case DType::Q6_K:
      return {208};
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q4_1:
    case DType::Q5_1:
      return {0, 2};
    case DType::Q3_K:
      return {108};
    case DType::Q2_K:
      return {80, 82};
    default:
      return {0};
  }
}

// sum |w_i x_i| of the dequantized rows; for the formats with a minimum, w = d * q + m counts as
// |d * q| + |m| (the dot products sum the two parts separately, which may cancel).
double dot_magnitude(DType t, const std::vector<std::uint8_t>& w, const std::vector<float>& wf,
                     const std::vector<float>& xf) {
  double mag = 0;
  const std::size_t be = ls::dtype_block_elems(t), bb = ls::dtype_block_bytes(t);
  for (std::size_t i = 0; i < wf.size(); ++i) {
    double a = std::fabs(static_cast<double>(wf[i]));
    if (has_min(t)) {
      std::uint16_t h;
      std::memcpy(&h, &w[i / be * bb + 2], 2);
      const double m = ls::f16_to_f32(h);
      a = std::fabs(wf[i] - m) + std::fabs(m);
    }
    if (t == DType::Q5_K || t == DType::Q2_K) {  // w = d sc q - dmin m, summed apart likewise
      const double m = k_min_at(t, w, i);
      a = std::fabs(wf[i] + m) + std::fabs(m);
    }
    mag += a * std::fabs(static_cast<double>(xf[i]));
  }
  return mag;
}

std::vector<std::size_t> lengths_for(DType t) {
  if (ls::dtype_block_elems(t) == 32) return {32, 64, 224, 896, 4864};  // 1, 2, 7 blocks, rows
  return {256, 512, 1792, 4864};                                        // 1, 2, 7 blocks, row
}

TEST(QuantFormats, Q8_0ErrorAtMostHalfAStep) {
  std::mt19937 rng(1);
  for (Fill f : kFills) {
    const auto x = make_row(f, 896, rng);
    const auto q = quantize(DType::Q8_0, x);
    const auto y = dequantize(DType::Q8_0, q, x.size());
    for (std::size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
      const float d = amax / 127;  // the float scale; the stored f16 one adds |q| * its rounding
      std::uint16_t d16;
      std::memcpy(&d16, &q[b * 34], 2);
      const double dd = std::fabs(static_cast<double>(ls::f16_to_f32(d16)) - d);
      for (int j = 0; j < 32; ++j) {
        const double err = std::fabs(static_cast<double>(x[b * 32 + j]) - y[b * 32 + j]);
        ASSERT_LE(err, d / 2 * (1 + 1e-5) + 127 * dd + 1e-30)
            << "fill " << int(f) << " block " << b;
      }
    }
  }
}

TEST(QuantFormats, Q4_0ErrorAtMostHalfAStep) {
  std::mt19937 rng(2);
  for (Fill f : kFills) {
    const auto x = make_row(f, 896, rng);
    const auto q = quantize(DType::Q4_0, x);
    const auto y = dequantize(DType::Q4_0, q, x.size());
    for (std::size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
      const float d = amax / 8;
      std::uint16_t d16;
      std::memcpy(&d16, &q[b * 18], 2);
      const double dd = std::fabs(std::fabs(static_cast<double>(ls::f16_to_f32(d16))) - d);
      for (int j = 0; j < 32; ++j) {
        // Levels -8..7 of d: the positive end clamps at 7d, one step short of amax.
        const double err = std::fabs(static_cast<double>(x[b * 32 + j]) - y[b * 32 + j]);
        ASSERT_LE(err, d * (1 + 1e-5) + 8 * dd + 1e-30) << "fill " << int(f) << " block " << b;
        if (std::fabs(x[b * 32 + j]) <= 7 * d) {
          ASSERT_LE(err, d / 2 * (1 + 1e-5) + 8 * dd + 1e-30) << "fill " << int(f);
        }
      }
    }
  }
}

// K-quants: a search, not a closed form; bound the RMS error relative to the block's range.
TEST(QuantFormats, KQuantErrorBounded) {
  std::mt19937 rng(3);
  for (DType t : {DType::Q4_K, DType::Q6_K, DType::Q5_K, DType::Q3_K, DType::Q2_K}) {
    const double levels = t == DType::Q4_K   ? 15
                          : t == DType::Q6_K ? 63
                          : t == DType::Q5_K ? 31
                          : t == DType::Q3_K ? 7
                                             : 3;
    // Q2_K's 4-bit scales and mins cost more than the 6-bit ones of the others.
    const double factor = t == DType::Q2_K ? 1.0 : t == DType::Q3_K ? 0.75 : 0.6;
    for (Fill f : kFills) {
      const auto x = make_row(f, 4864, rng);
      const auto y = dequantize(t, quantize(t, x), x.size());
      for (std::size_t b = 0; b < x.size() / 256; ++b) {
        double lo = 0, hi = 0, se = 0, ss = 0;
        for (int j = 0; j < 256; ++j) {
          const double v = x[b * 256 + j];
          lo = std::min(lo, v);
          hi = std::max(hi, v);
          se += (v - y[b * 256 + j]) * (v - y[b * 256 + j]);
          ss += v * v;
        }
        const double rms = std::sqrt(se / 256), step = (hi - lo) / levels;
        if (f == Fill::Zero) {
          ASSERT_EQ(se, 0.0);
        }
        // A sub-block's own range is at most the block's; 6-bit scale rounding costs a bit more.
        if (f != Fill::Tiny) {
          ASSERT_LE(rms, factor * step + 1e-30) << ls::dtype_name(t) << " fill " << int(f);
        } else {  // tiny scales underflow f16 (as in GGML); the values round towards 0
          ASSERT_LE(se, ss * 1.0001);
        }
      }
    }
  }
}

// The levels-model 32-element formats: RMS error per block within a fraction of the step between
// levels (IQ4_NL: its widest gap, 24 of the table's 240, is 1.5 steps of a uniform 4-bit grid).
TEST(QuantFormats, Blocks32LevelsErrorBounded) {
  std::mt19937 rng(12);
  for (DType t : {DType::Q5_0, DType::Q5_1, DType::Q4_1, DType::IQ4_NL}) {
    const double levels = t == DType::Q5_0 || t == DType::Q5_1 ? 31 : 15;
    const double factor = t == DType::IQ4_NL ? 0.8 : 0.55;
    for (Fill f : kFills) {
      if (f == Fill::Huge && has_min(t)) continue;  // the f16 minimum overflows, as in GGML
      const auto x = make_row(f, 896, rng);
      const auto y = dequantize(t, quantize(t, x), x.size());
      for (std::size_t b = 0; b < x.size() / 32; ++b) {
        double lo = x[b * 32], hi = x[b * 32], se = 0, ss = 0, amax = 0;
        for (int j = 0; j < 32; ++j) {
          const double v = x[b * 32 + j];
          lo = std::min(lo, v);
          hi = std::max(hi, v);
          amax = std::max(amax, std::fabs(v));
          se += (v - y[b * 32 + j]) * (v - y[b * 32 + j]);
          ss += v * v;
        }
        const double range = has_min(t) ? hi - lo : 2 * amax;
        const double rms = std::sqrt(se / 32), step = range / levels;
        if (f == Fill::Zero) {
          ASSERT_EQ(se, 0.0);
        }
        if (f == Fill::Tiny) {  // scales underflow f16 (as in GGML)
          ASSERT_LE(se, ss * 1.0001 + 32 * range * range);
        } else {
          ASSERT_LE(rms, factor * step + 1e-3 * amax + 1e-30)
              << ls::dtype_name(t) << " fill " << int(f) << " block " << b;
        }
      }
    }
  }
}

TEST(QuantFormats, RaggedRowsAndNonBlockTypesThrow) {
  std::vector<float> x(300, 1.0f);
  std::vector<std::uint8_t> q(4096);
  EXPECT_THROW(k::quantize_row(DType::Q8_0, x.data(), q.data(), 33), ls::Error);
  EXPECT_THROW(k::quantize_row(DType::Q4_K, x.data(), q.data(), 288), ls::Error);
  EXPECT_THROW(k::quantize_row(DType::F32, x.data(), q.data(), 32), ls::Error);
  EXPECT_THROW(k::dequantize_row(DType::Q6_K, q.data(), x.data(), 128), ls::Error);
  EXPECT_THROW(k::quantize_activations(DType::Q4_0, x.data(), q.data(), 32), ls::Error);
  EXPECT_THROW(k::quantize_activations(DType::Q8_K, x.data(), q.data(), 32), ls::Error);
  EXPECT_THROW(k::dot_quantized(DType::Q8_0, q.data(), q.data(), 48), ls::Error);
  EXPECT_THROW(k::dot_quantized(DType::Q6_K, q.data(), q.data(), 32), ls::Error);
  EXPECT_THROW(k::dot_quantized(DType::Q8_K, q.data(), q.data(), 256), ls::Error);
  EXPECT_THROW(k::dot_quantized_ref(DType::F16, q.data(), q.data(), 32), ls::Error);
  for (DType t : {DType::Q5_K, DType::Q3_K, DType::Q2_K}) {
    EXPECT_THROW(k::quantize_row(t, x.data(), q.data(), 288), ls::Error) << ls::dtype_name(t);
    EXPECT_THROW(k::dequantize_row(t, q.data(), x.data(), 32), ls::Error);
    EXPECT_THROW(k::dot_quantized(t, q.data(), q.data(), 32), ls::Error);
    EXPECT_THROW(k::dot_quantized_scalar(t, q.data(), q.data(), 128), ls::Error);
    EXPECT_THROW(k::dot_quantized_ref(t, q.data(), q.data(), 257), ls::Error);
    float out1;
    EXPECT_THROW(k::dot_quantized_tile(t, q.data(), 84, 1, q.data(), 292, 1, 300, &out1, 1),
                 ls::Error);
    EXPECT_EQ(k::dot_activation_type(t), DType::Q8_K);
  }
  for (DType t : {DType::Q5_0, DType::Q5_1, DType::Q4_1, DType::IQ4_NL}) {
    EXPECT_THROW(k::quantize_row(t, x.data(), q.data(), 48), ls::Error) << ls::dtype_name(t);
    EXPECT_THROW(k::dequantize_row(t, q.data(), x.data(), 40), ls::Error);
    EXPECT_THROW(k::dot_quantized(t, q.data(), q.data(), 33), ls::Error);
    EXPECT_THROW(k::dot_quantized_scalar(t, q.data(), q.data(), 16), ls::Error);
    EXPECT_THROW(k::dot_quantized_ref(t, q.data(), q.data(), 64 + 8), ls::Error);
    EXPECT_THROW(k::quantize_activations(t, x.data(), q.data(), 32), ls::Error);
    EXPECT_EQ(k::dot_activation_type(t), DType::Q8_0);
  }
  float out;
  EXPECT_THROW(k::dot_quantized_tile(DType::Q4_0, q.data(), 18, 1, q.data(), 34, 1, 40, &out, 1),
               ls::Error);
  EXPECT_THROW((void)k::dot_activation_type(DType::BF16), ls::Error);
  for (DType t : kWeights) {  // empty rows are a valid, zero dot product
    EXPECT_EQ(k::dot_quantized(t, q.data(), q.data(), 0), 0.0f);
    EXPECT_EQ(k::dot_quantized_scalar(t, q.data(), q.data(), 0), 0.0f);
  }
  EXPECT_EQ(k::dot_activation_type(DType::Q4_0), DType::Q8_0);
  EXPECT_EQ(k::dot_activation_type(DType::Q6_K), DType::Q8_K);
}

TEST(QuantFormats, FloatTypesDequantize) {
  const float v[3] = {1.5f, -2.25f, 65504.0f};
  std::uint16_t h[3], b[3];
  for (int i = 0; i < 3; ++i) {
    h[i] = ls::f32_to_f16(v[i]);
    b[i] = ls::f32_to_bf16(v[i]);
  }
  float out[3];
  k::dequantize_row(DType::F16, reinterpret_cast<const std::uint8_t*>(h), out, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i], v[i]);
  k::dequantize_row(DType::BF16, reinterpret_cast<const std::uint8_t*>(b), out, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i], ls::bf16_to_f32(b[i]));
  k::dequantize_row(DType::F32, reinterpret_cast<const std::uint8_t*>(v), out, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i], v[i]);
}

TEST(QuantActivations, SimdBitIdenticalToScalar) {
  std::mt19937 rng(4);
  for (DType t : {DType::Q8_0, DType::Q8_K}) {
    for (Fill f : kFills) {
      for (std::size_t n : {256, 512, 1792, 4864}) {
        const auto x = make_row(f, n, rng);
        const std::size_t bytes = ls::dtype_bytes(t, static_cast<std::int64_t>(n));
        std::vector<std::uint8_t> a(bytes, 0xAA), s(bytes, 0x55), r(bytes, 0x11);
        k::quantize_activations(t, x.data(), a.data(), n);
        k::quantize_activations_scalar(t, x.data(), s.data(), n);
        k::quantize_row(t, x.data(), r.data(), n);
        ASSERT_EQ(a, s) << ls::dtype_name(t) << " fill " << int(f) << " n " << n;
        ASSERT_EQ(s, r);
      }
    }
  }
}

// Q8_K's scale takes the sign of the block's first value of largest magnitude: +m and -m both in
// a block, at every pair of places (same group of 8, across groups), give the scalar scan's bytes.
TEST(QuantActivations, Q8KScaleSignFromTheFirstLargestValue) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
  for (std::size_t first : {0u, 3u, 7u, 8u, 100u, 254u})
    for (std::size_t second : {first + 1, first + 9, std::size_t{255}}) {
      if (second <= first || second > 255) continue;
      for (float sign : {1.0f, -1.0f}) {
        std::vector<float> x(512);
        for (auto& v : x) v = ud(rng);
        x[256 + first] = 5.0f * sign;
        x[256 + second] = -5.0f * sign;
        std::vector<std::uint8_t> a(2 * sizeof(k::BlockQ8_K), 0xAA), s(a.size(), 0x55);
        k::quantize_activations(DType::Q8_K, x.data(), a.data(), x.size());
        k::quantize_activations_scalar(DType::Q8_K, x.data(), s.data(), x.size());
        ASSERT_EQ(a, s) << first << " " << second << " " << sign;
      }
    }
}

// Ties: roundf for Q8_0 (2.5 -> 3, -2.5 -> -3), round-to-even for Q8_K (2.5 -> 2), as GGML.
TEST(QuantActivations, RoundingOfTies) {
  std::vector<float> x(256, 0.0f);
  x[0] = -127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 3.5f;
  std::vector<std::uint8_t> q0(ls::dtype_bytes(DType::Q8_0, 256)), qk(sizeof(k::BlockQ8_K));
  k::quantize_activations(DType::Q8_0, x.data(), q0.data(), 256);
  k::quantize_activations(DType::Q8_K, x.data(), qk.data(), 256);
  const auto* b0 = reinterpret_cast<const std::int8_t*>(q0.data() + 2);
  EXPECT_EQ(b0[0], -127);
  EXPECT_EQ(b0[1], 3);
  EXPECT_EQ(b0[2], -3);
  EXPECT_EQ(b0[3], 4);
  const auto* bk = reinterpret_cast<const std::int8_t*>(qk.data() + 4);
  // iscale = -127 / -127 = 1
  EXPECT_EQ(bk[0], -127);
  EXPECT_EQ(bk[1], 2);
  EXPECT_EQ(bk[2], -2);
  EXPECT_EQ(bk[3], 4);
}

struct DotCase {
  std::vector<std::uint8_t> w, x;
  std::vector<float> wf, xf;  // dequantized
};

DotCase make_case(DType t, Fill fw, Fill fx, std::size_t n, std::mt19937& rng) {
  const DType a = k::dot_activation_type(t);
  DotCase c;
  c.w = quantize(t, make_row(fw, n, rng));
  const auto xs = make_row(fx, n, rng);
  c.x.resize(ls::dtype_bytes(a, static_cast<std::int64_t>(n)));
  k::quantize_activations(a, xs.data(), c.x.data(), n);
  c.wf = dequantize(t, c.w, n);
  c.xf = dequantize(a, c.x, n);
  return c;
}

TEST(QuantDot, MatchesReferencesAndScalarBits) {
  std::mt19937 rng(5);
  for (DType t : kWeights) {
    for (std::size_t n : lengths_for(t)) {
      for (Fill fw : kFills) {
        for (Fill fx : {Fill::Normal, Fill::Mixed, Fill::Zero, Fill::Huge}) {
          if (fw == Fill::Huge && has_min(t)) continue;  // the f16 minimum overflows (as GGML)
          const DotCase c = make_case(t, fw, fx, n, rng);
          const float got = k::dot_quantized(t, c.w.data(), c.x.data(), n);
          const float scalar = k::dot_quantized_scalar(t, c.w.data(), c.x.data(), n);
          const double ref = k::dot_quantized_ref(t, c.w.data(), c.x.data(), n);
          double deq = 0;
          for (std::size_t i = 0; i < n; ++i) deq += static_cast<double>(c.wf[i]) * c.xf[i];
          const double mag = dot_magnitude(t, c.w, c.wf, c.xf);
          const std::string where = std::string(ls::dtype_name(t)) + " n " + std::to_string(n) +
                                    " fills " + std::to_string(int(fw)) + "," +
                                    std::to_string(int(fx));
          // Same accumulation model on every path: identical bits.
          ASSERT_EQ(std::memcmp(&got, &scalar, 4), 0) << where << ": " << got << " vs " << scalar;
          // Float accumulation over n / block terms: a few ulps of the magnitude.
          const double blocks = static_cast<double>(n / ls::dtype_block_elems(t));
          ASSERT_NEAR(got, ref, 4e-7 * (blocks + 4) * mag + 1e-37) << where;
          // The dequantized values are rounded floats (K-quants: d * sc * q - dmin * m), so the
          // reference and the dequantized dot differ by a few float roundings per product.
          ASSERT_NEAR(ref, deq, 3e-7 * mag + 1e-37) << where;
        }
      }
    }
  }
}

// Arbitrary block bytes (every 6-bit scale/min pattern of Q4_K, every Q6_K scale, -128 in
// Q8_0 weights) with finite f16 scales: SIMD == scalar bits, and both near the exact reference.
TEST(QuantDot, ArbitraryBlockBytes) {
  std::mt19937 rng(8);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (DType t : kWeights) {
    const DType a = k::dot_activation_type(t);
    for (std::size_t n : lengths_for(t)) {
      std::vector<std::uint8_t> w(ls::dtype_bytes(t, static_cast<std::int64_t>(n)));
      for (auto& v : w) v = static_cast<std::uint8_t>(byte(rng));
      const std::size_t bb = ls::dtype_block_bytes(t);
      for (std::size_t off = 0; off < w.size(); off += bb) {
        for (std::size_t at : scale_offsets(t)) {
          const std::uint16_t d = ls::f32_to_f16(scale(rng));
          std::memcpy(&w[off + at], &d, 2);
        }
      }
      std::mt19937 xr(static_cast<unsigned>(n));
      const auto xs = make_row(Fill::Normal, n, xr);
      std::vector<std::uint8_t> x(ls::dtype_bytes(a, static_cast<std::int64_t>(n)));
      k::quantize_activations(a, xs.data(), x.data(), n);
      const auto wf = dequantize(t, w, n), xf = dequantize(a, x, n);
      const double mag = dot_magnitude(t, w, wf, xf);
      const float got = k::dot_quantized(t, w.data(), x.data(), n);
      const float scalar = k::dot_quantized_scalar(t, w.data(), x.data(), n);
      const double ref = k::dot_quantized_ref(t, w.data(), x.data(), n);
      ASSERT_EQ(std::memcmp(&got, &scalar, 4), 0) << ls::dtype_name(t) << " n " << n;
      const double blocks = static_cast<double>(n / ls::dtype_block_elems(t));
      ASSERT_NEAR(got, ref, 4e-7 * (blocks + 4) * mag) << ls::dtype_name(t) << " n " << n;
    }
  }
}

TEST(QuantDot, TilesBitIdenticalToSingleDots) {
  std::mt19937 rng(6);
  for (DType t : kWeights) {
    const DType a = k::dot_activation_type(t);
    for (std::size_t n : lengths_for(t)) {
      if (n > 1792) continue;
      const std::size_t wb = ls::dtype_bytes(t, static_cast<std::int64_t>(n));
      const std::size_t xb = ls::dtype_bytes(a, static_cast<std::int64_t>(n));
      // >= 8 rows take the prepared-activation path (Q4_0) and groups of 8 rows (Q4_K); > 16
      // tokens need two passes of the VNNI tile
      const int max_rows = 17, max_tok = 18;
      // Strides larger than a row: tiles must honour them.
      std::vector<std::uint8_t> w(max_rows * (wb + 8)), x(max_tok * (xb + 4));
      for (int r = 0; r < max_rows; ++r) {
        const auto q = quantize(t, make_row(Fill::Normal, n, rng));
        std::memcpy(&w[r * (wb + 8)], q.data(), wb);
      }
      for (int i = 0; i < max_tok; ++i) {
        const auto xs = make_row(i == 2 ? Fill::Mixed : Fill::Normal, n, rng);
        k::quantize_activations(a, xs.data(), &x[i * (xb + 4)], n);
      }
      for (int rows : {1, 2, 3, 4, 8, 9, 16, 17}) {
        for (int tok = 1; tok <= max_tok; ++tok) {
          constexpr int kStride = max_tok + 1;
          std::vector<float> out(rows * kStride, -1.0f);
          k::dot_quantized_tile(t, w.data(), wb + 8, rows, x.data(), xb + 4, tok, n, out.data(),
                                kStride);
          for (int r = 0; r < rows; ++r) {
            for (int i = 0; i < kStride; ++i) {
              if (i >= tok) {
                ASSERT_EQ(out[r * kStride + i], -1.0f) << "tile wrote past its tokens";
                continue;
              }
              const float single = k::dot_quantized(t, &w[r * (wb + 8)], &x[i * (xb + 4)], n);
              ASSERT_EQ(std::memcmp(&single, &out[r * kStride + i], 4), 0)
                  << ls::dtype_name(t) << " n " << n << " tile " << rows << "x" << tok << " at "
                  << r << "," << i;
            }
          }
        }
      }
    }
  }
}

// The AVX-512 VNNI Q8_0 tile called directly (not through the dispatch, which LS_QUANT_SIMD may
// steer away from it) against the scalar definition, bit for bit. Skipped, saying so, on a CPU
// without avx512vnni + avx512vl: the next machine that has them runs it.
TEST(QuantDot, Avx512VnniTileEqualsScalarBitForBit) {
  if (!k::quant_detail::avx512_vnni_supported())
    GTEST_SKIP() << "this CPU has no AVX-512 VNNI: the VNNI Q8_0 tile is not tested here";
  std::mt19937 rng(11);
  for (std::size_t n : {32u, 224u, 256u, 896u, 4864u}) {
    const std::size_t wb = ls::dtype_bytes(DType::Q8_0, static_cast<std::int64_t>(n));
    constexpr int kRows = 5, kTok = 17;
    std::vector<std::uint8_t> w(kRows * wb), x(kTok * wb);
    for (int r = 0; r < kRows; ++r) {
      const auto q = quantize(DType::Q8_0, make_row(Fill::Normal, n, rng));
      std::memcpy(&w[r * wb], q.data(), wb);
    }
    for (int i = 0; i < kTok; ++i) {
      const auto xs = make_row(i == 3 ? Fill::Mixed : Fill::Normal, n, rng);
      k::quantize_activations_scalar(DType::Q8_0, xs.data(), &x[i * wb], n);
    }
    for (int tok : {2, 5, 16, 17}) {
      std::vector<float> out(kRows * kTok);
      k::quant_detail::dot_tile_q8_0_vnni(w.data(), wb, kRows, x.data(), wb, tok, n, out.data(),
                                          kTok);
      for (int r = 0; r < kRows; ++r)
        for (int i = 0; i < tok; ++i) {
          const float want = k::dot_quantized_scalar(DType::Q8_0, &w[r * wb], &x[i * wb], n);
          ASSERT_EQ(std::memcmp(&want, &out[r * kTok + i], 4), 0)
              << "n " << n << " tokens " << tok << " at " << r << "," << i;
        }
    }
  }
}

// The AVX-512 Q4_K, Q5_K, Q6_K, Q5_0, Q5_1 and Q4_1 tiles called directly against the scalar
// definition, bit for bit: rows of arbitrary bytes (every scale/min pattern and high bit) with
// finite f16 scales, 8, 13 and 16 rows (they take whole groups of 8 and leave the rest to the
// caller), 1 to 9 tokens. Skipped, saying so, where the CPU lacks AVX-512 VNNI/BW.
TEST(QuantDot, Avx512RowGroupTilesEqualScalarBitForBit) {
  if (!k::quant_detail::avx512_vnni_supported())
    GTEST_SKIP() << "this CPU has no AVX-512 VNNI/BW: the AVX-512 K-quant/Q5_0/Q5_1/Q4_1 tiles "
                    "are not tested";
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q5_0, DType::Q5_1, DType::Q4_1}) {
    const DType a = k::dot_activation_type(t);
    const auto tile = k::quant_detail::find_quant_traits(t)->rows8_avx512;
    ASSERT_NE(tile, nullptr) << ls::dtype_name(t);
    for (std::size_t n : {256u, 1792u, 4864u, 896u, 32u}) {
      if (n % ls::dtype_block_elems(t) != 0) continue;
      const std::size_t wb = ls::dtype_bytes(t, static_cast<std::int64_t>(n));
      const std::size_t xb = ls::dtype_bytes(a, static_cast<std::int64_t>(n));
      constexpr int kRows = 16, kTok = 9;
      std::vector<std::uint8_t> w(kRows * wb), x(kTok * xb);
      for (auto& v : w) v = static_cast<std::uint8_t>(byte(rng));
      for (std::size_t off = 0; off < w.size(); off += ls::dtype_block_bytes(t))
        for (std::size_t at : scale_offsets(t)) {
          const std::uint16_t d = ls::f32_to_f16(scale(rng));
          std::memcpy(&w[off + at], &d, 2);
        }
      for (int i = 0; i < kTok; ++i) {
        const auto xs = make_row(i == 3 ? Fill::Mixed : Fill::Normal, n, rng);
        k::quantize_activations_scalar(a, xs.data(), &x[i * xb], n);
      }
      for (int rows : {8, 13, 16})
        for (int tok = 1; tok <= kTok; ++tok) {
          std::vector<float> out(kRows * kTok, -1.0f);
          const int done = tile(w.data(), wb, rows, x.data(), xb, tok, n, out.data(), kTok);
          ASSERT_EQ(done, rows / 8 * 8);
          for (int r = 0; r < kRows; ++r)
            for (int i = 0; i < kTok; ++i) {
              if (r >= done || i >= tok) {
                ASSERT_EQ(out[r * kTok + i], -1.0f) << "wrote past its rows or tokens";
                continue;
              }
              const float want = k::dot_quantized_scalar(t, &w[r * wb], &x[i * xb], n);
              ASSERT_EQ(std::memcmp(&want, &out[r * kTok + i], 4), 0)
                  << ls::dtype_name(t) << " n " << n << " tokens " << tok << " at " << r << ","
                  << i;
            }
        }
    }
  }
}

TEST(QuantDot, ReportsImplementation) {
  const std::string name = k::quant_simd_name();
  EXPECT_TRUE(name == "avx512vnni (Q8_0, Q5_0, Q5_1, Q4_1 tiles; Q4_K, Q5_K, Q6_K), avx2" ||
              name == "avx2" || name == "scalar")
      << name;
  const char* env = std::getenv("LS_QUANT_SIMD");
  if (env != nullptr && std::string(env) == "scalar") {
    EXPECT_EQ(name, "scalar");
  }
  if (env != nullptr && std::string(env) == "avx2") {
    EXPECT_EQ(name, "avx2");
  }
}

}  // namespace
