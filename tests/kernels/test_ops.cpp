// The small ops against formulas written here in double precision, independently of ops.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/ops.h"

namespace {

std::vector<float> randn(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

TEST(Ops, RmsNorm) {
  const auto x = randn(896, 1), w = randn(896, 2);
  std::vector<float> out(896);
  ls::kernels::rmsnorm(x.data(), w.data(), 896, 1e-6f, out.data());
  double ms = 0;
  for (float v : x) ms += static_cast<double>(v) * v;
  ms /= 896;
  for (std::size_t i = 0; i < 896; ++i)
    EXPECT_NEAR(out[i], x[i] / std::sqrt(ms + 1e-6) * w[i], 1e-5 * (1 + std::abs(out[i])));
}

TEST(Ops, RopeRotatesHalvesByPositionAngles) {
  const std::size_t hd = 64, heads = 3, pos = 17;
  const double theta = 1e6;
  auto x = randn(hd * heads, 3);
  const auto orig = x;
  std::vector<float> c(hd / 2), s(hd / 2);
  std::vector<double> inv_freq(hd / 2);
  for (std::size_t i = 0; i < hd / 2; ++i) inv_freq[i] = std::pow(theta, -2.0 * i / hd);
  ls::kernels::rope_angles(pos, inv_freq, 1.0, c.data(), s.data());
  ls::kernels::rope_neox(x.data(), heads, hd, c.data(), s.data());
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < hd / 2; ++i) {
      const double a = pos / std::pow(theta, 2.0 * i / hd);
      const double x1 = orig[h * hd + i], x2 = orig[h * hd + i + hd / 2];
      EXPECT_NEAR(x[h * hd + i], x1 * std::cos(a) - x2 * std::sin(a), 1e-5);
      EXPECT_NEAR(x[h * hd + i + hd / 2], x2 * std::cos(a) + x1 * std::sin(a), 1e-5);
    }
}

TEST(Ops, SoftmaxAndSilu) {
  std::vector<float> v = {1.0f, 2.0f, -std::numeric_limits<float>::infinity(), 3.0f};
  ls::kernels::softmax(v);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(v[0], std::exp(1.0) / z, 1e-7);
  EXPECT_NEAR(v[3], std::exp(3.0) / z, 1e-7);
  EXPECT_EQ(v[2], 0.0f);
  const float g[2] = {0.5f, -3.0f}, u[2] = {2.0f, 1.5f};
  float o[2];
  ls::kernels::silu_mul(g, u, 2, o);
  EXPECT_NEAR(o[0], 0.5 / (1 + std::exp(-0.5)) * 2.0, 1e-6);
  EXPECT_NEAR(o[1], -3.0 / (1 + std::exp(3.0)) * 1.5, 1e-6);
}

// A group of 3 query heads over one KV head (the second of two interleaved heads), in every
// cache type, against the double-precision formula on the values as the cache stores them.
TEST(Ops, AttendGroupIsSoftmaxWeightedValuesPerHead) {
  const std::size_t hd = 16, n = 9, stride = 2 * hd, group = 3;
  const auto q = randn(group * hd, 4), k = randn(n * stride, 5), v = randn(n * stride, 6);
  const float scale = 0.25f;
  for (auto type : {ls::DType::F32, ls::DType::F16, ls::DType::BF16}) {
    const std::size_t es = ls::dtype_size(type);
    std::vector<std::uint8_t> kc(n * stride * es), vc(n * stride * es);
    ls::kernels::store_row(k.data(), k.size(), type, kc.data());
    ls::kernels::store_row(v.data(), v.size(), type, vc.data());
    std::vector<float> ks(k.size()), vs(v.size());  // what the cache holds, widened
    for (std::size_t i = 0; i < k.size(); ++i) {
      std::uint16_t kh, vh;
      std::memcpy(&kh, &kc[i * es], 2);
      std::memcpy(&vh, &vc[i * es], 2);
      ks[i] = type == ls::DType::F32   ? k[i]
              : type == ls::DType::F16 ? ls::f16_to_f32(kh)
                                       : ls::bf16_to_f32(kh);
      vs[i] = type == ls::DType::F32   ? v[i]
              : type == ls::DType::F16 ? ls::f16_to_f32(vh)
                                       : ls::bf16_to_f32(vh);
    }
    if (type != ls::DType::F32) {
      EXPECT_NE(ks, k);  // rounding happened
    }
    std::vector<float> scratch(group * (n + 2 * hd)), out(group * hd);
    const std::uint8_t* kb = kc.data();
    const std::uint8_t* vb = vc.data();
    const std::size_t row_bytes = stride * es;
    ls::kernels::attend_group(q.data(), group, {&kb, n, row_bytes, hd * es},
                              {&vb, n, row_bytes, hd * es}, type, n, hd, scale, scratch.data(),
                              out.data());
    // The same rows scattered over blocks of 4 positions (a paged cache) give the same bits.
    std::vector<std::vector<std::uint8_t>> kblocks, vblocks;
    std::vector<const std::uint8_t*> kptr, vptr;
    for (std::size_t p0 = 0; p0 < n; p0 += 4) {
      const std::size_t rows = std::min<std::size_t>(4, n - p0);
      kblocks.emplace_back(4 * row_bytes, 0xEE);
      vblocks.emplace_back(4 * row_bytes, 0xEE);
      std::memcpy(kblocks.back().data(), kc.data() + p0 * row_bytes, rows * row_bytes);
      std::memcpy(vblocks.back().data(), vc.data() + p0 * row_bytes, rows * row_bytes);
    }
    for (std::size_t b = 0; b < kblocks.size(); ++b) {
      kptr.push_back(kblocks[b].data());
      vptr.push_back(vblocks[b].data());
    }
    std::vector<float> paged(group * hd);
    ls::kernels::attend_group(q.data(), group, {kptr.data(), 4, row_bytes, hd * es},
                              {vptr.data(), 4, row_bytes, hd * es}, type, n, hd, scale,
                              scratch.data(), paged.data());
    EXPECT_EQ(0, std::memcmp(paged.data(), out.data(), out.size() * sizeof(float)))
        << ls::dtype_name(type);
    for (std::size_t g = 0; g < group; ++g) {
      std::vector<double> sc(n);
      double mx = -1e300, z = 0;
      for (std::size_t p = 0; p < n; ++p) {
        double d = 0;
        for (std::size_t i = 0; i < hd; ++i)
          d += static_cast<double>(q[g * hd + i]) * ks[p * stride + hd + i];
        sc[p] = d * scale;
        mx = std::max(mx, sc[p]);
      }
      for (auto& e : sc) z += (e = std::exp(e - mx));
      for (std::size_t i = 0; i < hd; ++i) {
        double want = 0;
        for (std::size_t p = 0; p < n; ++p) want += sc[p] / z * vs[p * stride + hd + i];
        EXPECT_NEAR(out[g * hd + i], want, 1e-5) << ls::dtype_name(type) << " head " << g;
      }
    }
  }
}

// The vectorized attend_group gives the plain loops' bits exactly, for every cache type, head
// sizes with and without a tail past the vector width, contexts across the position blocks, a
// paged cache, and extreme scores (softmax underflow to exact zeros).
TEST(Ops, AttendGroupEqualsPlainLoopsBitForBit) {
  int cases = 0;
  for (auto type : {ls::DType::F32, ls::DType::F16, ls::DType::BF16})
    for (std::size_t hd : {16u, 20u, 64u, 128u})
      for (std::size_t n : {1u, 7u, 16u, 17u, 100u, 333u})
        for (std::size_t group : {1u, 6u, 7u})  // 6 and 7: value sums of 4 + 2 and 4 + 3 heads
          for (float scale : {0.125f, 40.0f}) {
            const std::size_t es = ls::dtype_size(type), stride = 3 * hd, block = 5;
            const auto q = randn(group * hd, static_cast<unsigned>(hd + n));
            const auto k = randn(n * stride, static_cast<unsigned>(n));
            const auto v = randn(n * stride, static_cast<unsigned>(n + 1));
            const std::size_t row_bytes = stride * es;
            std::vector<std::vector<std::uint8_t>> kb, vb;  // blocks of 5 positions
            std::vector<const std::uint8_t*> kp, vp;
            for (std::size_t p0 = 0; p0 < n; p0 += block) {
              kb.emplace_back(block * row_bytes, 0);
              vb.emplace_back(block * row_bytes, 0);
              const std::size_t rows = std::min(block, n - p0);
              ls::kernels::store_row(&k[p0 * stride], rows * stride, type, kb.back().data());
              ls::kernels::store_row(&v[p0 * stride], rows * stride, type, vb.back().data());
            }
            for (std::size_t b = 0; b < kb.size(); ++b) {
              kp.push_back(kb[b].data());
              vp.push_back(vb[b].data());
            }
            const ls::kernels::KvRows kr{kp.data(), block, row_bytes, 2 * hd * es};
            const ls::kernels::KvRows vr{vp.data(), block, row_bytes, 2 * hd * es};
            std::vector<float> scratch(group * (n + 2 * hd)), fast(group * hd), plain(group * hd);
            ls::kernels::attend_group(q.data(), group, kr, vr, type, n, hd, scale, scratch.data(),
                                      fast.data());
            ls::kernels::attend_group_plain(q.data(), group, kr, vr, type, n, hd, scale,
                                            scratch.data(), plain.data());
            ASSERT_EQ(0, std::memcmp(fast.data(), plain.data(), fast.size() * sizeof(float)))
                << ls::dtype_name(type) << " hd " << hd << " n " << n << " group " << group
                << " scale " << scale;
            ++cases;
          }
  EXPECT_EQ(cases, 3 * 4 * 6 * 3 * 2);
}

}  // namespace

// The argmax passes against plain loops: lengths around the vector widths and Qwen's vocabulary,
// with NaN, both infinities and both zeros mixed in (ties common), and the maximum anywhere.
TEST(Ops, MaxNotNanAndFirstEqualMatchPlainLoops) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  const float specials[] = {kNaN, -kInf, kInf, 0.0f, -0.0f, 1.5f, -2.0f};
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> pick(0, 6), coin(0, 9);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  const std::size_t lengths[] = {0, 1, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 151936};
  for (int trial = 0; trial < 40; ++trial)
    for (std::size_t n : lengths) {
      if (n > 1000 && trial % 10 != 0) continue;
      const int mode = trial % 4;  // normal, few distinct specials, all NaN / -inf, one +inf
      std::vector<float> x(n);
      for (float& v : x) {
        if (mode == 0) v = coin(rng) == 0 ? specials[pick(rng)] : nd(rng);
        if (mode == 1) v = specials[pick(rng)];
        if (mode == 2) v = coin(rng) < 5 ? kNaN : -kInf;
        if (mode == 3) v = nd(rng);
      }
      if (mode == 3 && n > 0) x[static_cast<std::size_t>(trial * 7919) % n] = kInf;
      float want = -kInf;
      for (float v : x)
        if (v > want) want = v;
      const float got = ls::kernels::max_not_nan(x.data(), n);
      ASSERT_EQ(got, want) << "n " << n << " trial " << trial;  // (a zero may be -0 or +0)
      for (float v : {want, 1.5f, kInf, -kInf}) {
        std::size_t first = 0;
        while (first < n && !(x[first] == v)) ++first;
        ASSERT_EQ(ls::kernels::first_equal(x.data(), n, v), first) << "n " << n << " v " << v;
      }
    }
}

TEST(Ops, CountSpecialEqualsAPlainCount) {
  std::mt19937 rng(4);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  const float values[] = {0.0f,
                          -0.0f,
                          1.5f,
                          -3.0f,
                          kInf,
                          -kInf,
                          kNaN,
                          -kNaN,
                          std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::max()};
  for (std::size_t n : {0u, 1u, 5u, 16u, 17u, 33u, 1000u}) {
    std::vector<float> x(n);
    for (float& v : x) v = values[rng() % 10];
    std::size_t want_bad = 0, want_neg = 0;
    for (float v : x) {
      want_bad += std::isnan(v) || v == kInf ? 1 : 0;
      want_neg += v == -kInf ? 1 : 0;
    }
    std::size_t bad = 99, neg = 99;
    ls::kernels::count_special(x.data(), n, &bad, &neg);
    EXPECT_EQ(bad, want_bad) << n;
    EXPECT_EQ(neg, want_neg) << n;
  }
}

// divide_to_float against the plain division bit for bit: every exponent, both signs, zeros,
// infinities, NaN, the overflow edge, and quotients that land (almost) half-way between two
// floats (where a multiplication by 1/t would round differently).
TEST(Ops, DivideToFloatEqualsTheDivisionBitForBit) {
  const auto same = [](float a, float b) {
    std::uint32_t ua = 0, ub = 0;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    return ua == ub;
  };
  std::mt19937 rng(12);
  std::vector<float> x(4099);
  for (float& v : x) {
    const std::uint32_t bits = static_cast<std::uint32_t>(rng());
    std::memcpy(&v, &bits, 4);  // every exponent; NaN and infinities among them
  }
  x[0] = 0.0f, x[1] = -0.0f, x[2] = std::numeric_limits<float>::infinity();
  x[3] = -std::numeric_limits<float>::infinity(), x[4] = std::numeric_limits<float>::max();
  for (double t : {0.7, 0.8, 1.0 / 3.0, 1e-4, 1.5, 2.0, 123.456}) {
    std::vector<float> out(x.size());
    ls::kernels::divide_to_float(x.data(), x.size(), t, out.data());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float want = static_cast<float>(static_cast<double>(x[i]) / t);
      ASSERT_TRUE(same(out[i], want) || (std::isnan(out[i]) && std::isnan(want)))
          << "t " << t << " x " << x[i] << " got " << out[i] << " want " << want;
    }
  }
  // Half-way quotients: t chosen so that 1.7f / t is the midpoint of f and the float after it.
  int fallbacks_checked = 0;
  for (int k = 0; k < 2000; ++k) {
    const float f = std::ldexp(1.0f + static_cast<float>(rng() % 1000) / 1000.0f,
                               static_cast<int>(rng() % 40) - 20);
    const double mid = (static_cast<double>(f) + std::nextafter(f, 2.0f * f)) / 2.0;
    const double t = static_cast<double>(1.7f) / mid;
    std::vector<float> in(16, 1.7f), out(16);
    ls::kernels::divide_to_float(in.data(), in.size(), t, out.data());
    const float want = static_cast<float>(static_cast<double>(1.7f) / t);
    for (float v : out) ASSERT_TRUE(same(v, want)) << "f " << f << " t " << t;
    ++fallbacks_checked;
  }
  EXPECT_EQ(fallbacks_checked, 2000);
}
