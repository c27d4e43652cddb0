// Each SIMD dot kernel against its double-precision scalar reference on random vectors of
// every length from 0 to 300 (all tail sizes) plus real row lengths (896, 4864).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"

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
  ls::kernels::matmul(tv, x, T, y1, p1);
  ls::kernels::matmul(tv, x, T, y2, p2);
  for (int t = 0; t < T; ++t)
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto i = static_cast<std::size_t>(t * rows + r);
      const double ref = ls::kernels::dot_bf16_ref(&w[static_cast<std::size_t>(r * cols)],
                                                   &x[static_cast<std::size_t>(t * cols)], cols);
      EXPECT_NEAR(y1[i], ref, 1e-4);
      EXPECT_EQ(y1[i], y2[i]);
    }
  std::vector<float> small(3);
  EXPECT_THROW(ls::kernels::matmul(tv, x, T, small, p1), std::exception);
}

}  // namespace
