// The linear-time paths of token choice against the plain ones they replace, bit for bit: exp_sum
// against the std::exp loop, sampling against the old walk, top_p against its sort (both rules,
// ties, min_keep), min_p against the exact softmax comparison. Score vectors are shaped like a
// model's (peaked, flat, tied, scaled by a temperature, with removed tokens and far outliers).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "decode/choose.h"
#include "decode/exp_sum.h"
#include "decode/min_p.h"
#include "decode/top_mass.h"
#include "decode/top_p.h"

namespace {

using namespace ls::decode;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> make_scores(int shape, std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> s(n);
  for (float& v : s) v = normal(rng);
  switch (shape % 6) {
    case 0:  // an instruct model's: a wide spread and a few strong candidates
      for (float& v : s) v *= 2.5f;
      for (int i = 0; i < 5; ++i) s[rng() % n] += 14.0f - 2.0f * static_cast<float>(i);
      break;
    case 1:  // a random-weight model's: nearly flat
      for (float& v : s) v *= 0.4f;
      break;
    case 2:  // coarse values: ties everywhere, at the crossing too
      for (float& v : s) v = std::round(v * 4.0f) / 4.0f;
      break;
    case 3:  // a low temperature: a very wide range, outliers far below
      for (float& v : s) v = v * 2.5f / 0.05f;
      s[rng() % n] = -3000.0f;
      break;
    case 4:  // truncated already: most tokens removed, or all but a top_k's 20
      for (float& v : s)
        if (unit(rng) < (shape % 12 == 4 ? 0.7f : 0.9999f)) v = kNegInf;
      s[rng() % n] = 1.0f;
      break;
    default:  // a few distinct values only
      for (float& v : s) v = static_cast<float>(static_cast<int>(unit(rng) * 3.0f));
      break;
  }
  return s;
}

bool same(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

TEST(ExpSum, EqualsTheStdExpLoopBitForBit) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 60; ++trial) {
    const std::size_t n = trial % 10 == 0 ? 151936 : 1 + rng() % 9000;
    const auto s = make_scores(trial, n, rng);
    const float m = *std::max_element(s.begin(), s.end());
    if (m == kNegInf) continue;
    std::vector<double> running(n, -1.0);
    const double fast = exp_sum(s, m, running.data());
    ASSERT_TRUE(same(fast, exp_sum_plain(s, m))) << "trial " << trial;
    // The running totals are the plain loop's after every element.
    double run = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (s[i] != kNegInf) run += std::exp(static_cast<double>(s[i]) - static_cast<double>(m));
      ASSERT_TRUE(same(running[i], run)) << "trial " << trial << " element " << i;
    }
  }
}

// The walk choose_sample made before exp_sum: std::exp weights in id order, first cumulative
// weight above draw * total.
std::int32_t sample_plain(const std::vector<float>& s, double draw, double* lse) {
  const double m = *std::max_element(s.begin(), s.end());
  std::vector<std::pair<std::int32_t, double>> w;
  double total = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == kNegInf) continue;
    const double x = std::exp(static_cast<double>(s[i]) - m);
    if (x <= 0.0) continue;
    w.emplace_back(static_cast<std::int32_t>(i), x);
    total += x;
  }
  *lse = m + std::log(total);
  double c = 0;
  for (const auto& [id, x] : w) {
    c += x;
    if (c > draw * total) return id;
  }
  return w.back().first;
}

TEST(FastChoice, SamplingEqualsThePlainWalk) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> draw(0.0, 1.0);
  for (int trial = 0; trial < 40; ++trial) {
    const auto s = make_scores(trial, trial % 8 == 0 ? 151936 : 500 + rng() % 5000, rng);
    if (*std::max_element(s.begin(), s.end()) == kNegInf) continue;
    for (double d : {0.0, draw(rng), draw(rng), draw(rng), 0.9999999999}) {
      double lse_fast = 0, lse_plain = 0;
      EXPECT_EQ(choose_sample(s, d, &lse_fast), sample_plain(s, d, &lse_plain)) << trial;
      EXPECT_TRUE(same(lse_fast, lse_plain)) << trial;
    }
  }
}

TEST(FastChoice, TopPEqualsItsSortAndRarelyNeedsIt) {
  std::mt19937 rng(21);
  int decided = 0, asked = 0;
  for (int trial = 0; trial < 48; ++trial) {
    const std::size_t n = trial % 6 == 1 ? 151936 : 3000 + rng() % 30000;
    const auto base = make_scores(trial, n, rng);
    const double p = std::vector<double>{0.95, 0.8, 0.5, 0.1, 0.999, 1.0}[trial % 6];
    for (TopPRule rule : {TopPRule::hf, TopPRule::llama_cpp}) {
      for (int min_keep : {1, 3, 700}) {
        TopP stage(p, min_keep, rule);
        std::vector<float> fast = base, sorted = base;
        stage.apply(fast, {});
        stage.apply_sorted(sorted, {});
        ASSERT_EQ(fast, sorted) << "trial " << trial << " p " << p << " min_keep " << min_keep;
        std::vector<float> direct = base;
        ++asked;
        if (!top_mass(
                direct, p, min_keep,
                rule == TopPRule::hf ? TieOrder::higher_id_first : TieOrder::lower_id_first)) {
          ASSERT_EQ(direct, base) << "undecided, yet the scores changed: trial " << trial;
          continue;
        }
        ++decided;
        ASSERT_EQ(direct, sorted) << "trial " << trial << " p " << p << " min_keep " << min_keep;
      }
    }
  }
  // p = 1.0 (one trial in six) is always too close to call; nearly every other one is decided.
  EXPECT_GE(decided, asked * 3 / 4) << decided << " of " << asked;
}

TEST(FastChoice, MinPEqualsTheExactComparison) {
  std::mt19937 rng(33);
  for (int trial = 0; trial < 36; ++trial) {
    const auto base = make_scores(trial, 2000 + rng() % 40000, rng);
    for (double min_p : {0.0, 0.05, 0.1, 0.5, 1.0, std::exp(-1.0)}) {
      for (int min_keep : {1, 5}) {
        MinP stage(min_p, min_keep);
        std::vector<float> fast = base, exact = base;
        stage.apply(fast, {});
        stage.apply_exact(exact, {});
        ASSERT_EQ(fast, exact) << "trial " << trial << " min_p " << min_p;
      }
    }
  }
}

}  // namespace
