// GenerationStore: rows are kept under the byte budget, the least recently used generation is
// dropped first (never the one asking), a generation larger than the budget keeps a prefix of
// its steps, and a dropped generation is gone from find() with its rows freed.
#include <gtest/gtest.h>

#include <vector>

#include "server/generation_store.h"

namespace ls::server {
namespace {

constexpr std::size_t kRow = 4 * sizeof(float);  // a 4-token vocabulary

std::vector<float> row(float v) {
  return {v, v + 1, v + 2, v + 3};
}

TEST(GenerationStore, KeepsStepsAndSnapshots) {
  GenerationStore store(10 * kRow);
  auto g = store.create({1, 2, 3}, {});
  g->add_step(2, 0.25, row(0));
  g->add_step(1, std::nullopt, row(10));
  g->finish();
  const auto s = g->snapshot();
  EXPECT_EQ(s.prompt, (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(s.tokens, (std::vector<std::int32_t>{2, 1}));
  ASSERT_EQ(s.draws.size(), 2u);
  EXPECT_EQ(s.draws[0], 0.25);
  EXPECT_FALSE(s.draws[1].has_value());
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(*s.rows[1], row(10));
  EXPECT_TRUE(s.finished);
  EXPECT_EQ(store.bytes(), 2 * kRow);
  EXPECT_EQ(store.find(g->id()), g);
  EXPECT_EQ(store.find("gen-none"), nullptr);
}

TEST(GenerationStore, LargerThanTheBudgetKeepsAPrefix) {
  GenerationStore store(3 * kRow);
  auto g = store.create({1}, {});
  for (int k = 0; k < 5; ++k) g->add_step(k % 4, std::nullopt, row(static_cast<float>(k)));
  const auto s = g->snapshot();
  EXPECT_EQ(s.tokens.size(), 5u);  // every token and draw, logits of the first 3 only
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(*s.rows[2], row(2));
  EXPECT_EQ(store.bytes(), 3 * kRow);
}

TEST(GenerationStore, DropsTheLeastRecentlyUsed) {
  GenerationStore store(4 * kRow);
  auto a = store.create({1}, {});
  auto b = store.create({1}, {});
  a->add_step(0, std::nullopt, row(0));
  a->add_step(0, std::nullopt, row(0));
  b->add_step(0, std::nullopt, row(0));
  b->add_step(0, std::nullopt, row(0));
  ASSERT_NE(store.find(a->id()), nullptr);  // a is now the most recently used
  auto c = store.create({1}, {});
  c->add_step(0, std::nullopt, row(0));  // no room: b goes, not a
  EXPECT_EQ(store.find(b->id()), nullptr);
  EXPECT_TRUE(b->snapshot().rows.empty());
  EXPECT_NE(store.find(a->id()), nullptr);
  EXPECT_EQ(store.bytes(), 3 * kRow);
  // A dropped generation keeps no more rows, and counts nothing.
  b->add_step(0, std::nullopt, row(0));
  EXPECT_TRUE(b->snapshot().rows.empty());
  EXPECT_EQ(store.bytes(), 3 * kRow);
}

TEST(GenerationStore, ZeroBudgetKeepsTokensOnly) {
  GenerationStore store(0);
  auto g = store.create({1}, {});
  g->add_step(3, 0.5, row(0));
  EXPECT_TRUE(g->snapshot().rows.empty());
  EXPECT_EQ(g->snapshot().tokens.size(), 1u);
}

}  // namespace
}  // namespace ls::server
