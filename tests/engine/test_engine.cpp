// The batched engine on a tiny synthetic model: a step over any mix of sequences gives each one
// exactly its logits alone (bit for bit); forks share the prefix's KV blocks, copy a shared
// block only when they write into it, and continue exactly as a sequence fed the same tokens
// from scratch; releasing returns every block; bad steps change nothing and name the problem;
// DRY's sequence breakers resolve over the real vocabulary as their definition says.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "../model/test_util.h"
#include "convert/synth.h"
#include "core/error.h"
#include "engine/engine.h"
#include "engine/lens.h"
#include "engine/loaded_model.h"
#include "engine/session.h"

namespace {

using ls::decode::Feed;

const ls::model::Model& tiny() {
  static const std::unique_ptr<ls::model::Model> m =
      ls::model::Model::load(ls::test::synth_tiny("engine_tiny", ls::DType::F32, 3));
  return *m;
}

std::vector<std::int32_t> ids(std::size_t n, std::int32_t salt) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>((i * 7919 + salt) % 150000);
  return v;
}

// A sequence fed alone, from scratch, in one Session: the reference for every engine result.
std::vector<float> alone(const std::vector<std::vector<std::int32_t>>& feeds, bool all_last) {
  ls::ThreadPool pool(1);
  ls::engine::Session s(tiny(), pool);
  std::span<const float> l;
  for (std::size_t i = 0; i < feeds.size(); ++i)
    l = s.feed(feeds[i], all_last && i + 1 == feeds.size());
  return {l.begin(), l.end()};
}

bool same(std::span<const float> a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), b.size() * sizeof(float)) == 0;
}

TEST(Engine, MixedStepEqualsEachSequenceAlone) {
  ls::ThreadPool pool(2);
  ls::engine::Engine eng(tiny(), pool, {/*max_chunk_tokens=*/5, /*kv_block_positions=*/4});
  const auto a = ids(9, 1), b = ids(3, 2), c = ids(17, 3);
  // Step 1: three prompts of different lengths (chunks of 5 split them across chunks).
  std::vector<Feed> feeds = {{0, a}, {1, b, /*all_positions=*/true}, {2, c}};
  auto out = eng.step(feeds);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(same(out[0], alone({a}, false)));
  EXPECT_TRUE(same(out[1], alone({b}, true)));
  EXPECT_TRUE(same(out[2], alone({c}, false)));
  // Step 2: one token for 0 and 2, a 6-token chunk for 1, in another order.
  const auto a2 = ids(1, 4), b2 = ids(6, 5), c2 = ids(1, 6);
  feeds = {{2, c2}, {1, b2}, {0, a2}};
  out = eng.step(feeds);
  EXPECT_TRUE(same(out[0], alone({c, c2}, false)));
  EXPECT_TRUE(same(out[1], alone({b, b2}, false)));
  EXPECT_TRUE(same(out[2], alone({a, a2}, false)));
  EXPECT_EQ(eng.length(1), 9);
}

TEST(Engine, ForksShareThePrefixAndContinueExactly) {
  ls::ThreadPool pool(1);
  ls::engine::Engine eng(tiny(), pool, {64, 16});
  const auto prompt = ids(1000, 7);  // 62.5 blocks: the last one is half full
  eng.feed(0, prompt);
  const auto one = eng.kv_usage();
  EXPECT_EQ(one.blocks_in_use, 63u);
  for (int s = 1; s < 4; ++s) eng.fork(0, s);
  EXPECT_EQ(eng.kv_usage().blocks_in_use, 63u) << "forks must share, not copy";
  EXPECT_EQ(eng.kv_usage().bytes_in_use, one.bytes_in_use);
  // Each continues with its own token: the shared half-full block is copied by the three that
  // write into it first; the fourth (the last owner) writes in place.
  std::vector<std::vector<std::int32_t>> next;
  std::vector<Feed> feeds;
  for (int s = 0; s < 4; ++s) next.push_back({static_cast<std::int32_t>(100 + s)});
  for (int s = 0; s < 4; ++s) feeds.push_back({s, next[static_cast<std::size_t>(s)]});
  const auto out = eng.step(feeds);
  EXPECT_EQ(eng.kv_usage().blocks_in_use, 63u + 3u);
  for (int s = 0; s < 4; ++s)
    EXPECT_TRUE(same(out[static_cast<std::size_t>(s)],
                     alone({prompt, next[static_cast<std::size_t>(s)]}, false)))
        << "fork " << s;
  // A fork of a fork, then releases: blocks come back when their last owner goes.
  eng.fork(3, 5);
  eng.release(0);
  eng.release(1);
  eng.release(2);
  EXPECT_EQ(eng.kv_usage().blocks_in_use, 63u);  // 62 shared full blocks + 3's last (shared by 5)
  eng.release(3);
  eng.release(5);
  EXPECT_EQ(eng.kv_usage().blocks_in_use, 0u);
  EXPECT_EQ(eng.kv_usage().sequences, 0u);
}

TEST(Engine, ForkOverwritesTheTargetAndReleasedSequencesStartEmpty) {
  ls::ThreadPool pool(1);
  ls::engine::Engine eng(tiny(), pool, {64, 4});
  const auto a = ids(6, 1), b = ids(3, 2);
  eng.feed(0, a);
  eng.feed(1, b);
  eng.fork(0, 1);  // 1 now continues a; its old blocks are freed
  EXPECT_EQ(eng.length(1), 6);
  EXPECT_EQ(eng.kv_usage().blocks_in_use, 2u);
  const auto t = ids(1, 9);
  const auto got = eng.feed(1, t);
  EXPECT_TRUE(same(got, alone({a, t}, false)));
  eng.release(1);
  const auto fresh = eng.feed(1, b);
  EXPECT_TRUE(same(fresh, alone({b}, false)));
}

TEST(Engine, BadStepsChangeNothingAndNameTheProblem) {
  ls::ThreadPool pool(1);
  ls::engine::Engine eng(tiny(), pool);
  const auto a = ids(4, 1);
  eng.feed(0, a);
  const std::vector<std::int32_t> bad = {1, 151936};
  std::vector<Feed> feeds = {{0, a}, {1, bad}};
  LS_EXPECT_ERROR(eng.step(feeds), "token id 151936 is out of range");
  EXPECT_EQ(eng.length(0), 4);
  feeds = {{0, a}, {0, a}};
  LS_EXPECT_ERROR(eng.step(feeds), "sequence 0 is fed twice in one step");
  EXPECT_EQ(eng.length(0), 4);
  EXPECT_EQ(eng.context_limit(), tiny().config().max_position_embeddings);
}

}  // namespace

// The lens' last row is the model's logits bit for bit, also when the prompt spans several
// forward chunks (the residuals are captured from the chunk holding the last token).
TEST(Lens, LastRowIsTheLogitsAcrossChunks) {
  ls::ThreadPool pool(2);
  const auto p = ids(150, 11);  // > EngineOptions' 128-token chunk
  const std::vector<float> rows = ls::engine::lens_logits(tiny(), pool, p);
  const auto V = static_cast<std::size_t>(tiny().config().vocab_size);
  const auto L = static_cast<std::size_t>(tiny().config().num_hidden_layers);
  ASSERT_EQ(rows.size(), (L + 1) * V);
  EXPECT_TRUE(same(std::span<const float>(rows).subspan(L * V, V), alone({p}, false)));
  // Row 0 depends on the last token only (its embedding): the same for another prefix.
  auto q = ids(3, 12);
  q.push_back(p.back());
  const std::vector<float> other = ls::engine::lens_logits(tiny(), pool, q);
  EXPECT_TRUE(same(std::span<const float>(other).first(V),
                   std::vector<float>(rows.begin(), rows.begin() + static_cast<long>(V))));
  EXPECT_FALSE(same(std::span<const float>(other).subspan(V, V),
                    std::vector<float>(rows.begin() + static_cast<long>(V),
                                       rows.begin() + static_cast<long>(2 * V))));
}

// Every attribution variant equals the edited prompt run alone (bit for bit), for removal and
// replacement, with variants in several batched groups.
TEST(Attribution, EachVariantEqualsTheEditedPromptAlone) {
  ls::ThreadPool pool(2);
  ls::engine::Engine eng(tiny(), pool, {/*max_chunk_tokens=*/5, /*kv_block_positions=*/4});
  const auto p = ids(11, 21);
  const auto lp = [](std::span<const float> l, std::int32_t t) {
    double m = -1e300, s = 0;
    for (float x : l) m = std::max(m, static_cast<double>(x));
    for (float x : l) s += std::exp(static_cast<double>(x) - m);
    return static_cast<double>(l[static_cast<std::size_t>(t)]) - m - std::log(s);
  };
  for (const std::optional<std::int32_t> replacement :
       {std::optional<std::int32_t>(), std::optional<std::int32_t>(77)}) {
    ls::engine::AttributionRequest q;
    q.prompt = p;
    q.target = 4242;
    q.replacement = replacement;
    q.group = 4;
    const ls::engine::Attribution a = ls::engine::attribute(eng, q);
    ASSERT_EQ(a.logprobs.size(), p.size());
    EXPECT_NEAR(a.base_logprob, lp(alone({p}, false), 4242), 1e-9);
    for (std::size_t i = 0; i < p.size(); ++i) {
      std::vector<std::int32_t> edited(p);
      if (replacement)
        edited[i] = *replacement;
      else
        edited.erase(edited.begin() + static_cast<long>(i));
      EXPECT_NEAR(a.logprobs[i], lp(alone({edited}, false), 4242), 1e-9) << "position " << i;
    }
    EXPECT_EQ(eng.kv_usage().sequences, 0u);  // every variant released
  }
  ls::engine::AttributionRequest q;
  q.prompt = p;
  q.target = 1;
  q.max_prompt = 10;
  EXPECT_THROW(ls::engine::attribute(eng, q), ls::Error);
}

// DRY's breakers resolved against the real Qwen vocabulary (the oracle's Qwen tokenizer.json),
// checked against the definition rather than the scan: a head with an empty tail is a token
// whose text holds a breaker; one with a tail ends with the breaker's first bytes, the tail
// spelling the rest; and no token outside the table does either.
TEST(DryBreakers, RealVocabularyMatchesTheDefinition) {
  const auto lm = ls::engine::LoadedModel::tokenizer_only(LS_QWEN_TOKENIZER_DIR);
  if (!lm.tokenizer()) GTEST_SKIP() << "no tokenizer.json in " << LS_QWEN_TOKENIZER_DIR;
  const ls::tok::Tokenizer& tok = *lm.tokenizer();
  const std::vector<std::string> breakers = {"\n\n", ":", "```", ""};
  const auto table = lm.dry_breakers(breakers, "test");
  EXPECT_EQ(table, lm.dry_breakers(breakers, "test"));  // cached
  auto encode = [&](std::string_view t) { return tok.encode(t, /*split_special=*/true); };
  std::size_t partial = 0;
  for (std::int32_t id = 0; id < tok.size(); ++id) {
    const std::string text = tok.token_bytes(id);
    std::vector<std::vector<std::int32_t>> want;
    for (const std::string& b : breakers) {
      if (b.empty()) continue;
      if (text.find(b) != std::string::npos) {
        want.push_back({});
        continue;
      }
      for (std::size_t i = 1; i < b.size(); ++i)
        if (text.size() >= i && text.compare(text.size() - i, i, b, 0, i) == 0)
          want.push_back(encode(std::string_view(b).substr(i)));
    }
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    const auto it = table->heads.find(id);
    auto got = it == table->heads.end() ? decltype(want){} : it->second;
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, want) << "token " << id << " '" << text << "'";
    for (const auto& t : got) partial += !t.empty();
  }
  EXPECT_GT(partial, 100u);  // "\n", "`", "``" and every token ending with them
  ls::decode::GenerationConfig c;
  c.dry_multiplier = 0.8;
  lm.resolve_dry(c);
  ASSERT_NE(c.dry_breakers, nullptr);
  EXPECT_EQ(c.dry_breakers->strings, c.dry_sequence_breakers);
  const auto nl = tok.encode("\n");
  ASSERT_EQ(nl.size(), 1u);
  EXPECT_EQ(c.dry_breakers->heads.at(nl[0]), (std::vector<std::vector<std::int32_t>>{{}}));
}
