// The interleaved Q8_0 / Q4_0 / Q5_0 / Q5_1 / IQ4_NL layout and the Q4_K / Q5_K / Q6_K one of whole
// blocks
// (kernels/interleave.h): repacking round-trips
// byte for byte, and its dot products (through the dispatch, and the AVX2 and AVX-512 VNNI kernels
// called directly) give dot_quantized_scalar's bits for every row and token: random rows, arbitrary
// bytes (Q8_0 -128, every nibble and high bit), ragged last chunks, several tokens and strides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/interleave.h"
#include "kernels/quant.h"
#include "kernels/quant/traits.h"
#include "kernels/x86/interleave_simd.h"
#include "kernels/x86/quant_x86.h"

namespace {

using ls::DType;
namespace k = ls::kernels;

struct Case {
  DType type;
  std::size_t rows, cols;
  int tokens;
  std::vector<std::uint8_t> w, wi, x;  // file layout, interleaved, activations
  std::size_t row_bytes, x_bytes;
};

// Where a block keeps its f16 fields (scale; Q5_1's minimum; Q4_K/Q5_K's d and dmin; Q6_K's d),
// which random rows get finite values in.
std::vector<std::size_t> f16_fields(DType t) {
  switch (t) {
    case DType::Q5_1:
    case DType::Q4_K:
    case DType::Q5_K:
      return {0, 2};
    case DType::Q6_K:
      return {offsetof(k::BlockQ6_K, d)};
    default:
      return {0};
  }
}

// Rows quantized from normal floats (half of them) or arbitrary bytes with finite scales.
Case make_case(DType t, std::size_t rows, std::size_t cols, int tokens, unsigned seed) {
  Case c{t,
         rows,
         cols,
         tokens,
         {},
         {},
         {},
         ls::dtype_bytes(t, static_cast<std::int64_t>(cols)),
         ls::dtype_bytes(k::dot_activation_type(t), static_cast<std::int64_t>(cols))};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0, 1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  c.w.resize(rows * c.row_bytes);
  std::vector<float> f(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    std::uint8_t* row = &c.w[r * c.row_bytes];
    if (r % 2 == 0) {
      for (auto& v : f) v = nd(rng);
      k::quantize_row(t, f.data(), row, cols);
    } else {
      for (std::size_t i = 0; i < c.row_bytes; ++i) row[i] = static_cast<std::uint8_t>(byte(rng));
      for (std::size_t off = 0; off < c.row_bytes; off += ls::dtype_block_bytes(t))
        for (std::size_t at : f16_fields(t)) {
          const std::uint16_t d = ls::f32_to_f16(scale(rng));
          std::memcpy(row + off + at, &d, 2);
        }
    }
  }
  c.wi.resize(c.w.size());
  k::interleave_rows(t, c.w.data(), rows, cols, c.wi.data());
  c.x.resize(static_cast<std::size_t>(tokens) * (c.x_bytes + 6));  // a stride past the row
  for (int i = 0; i < tokens; ++i) {
    for (auto& v : f) v = nd(rng) * (i == 1 ? 100.0f : 1.0f);
    k::quantize_activations_scalar(k::dot_activation_type(t), f.data(), &c.x[i * (c.x_bytes + 6)],
                                   cols);
  }
  return c;
}

// out[r * row_stride + t * tok_stride] against dot_quantized_scalar of the file's rows.
void expect_scalar_bits(const Case& c, const std::vector<float>& out, std::size_t row_stride,
                        std::size_t tok_stride, const char* path) {
  for (std::size_t r = 0; r < c.rows; ++r)
    for (int t = 0; t < c.tokens; ++t) {
      const float want =
          k::dot_quantized_scalar(c.type, &c.w[r * c.row_bytes], &c.x[t * (c.x_bytes + 6)], c.cols);
      const float got = out[r * row_stride + t * tok_stride];
      ASSERT_EQ(std::memcmp(&want, &got, 4), 0)
          << path << " " << ls::dtype_name(c.type) << " " << c.rows << "x" << c.cols << " row " << r
          << " token " << t << ": " << got << " vs " << want;
    }
}

// Every row of c's interleaved layout back in the file's layout, byte for byte.
void expect_round_trip(const Case& c) {
  std::vector<std::uint8_t> row(c.row_bytes);
  for (std::size_t r = 0; r < c.rows; ++r) {
    k::deinterleave_row(c.type, &c.wi[r / 8 * 8 * c.row_bytes], c.cols, static_cast<int>(r % 8),
                        row.data());
    ASSERT_EQ(0, std::memcmp(row.data(), &c.w[r * c.row_bytes], c.row_bytes))
        << ls::dtype_name(c.type) << " cols " << c.cols << " row " << r;
  }
}

// c's 3 groups against its tokens through the dispatch (row-major, as decode writes) and the
// scalar path (token-major, as matmul's y): the scalar bits both times.
void expect_products(const Case& c) {
  std::vector<float> out(c.rows * c.tokens, -1.0f);
  k::dot_interleaved(c.type, c.wi.data(), 3, c.x.data(), c.x_bytes + 6, c.tokens, c.cols,
                     out.data(), 1, c.rows);
  expect_scalar_bits(c, out, 1, c.rows, k::quant_simd_name());
  std::fill(out.begin(), out.end(), -1.0f);
  k::dot_interleaved_scalar(c.type, c.wi.data(), 3, c.x.data(), c.x_bytes + 6, c.tokens, c.cols,
                            out.data(), c.tokens, 1);
  expect_scalar_bits(c, out, c.tokens, 1, "scalar");
}

const std::size_t kCols[] = {32, 96, 256, 896, 4864};  // 1, 3, 8, 28 (ragged), 152 blocks
const DType kTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q5_1, DType::IQ4_NL};

TEST(Interleave, RoundTripsByteForByte) {
  for (DType t : kTypes)
    for (std::size_t cols : kCols) {
      const Case c = make_case(t, 16, cols, 1, 1);
      ASSERT_NE(c.w, c.wi) << "the layout must differ from the file's";
      expect_round_trip(c);
    }
}

TEST(Interleave, OnlyWholeGroupsOfBlockTypes) {
  EXPECT_TRUE(k::can_interleave(DType::Q4_0, 896, 4864));
  EXPECT_TRUE(k::can_interleave(DType::Q5_1, 896, 4864));
  EXPECT_TRUE(k::can_interleave(DType::IQ4_NL, 896, 4864));
  EXPECT_FALSE(k::can_interleave(DType::Q4_1, 896, 4864));
  EXPECT_FALSE(k::can_interleave(DType::Q4_0, 12, 64));  // rows not a multiple of 8
  EXPECT_FALSE(k::can_interleave(DType::Q8_0, 8, 40));   // ragged block
  EXPECT_FALSE(k::can_interleave(DType::Q4_K, 8, 200));  // ragged block
  EXPECT_FALSE(k::can_interleave(DType::BF16, 8, 64));
  std::vector<std::uint8_t> buf(1024);
  EXPECT_THROW(k::interleave_rows(DType::Q4_0, buf.data(), 12, 32, buf.data()), ls::Error);
  EXPECT_THROW(k::interleave_rows(DType::Q3_K, buf.data(), 8, 256, buf.data()), ls::Error);
}

TEST(Interleave, DispatchedDotsEqualScalarBits) {
  for (DType t : kTypes)
    for (std::size_t cols : kCols)
      for (int tokens : {1, 3})
        expect_products(make_case(t, 24, cols, tokens, static_cast<unsigned>(cols + tokens)));
}

// Q4_K, Q5_K and Q6_K blocks, interleaved where the CPU runs their AVX-512BW group kernels: the
// layout round-trips, and the dispatched products (1 to 9 tokens: the kernels take 8 at a time)
// give the scalar bits, as does the scalar path of the interleaved layout.
TEST(Interleave, KQuantBlocksEqualScalarBits) {
  EXPECT_EQ(k::can_interleave(DType::Q4_K, 8, 256), k::quant_detail::simd_vnni());
  if (!k::quant_detail::simd_vnni())
    GTEST_SKIP() << "no AVX-512 VNNI kernels in use here (CPU or LS_QUANT_SIMD): K-quant rows keep "
                    "the file's layout, so their interleaved products are not tested here";
  for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K})
    for (std::size_t cols : {256, 768, 4864})
      for (int tokens : {1, 2, 8, 9}) {
        const Case c = make_case(t, 24, cols, tokens, static_cast<unsigned>(cols + tokens));
        if (cols > 256) {
          ASSERT_NE(c.w, c.wi) << "the layout must differ from the file's";
        }
        expect_round_trip(c);
        expect_products(c);
      }
}

// The AVX2 and VNNI kernels called directly (LS_QUANT_SIMD may steer the dispatch away from one),
// each skipped, saying so, where the CPU lacks it.
// 1 to 19 tokens (VNNI: 2, 4, 8 or 16 against two groups, an odd group in pairs; AVX2: 8 or
// 4 at once for Q8_0 and IQ4_NL, pairs for the nibble types) and 3 groups (a pair and one more).
void direct(bool vnni) {
  for (DType t : kTypes)
    for (std::size_t cols : kCols)
      for (int tok : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 16, 19}) {
        const Case c = make_case(t, 24, cols, tok, static_cast<unsigned>(cols * 3 + tok));
        std::vector<k::ActBlock> xb(cols / 32 * tok);
        k::prepare_act_blocks(c.x.data(), c.x_bytes + 6, tok, cols, xb.data());
        // Both output layouts: rows of a token side by side (matmul's y), and tokens of a row.
        for (const bool row_major : {true, false}) {
          const std::size_t row_stride = row_major ? 1 : static_cast<std::size_t>(tok);
          const std::size_t tok_stride = row_major ? c.rows : 1;
          std::vector<float> out(c.rows * tok, -1.0f);
          const k::InterleavedArgs a{t,         c.wi.data(), 3,    c.x.data(), c.x_bytes + 6,
                                     xb.data(), tok,         cols, out.data(), row_stride,
                                     tok_stride};
          (vnni ? k::interleaved_vnni : k::interleaved_avx2)(a);
          expect_scalar_bits(c, out, row_stride, tok_stride, vnni ? "vnni" : "avx2");
        }
      }
}

TEST(Interleave, Avx2KernelEqualsScalarBits) {
  if (!k::quant_detail::avx2_supported())
    GTEST_SKIP() << "this CPU has no AVX2/FMA/F16C: the AVX2 interleaved kernel is not tested here";
  direct(false);
}

TEST(Interleave, Avx512VnniKernelEqualsScalarBits) {
  if (!k::quant_detail::avx512_vnni_supported())
    GTEST_SKIP() << "this CPU has no AVX-512 VNNI: the VNNI interleaved kernel is not tested here";
  direct(true);
}

}  // namespace
