// ids_by_score_desc: the one-pass limit-1 path (greedy decoding) agrees with the full sort on
// ties, NaN, infinities and all-excluded inputs; ranks_of (many ids in one pass) equals
// rank_of for each, and rank_of is the place in the full order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "decode/distribution.h"

namespace {

using ls::decode::ids_by_score_desc;

TEST(IdsByScore, LimitOneIsTheFirstOfTheFullOrder) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  std::mt19937 rng(7);
  // Few distinct values so that ties are common; NaN and both infinities mixed in.
  const float values[] = {-kInf, kNaN, -1.5f, -0.0f, 0.0f, 0.25f, 3.0f, kInf};
  // Short inputs, and longer ones whose best lies past the vector passes' first widths.
  std::uniform_int_distribution<int> pick(0, 7), len(0, 9), long_len(10, 80);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<float> s(static_cast<std::size_t>(trial % 2 == 0 ? len(rng) : long_len(rng)));
    const int top = pick(rng);  // values above this index are left out, so some inputs have none
    for (float& v : s) v = values[std::min(pick(rng), top)];
    for (bool finite_only : {false, true}) {
      const auto all = ids_by_score_desc(s, -1, finite_only);
      const auto one = ids_by_score_desc(s, 1, finite_only);
      ASSERT_EQ(one.size(), all.empty() ? 0u : 1u) << "trial " << trial;
      if (!all.empty()) {
        EXPECT_EQ(one[0], all[0]) << "trial " << trial;
      }
    }
  }
}

TEST(IdsByScore, LimitOneTakesTheLowestIdOnTiesAndSkipsNegativeInfinity) {
  const float ninf = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(ids_by_score_desc(std::vector<float>{1, 2, 2, 0}, 1, false),
            (std::vector<std::int32_t>{1}));
  EXPECT_EQ(ids_by_score_desc(std::vector<float>{ninf, ninf}, 1, false),
            (std::vector<std::int32_t>{0}));
  EXPECT_TRUE(ids_by_score_desc(std::vector<float>{ninf, ninf}, 1, true).empty());
  EXPECT_EQ(ids_by_score_desc(std::vector<float>{std::nanf(""), -3.0f}, 1, false),
            (std::vector<std::int32_t>{1}));
}

TEST(RanksOf, EachEqualsRankOfAndThePlaceInTheFullOrder) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // Few distinct values so that ties are common, -inf (removed tokens) among them.
  const float values[] = {-kInf, -1.5f, -0.0f, 0.25f, 3.0f};
  std::mt19937 rng(46);
  std::uniform_int_distribution<int> pick(0, 4), len(1, 60);
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<float> s(static_cast<std::size_t>(len(rng)));
    for (float& v : s) v = values[pick(rng)];
    const auto order = ids_by_score_desc(s, -1, false);
    std::vector<std::int32_t> ids;
    std::uniform_int_distribution<std::int32_t> id(0, static_cast<std::int32_t>(s.size()) - 1);
    for (int k = 0; k < 1 + trial % 7; ++k) ids.push_back(id(rng));  // repeats allowed
    const auto ranks = ls::decode::ranks_of(s, ids);
    ASSERT_EQ(ranks.size(), ids.size());
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const auto place = std::find(order.begin(), order.end(), ids[k]) - order.begin();
      EXPECT_EQ(ls::decode::rank_of(s, ids[k]), place + 1) << "trial " << trial;
      EXPECT_EQ(ranks[k], place + 1) << "trial " << trial << " id " << ids[k];
    }
  }
}

}  // namespace
