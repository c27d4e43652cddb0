// The server's prefix cache on a tiny engine: a cached prefix copied into a new sequence and cut
// to the shared length continues exactly as the prompt fed from scratch (bit for bit); entries
// stay within their position budget, least recently used first out; a longer prompt replaces
// the entry it extends; and every block goes back to the pool when the cache goes.
#include <gtest/gtest.h>

#include <cstring>

#include "../model/test_util.h"
#include "engine/engine.h"
#include "server/prefix_cache.h"

namespace ls::server {
namespace {

const model::Model& tiny() {
  static const std::unique_ptr<model::Model> m =
      model::Model::load(test::synth_tiny("prefix_tiny", DType::F32, 5));
  return *m;
}

std::vector<std::int32_t> ids(std::size_t n, std::int32_t salt) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>((i * 7919 + salt) % 150000);
  return v;
}

std::vector<float> last_logits(engine::Engine& e, int seq, std::span<const std::int32_t> tokens) {
  const auto l = e.feed(seq, tokens);
  return {l.begin(), l.end()};
}

TEST(PrefixCache, ReusedPrefixContinuesBitForBit) {
  ThreadPool pool(1);
  engine::Engine e(tiny(), pool);
  PrefixCache cache(e, 1000);
  // Prompt A is computed and remembered; prompt B shares its first 40 tokens.
  auto a = ids(56, 1);
  auto b = a;
  b.resize(40);
  const auto tail = ids(9, 2);
  b.insert(b.end(), tail.begin(), tail.end());
  last_logits(e, 0, a);
  cache.remember(a, 0);
  e.release(0);

  const PrefixCache::Match m = cache.find(b, b.size() - 1);
  ASSERT_EQ(40u, m.tokens);
  e.fork(m.seq, 1);
  e.truncate(1, 40);
  ASSERT_EQ(40, e.length(1));
  const auto reused = last_logits(e, 1, std::span(b).subspan(40));
  const auto scratch = last_logits(e, 2, b);
  ASSERT_EQ(reused.size(), scratch.size());
  EXPECT_EQ(0, std::memcmp(reused.data(), scratch.data(), reused.size() * sizeof(float)))
      << "a prefix copied from the cache must give the same logits as the prompt from scratch";
  // The entry itself is untouched by the copy's writes (copy-on-write of the shared block).
  e.fork(cache.find(a, a.size() - 1).seq, 3);
  EXPECT_EQ(56, e.length(3));
  e.truncate(3, 55);
  const auto again = last_logits(e, 3, std::span(a).subspan(55));
  const auto a_scratch = last_logits(e, 4, a);
  EXPECT_EQ(0, std::memcmp(again.data(), a_scratch.data(), again.size() * sizeof(float)));
}

TEST(PrefixCache, BudgetEvictsLeastRecentlyUsedAndLongerReplaces) {
  ThreadPool pool(1);
  engine::Engine e(tiny(), pool);
  {
    PrefixCache cache(e, 100);
    const auto p1 = ids(40, 11), p2 = ids(40, 12), p3 = ids(40, 13);
    for (const auto* p : {&p1, &p2}) {
      last_logits(e, 0, *p);
      cache.remember(*p, 0);
      e.release(0);
    }
    EXPECT_EQ(2u, cache.entries());
    EXPECT_EQ(80u, cache.positions());
    cache.find(p1, 39);  // p1 is now the most recently used
    last_logits(e, 0, p3);
    cache.remember(p3, 0);
    e.release(0);
    EXPECT_LE(cache.positions(), 100u);
    EXPECT_EQ(39u, cache.find(p1, 39).tokens) << "the recently used entry must survive";
    EXPECT_EQ(0u, cache.find(p2, 39).tokens) << "the least recently used entry goes first";
    // A longer prompt that extends p3 replaces its entry instead of adding one.
    auto longer = p3;
    const auto more = ids(10, 14);
    longer.insert(longer.end(), more.begin(), more.end());
    last_logits(e, 0, longer);
    cache.remember(longer, 0);
    e.release(0);
    EXPECT_EQ(2u, cache.entries());
    EXPECT_EQ(49u, cache.find(longer, 49).tokens);
    // A prompt longer than the whole budget is not kept.
    const auto huge = ids(120, 15);
    last_logits(e, 0, huge);
    cache.remember(huge, 0);
    e.release(0);
    EXPECT_EQ(0u, cache.find(huge, 119).tokens);
  }
  EXPECT_EQ(0u, e.kv_usage().blocks_in_use) << "the cache must give every block back";
}

TEST(PrefixCache, ZeroBudgetKeepsNothing) {
  ThreadPool pool(1);
  engine::Engine e(tiny(), pool);
  PrefixCache cache(e, 0);
  const auto p = ids(40, 21);
  last_logits(e, 0, p);
  cache.remember(p, 0);
  EXPECT_EQ(0u, cache.entries());
  EXPECT_EQ(0u, cache.find(p, 39).tokens);
}

TEST(PrefixCache, CommonPrefix) {
  const std::vector<std::int32_t> a{1, 2, 3, 4}, b{1, 2, 9}, c{};
  EXPECT_EQ(2u, common_prefix(a, b));
  EXPECT_EQ(0u, common_prefix(a, c));
  EXPECT_EQ(4u, common_prefix(a, a));
}

}  // namespace
}  // namespace ls::server
