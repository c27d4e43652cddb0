// Each SIMD dot kernel against its double-precision scalar reference on random vectors of
// every length from 0 to 300 (all tail sizes) plus real row lengths (896, 4864).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/dot.h"
#include "kernels/interleave.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"

namespace {

std::vector<std::size_t> lengths() {
  std::vector<std::size_t> v;
  for (std::size_t n = 0; n <= 300; ++n) v.push_back(n);
  v.push_back(896);
  v.push_back(4864);
  return v;
}

// |simd - ref| <= 1e-5 * sum|w_i x_i| + 1e-6: float32 accumulation error bound with margin.
template <typename F, typename R>
void check(const char* name, F simd, R ref, bool half) {
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0, 1);
  for (std::size_t n : lengths()) {
    std::vector<float> x(n), wf(n);
    std::vector<std::uint16_t> wh(n);
    double abs_sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = nd(rng);
      wf[i] = nd(rng);
      wh[i] = half ? ls::f32_to_f16(wf[i]) : ls::f32_to_bf16(wf[i]);
      abs_sum += std::abs(static_cast<double>(wf[i]) * x[i]);
    }
    const double got = simd(wf, wh, x), want = ref(wf, wh, x);
    ASSERT_NEAR(got, want, 1e-5 * abs_sum + 1e-6) << name << " n=" << n;
  }
}

TEST(Dot, F32MatchesReference) {
  check(
      "f32",
      [](auto& w, auto&, auto& x) { return ls::kernels::dot_f32(w.data(), x.data(), x.size()); },
      [](auto& w, auto&, auto& x) {
        return ls::kernels::dot_f32_ref(w.data(), x.data(), x.size());
      },
      false);
}
TEST(Dot, Bf16MatchesReference) {
  check(
      "bf16",
      [](auto&, auto& w, auto& x) { return ls::kernels::dot_bf16(w.data(), x.data(), x.size()); },
      [](auto&, auto& w, auto& x) {
        return ls::kernels::dot_bf16_ref(w.data(), x.data(), x.size());
      },
      false);
}
TEST(Dot, F16MatchesReference) {
  check(
      "f16",
      [](auto&, auto& w, auto& x) { return ls::kernels::dot_f16(w.data(), x.data(), x.size()); },
      [](auto&, auto& w, auto& x) {
        return ls::kernels::dot_f16_ref(w.data(), x.data(), x.size());
      },
      true);
}

TEST(Dot, ReferenceIsTheDefinition) {
  const float w[3] = {1.5f, -2.0f, 0.25f}, x[3] = {2.0f, 3.0f, 4.0f};
  EXPECT_EQ(ls::kernels::dot_f32_ref(w, x, 3), 1.5 * 2 - 2.0 * 3 + 0.25 * 4);
  EXPECT_EQ(ls::kernels::dot_f32(w, x, 3), -2.0f);
}

TEST(Matmul, EachOutputIsOneDotProductWhateverTheThreads) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 1);
  const std::int64_t rows = 37, cols = 70;
  std::vector<std::uint16_t> w(static_cast<std::size_t>(rows * cols));
  for (auto& v : w) v = ls::f32_to_bf16(nd(rng));
  ls::TensorView tv{
      "w", ls::DType::BF16, {rows, cols}, reinterpret_cast<const std::uint8_t*>(w.data())};
  const int T = 3;
  std::vector<float> x(static_cast<std::size_t>(T * cols));
  for (auto& v : x) v = nd(rng);
  std::vector<float> y1(static_cast<std::size_t>(T * rows)), y2(y1.size());
  ls::ThreadPool p1(1), p2(2);
  ls::kernels::MatmulScratch scratch;
  ls::kernels::matmul(tv, x, T, y1, p1, scratch);
  ls::kernels::matmul(tv, x, T, y2, p2, scratch);
  for (int t = 0; t < T; ++t)
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto i = static_cast<std::size_t>(t * rows + r);
      const double ref = ls::kernels::dot_bf16_ref(&w[static_cast<std::size_t>(r * cols)],
                                                   &x[static_cast<std::size_t>(t * cols)], cols);
      EXPECT_NEAR(y1[i], ref, 1e-4);
      EXPECT_EQ(y1[i], y2[i]);
    }
  std::vector<float> small(3);
  EXPECT_THROW(ls::kernels::matmul(tv, x, T, small, p1, scratch), std::exception);
}

// A weight of `rows` x `cols` random values stored as `type` (interleaved when asked).
struct TestWeight {
  std::vector<std::uint8_t> bytes;
  ls::TensorView view;
};
TestWeight test_weight(ls::DType type, std::int64_t rows, std::int64_t cols, bool interleave,
                       std::mt19937& rng) {
  std::normal_distribution<float> nd(0, 1);
  TestWeight w;
  const std::size_t row_bytes = ls::dtype_bytes(type, cols);
  w.bytes.resize(static_cast<std::size_t>(rows) * row_bytes);
  std::vector<float> row(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (auto& v : row) v = nd(rng);
    std::uint8_t* out = &w.bytes[static_cast<std::size_t>(r) * row_bytes];
    if (type == ls::DType::F32)
      std::memcpy(out, row.data(), row_bytes);
    else if (type == ls::DType::BF16)
      for (std::size_t i = 0; i < row.size(); ++i) {
        const std::uint16_t h = ls::f32_to_bf16(row[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
    else
      ls::kernels::quantize_row(type, row.data(), out, row.size());
  }
  if (interleave) {
    std::vector<std::uint8_t> il(w.bytes.size());
    ls::kernels::interleave_rows(type, w.bytes.data(), static_cast<std::size_t>(rows),
                                 static_cast<std::size_t>(cols), il.data());
    w.bytes = std::move(il);
  }
  w.view = ls::TensorView{"w", type, {rows, cols}, w.bytes.data()};
  if (interleave) w.view.interleaved = ls::kernels::kInterleave;
  return w;
}

// matmul_set gives each product the bits of its own matmul call, for mixed weight types and
// layouts (interleaved Q4_0 and Q8_0, row-major Q8_0, Q4_K, BF16, F32), 1 and 2 threads, decode
// and prefill (9 rows: activations prepared by all the threads); sets whose rows do not split on
// whole groups go one product at a time.
TEST(Matmul, ASetGivesEachProductsOwnBits) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0, 1);
  const std::int64_t cols = 256;
  struct Spec {
    ls::DType type;
    std::int64_t rows;
    bool interleave;
  };
  const std::vector<std::vector<Spec>> sets = {
      {{ls::DType::Q4_0, 24, true}, {ls::DType::Q8_0, 16, false}, {ls::DType::Q8_0, 8, true}},
      {{ls::DType::Q4_K, 16, false},
       {ls::DType::Q8_0, 8, false},
       {ls::DType::BF16, 8, false},
       {ls::DType::F32, 13, false}},
      {{ls::DType::Q8_0, 12, false}, {ls::DType::Q4_0, 16, true}},  // 12: not whole groups
  };
  for (const auto& specs : sets) {
    std::vector<TestWeight> ws;
    for (const Spec& s : specs) ws.push_back(test_weight(s.type, s.rows, cols, s.interleave, rng));
    for (int T : {1, 3, 9}) {
      std::vector<float> x(static_cast<std::size_t>(T * cols));
      for (auto& v : x) v = nd(rng);
      for (int threads : {1, 2}) {
        ls::ThreadPool pool(threads);
        ls::kernels::MatmulScratch scratch;
        std::vector<std::vector<float>> set_y, own_y;
        std::vector<ls::kernels::MatmulProduct> products;
        for (const TestWeight& w : ws) {
          set_y.emplace_back(static_cast<std::size_t>(T * w.view.shape[0]), -1.0f);
          own_y.emplace_back(set_y.back().size(), -2.0f);
        }
        for (std::size_t i = 0; i < ws.size(); ++i) products.push_back({&ws[i].view, set_y[i]});
        ls::kernels::matmul_set(products, x, T, pool, scratch);
        for (std::size_t i = 0; i < ws.size(); ++i) {
          ls::kernels::matmul(ws[i].view, x, T, own_y[i], pool, scratch);
          for (std::size_t k = 0; k < own_y[i].size(); ++k)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(set_y[i][k]),
                      std::bit_cast<std::uint32_t>(own_y[i][k]))
                << ls::dtype_name(ws[i].view.dtype) << " product " << i << " T=" << T
                << " threads=" << threads << " element " << k;
        }
      }
    }
  }
}

// matmul_grouped (a sparse layer's experts, each over its own rows) gives each product the bits
// of its own matmul call: products of mixed types and layouts, each with its own input and row
// count (1 to 9, so the prologue runs on the caller or on all threads), with and without an
// input producer, 1 and 2 threads; products whose rows do not split on whole groups go one by
// one.
TEST(Matmul, AGroupGivesEachProductsOwnBits) {
  std::mt19937 rng(31);
  std::normal_distribution<float> nd(0, 1);
  const std::int64_t cols = 256;
  struct Spec {
    ls::DType type;
    std::int64_t rows;
    bool interleave;
    int tokens;
  };
  const std::vector<std::vector<Spec>> groups = {
      {{ls::DType::Q4_K, 16, false, 1},
       {ls::DType::Q8_0, 16, true, 3},
       {ls::DType::F32, 8, false, 9},
       {ls::DType::BF16, 8, false, 2},
       {ls::DType::Q4_0, 24, true, 1}},
      {{ls::DType::Q8_0, 8, false, 1}, {ls::DType::Q8_0, 8, false, 1}},    // decode: one row each
      {{ls::DType::Q8_0, 12, false, 2}, {ls::DType::Q4_K, 16, false, 5}},  // 12: one by one
  };
  for (const auto& specs : groups) {
    std::vector<TestWeight> ws;
    std::vector<std::vector<float>> xs;
    for (const Spec& s : specs) {
      ws.push_back(test_weight(s.type, s.rows, cols, s.interleave, rng));
      xs.emplace_back(static_cast<std::size_t>(s.tokens * cols));
      for (auto& v : xs.back()) v = nd(rng);
    }
    for (bool produced : {false, true}) {
      for (int threads : {1, 2}) {
        ls::ThreadPool pool(threads);
        ls::kernels::MatmulScratch scratch;
        std::vector<std::vector<float>> got(ws.size()), own(ws.size()), inputs(ws.size());
        std::vector<ls::kernels::InputProducer> producers(ws.size());
        std::vector<ls::kernels::GroupedProduct> products;
        for (std::size_t i = 0; i < ws.size(); ++i) {
          const auto n = static_cast<std::size_t>(specs[i].tokens);
          got[i].assign(n * static_cast<std::size_t>(ws[i].view.shape[0]), -1.0f);
          own[i].assign(got[i].size(), -2.0f);
          // Produced: the input starts as NaN and each row is written by the producer.
          inputs[i] = produced ? std::vector<float>(xs[i].size(), NAN) : xs[i];
          producers[i] = [&, i](std::size_t t) {
            std::copy_n(&xs[i][t * cols], cols, &inputs[i][t * cols]);
          };
          products.push_back({&ws[i].view, inputs[i], specs[i].tokens, got[i],
                              produced ? &producers[i] : nullptr});
        }
        ls::kernels::matmul_grouped(products, pool, scratch);
        for (std::size_t i = 0; i < ws.size(); ++i) {
          ls::kernels::matmul(ws[i].view, xs[i], specs[i].tokens, own[i], pool, scratch);
          for (std::size_t k = 0; k < own[i].size(); ++k)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i][k]),
                      std::bit_cast<std::uint32_t>(own[i][k]))
                << ls::dtype_name(ws[i].view.dtype) << " product " << i << " produced " << produced
                << " threads=" << threads << " element " << k;
        }
      }
    }
  }
}

// An input producer (decode's and prefill's silu(gate) * up) runs once for every row before the
// product reads it: the same bits as the product of the input written beforehand, for quantized,
// interleaved and float weights, one set or products one by one, 1 and 2 threads.
TEST(Matmul, AProducedInputGivesTheBitsOfTheWrittenInput) {
  std::mt19937 rng(21);
  std::normal_distribution<float> nd(0, 1);
  const std::int64_t cols = 512;
  std::vector<TestWeight> ws;
  ws.push_back(test_weight(ls::DType::Q4_K, 16, cols, false, rng));
  ws.push_back(test_weight(ls::DType::Q8_0, 16, cols, true, rng));
  ws.push_back(test_weight(ls::DType::F32, 8, cols, false, rng));
  ws.push_back(test_weight(ls::DType::Q4_0, 12, cols, false, rng));  // 12: one by one
  for (int T : {1, 2, 9}) {
    std::vector<float> want(static_cast<std::size_t>(T * cols));
    for (auto& v : want) v = nd(rng);
    for (int threads : {1, 2}) {
      ls::ThreadPool pool(threads);
      ls::kernels::MatmulScratch scratch;
      for (std::size_t n_products : {3u, 4u}) {
        std::vector<float> x(want.size(), std::numeric_limits<float>::quiet_NaN());
        std::vector<std::atomic<int>> calls(static_cast<std::size_t>(T));
        const ls::kernels::InputProducer produce = [&](std::size_t t) {
          ++calls[t];
          std::copy_n(&want[t * cols], cols, &x[t * cols]);
        };
        std::vector<std::vector<float>> got(n_products), expect(n_products);
        std::vector<ls::kernels::MatmulProduct> products;
        for (std::size_t i = 0; i < n_products; ++i) {
          const auto rows = static_cast<std::size_t>(ws[i].view.shape[0]);
          got[i].assign(static_cast<std::size_t>(T) * rows, -1.0f);
          expect[i].assign(got[i].size(), -2.0f);
          products.push_back({&ws[i].view, got[i]});
        }
        ls::kernels::matmul_set(products, x, T, pool, scratch, &produce);
        for (int t = 0; t < T; ++t) EXPECT_EQ(calls[static_cast<std::size_t>(t)].load(), 1) << t;
        for (std::size_t i = 0; i < n_products; ++i) {
          ls::kernels::matmul(ws[i].view, want, T, expect[i], pool, scratch);
          for (std::size_t k = 0; k < got[i].size(); ++k)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i][k]),
                      std::bit_cast<std::uint32_t>(expect[i][k]))
                << ls::dtype_name(ws[i].view.dtype) << " T=" << T << " threads=" << threads
                << " products=" << n_products << " element " << k;
        }
      }
    }
  }
}

// Q4_K, Q5_K and Q6_K matrices interleaved by blocks (AVX-512 CPUs) give the file layout's bits
// through matmul: decode, prefill chunks of 8 tokens and a ragged rest, 1 and 2 threads.
TEST(Matmul, InterleavedKQuantsGiveTheFileLayoutsBits) {
  if (!ls::kernels::can_interleave(ls::DType::Q4_K, 8, 256))
    GTEST_SKIP() << "K-quant rows are not interleaved on this CPU (no AVX-512 VNNI kernels in use)";
  for (ls::DType type : {ls::DType::Q4_K, ls::DType::Q5_K, ls::DType::Q6_K}) {
    std::mt19937 rng_a(5), rng_b(5);  // the same weights twice
    const TestWeight plain = test_weight(type, 40, 768, false, rng_a);
    const TestWeight packed = test_weight(type, 40, 768, true, rng_b);
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0, 1);
    for (int T : {1, 3, 17}) {
      std::vector<float> x(static_cast<std::size_t>(T) * 768);
      for (auto& v : x) v = nd(rng);
      for (int threads : {1, 2}) {
        ls::ThreadPool pool(threads);
        ls::kernels::MatmulScratch scratch;
        std::vector<float> ya(static_cast<std::size_t>(T) * 40, -1.0f), yb(ya.size(), -2.0f);
        ls::kernels::matmul(plain.view, x, T, ya, pool, scratch);
        ls::kernels::matmul(packed.view, x, T, yb, pool, scratch);
        for (std::size_t k = 0; k < ya.size(); ++k)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(ya[k]), std::bit_cast<std::uint32_t>(yb[k]))
              << ls::dtype_name(type) << " T=" << T << " threads=" << threads << " element " << k;
      }
    }
  }
}

// The weights wf stored as `type` (F32, BF16 or F16 bytes); wf becomes the stored values.
std::vector<std::uint8_t> store_weights(ls::DType type, std::vector<float>& wf) {
  std::vector<std::uint8_t> w(wf.size() * ls::dtype_size(type));
  for (std::size_t i = 0; i < wf.size(); ++i) {
    if (type == ls::DType::F32) {
      std::memcpy(&w[i * 4], &wf[i], 4);
    } else {
      const std::uint16_t h =
          type == ls::DType::BF16 ? ls::f32_to_bf16(wf[i]) : ls::f32_to_f16(wf[i]);
      std::memcpy(&w[i * 2], &h, 2);
      wf[i] = type == ls::DType::BF16 ? ls::bf16_to_f32(h) : ls::f16_to_f32(h);
    }
  }
  return w;
}

// |dot - double reference| within the float error bound of a sum of n products.
void expect_near_reference(float got, const float* w, const float* x, std::size_t n) {
  const double want = ls::kernels::dot_f32_ref(w, x, n);
  double abs_sum = 0;
  for (std::size_t i = 0; i < n; ++i) abs_sum += std::abs(w[i] * x[i]);
  ASSERT_NEAR(got, want, 1e-5 * abs_sum + 1e-6);
}

// Tiles of up to 9 rows x 13 tokens give exactly the bits of 1 x 1 tiles (the decode shape),
// and agree with the double reference, for every float weight type and awkward lengths.
TEST(Dot, TilesEqualSingleDotsBitForBit) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 1);
  for (auto type : {ls::DType::F32, ls::DType::BF16, ls::DType::F16}) {
    for (std::size_t n : {1u, 7u, 8u, 37u, 896u}) {
      const int rows = 9, toks = 13;  // 6 + 4 + 3 on AVX-512, 5 x 2 + 2 + 1 on AVX2
      const std::size_t es = ls::dtype_size(type);
      std::vector<float> wf(rows * n), x(toks * n);
      for (auto& e : wf) e = nd(rng);
      for (auto& e : x) e = nd(rng);
      const std::vector<std::uint8_t> w = store_weights(type, wf);
      std::vector<float> tiled(rows * toks), single(1);
      ls::kernels::dot_tile(type, w.data(), n * es, rows, x.data(), n, toks, n, tiled.data(), toks);
      for (int r = 0; r < rows; ++r) {
        for (int t = 0; t < toks; ++t) {
          ls::kernels::dot_tile(type, w.data() + r * n * es, n * es, 1, x.data() + t * n, n, 1, n,
                                single.data(), 1);
          ASSERT_EQ(std::bit_cast<std::uint32_t>(tiled[r * toks + t]),
                    std::bit_cast<std::uint32_t>(single[0]))
              << ls::dtype_name(type) << " n=" << n << " r=" << r << " t=" << t;
          expect_near_reference(single[0], &wf[r * n], &x[t * n], n);
        }
      }
    }
  }
}

// Decode (one token) runs the rows one after another: each row's result lands in its own place,
// with the bits of the prefill tiles (a token given twice) and near the double reference (rows
// packed, as matmul passes them).
TEST(Dot, DecodeRowsEqualPrefillTilesBitForBit) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0, 1);
  for (auto type : {ls::DType::F32, ls::DType::BF16, ls::DType::F16}) {
    for (std::size_t n : {37u, 896u}) {
      const int rows = 23;
      const std::size_t es = ls::dtype_size(type);
      std::vector<float> wf(rows * n), x(n);
      for (auto& e : wf) e = nd(rng);
      for (auto& e : x) e = nd(rng);
      const std::vector<std::uint8_t> w = store_weights(type, wf);
      std::vector<float> x2(x);
      x2.insert(x2.end(), x.begin(), x.end());
      std::vector<float> decoded(rows), tiled(rows * 2);
      ls::kernels::dot_tile(type, w.data(), n * es, rows, x.data(), n, 1, n, decoded.data(), 1);
      ls::kernels::dot_tile(type, w.data(), n * es, rows, x2.data(), n, 2, n, tiled.data(), 2);
      for (int r = 0; r < rows; ++r) {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(decoded[r]),
                  std::bit_cast<std::uint32_t>(tiled[r * 2]))
            << ls::dtype_name(type) << " n=" << n << " r=" << r;
        expect_near_reference(decoded[r], &wf[r * n], x.data(), n);
      }
    }
  }
}

}  // namespace
