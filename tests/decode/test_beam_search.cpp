// Beam search tests: the classic case greedy gets wrong, agreement with an exhaustive search over
// a small random tree (the independent oracle: enumerate every sequence and score it), length
// penalty, early stopping, returned sequences and the beam trace.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "decode/generate.h"
#include "scripted_source.h"

namespace ls::decode {
namespace {

using test::logits_of;
using test::ScriptedSource;

constexpr std::int32_t kEos = 0, kA = 1, kB = 2, kC = 3, kE = 5, kPrompt = 9;

std::vector<float> classic(const std::vector<std::int32_t>& t) {
  const std::size_t generated = t.size() - 1;
  if (generated == 0) return logits_of({0, 0.6, 0.4, 0, 0, 0, 0, 0, 0, 0});
  if (generated == 1 && t.back() == kA) return logits_of({0, 0, 0, 0.6, 0.4, 0, 0, 0, 0, 0});
  if (generated == 1 && t.back() == kB) return logits_of({0, 0, 0, 0, 0, 0.99, 0.01, 0, 0, 0});
  return logits_of({1, 0, 0, 0, 0, 0, 0, 0, 0, 0});
}

GenerationConfig beam_config(int beams) {
  GenerationConfig c;
  c.num_beams = beams;
  c.eos_token_id = {kEos};
  c.max_new_tokens = 10;
  return c;
}

TEST(BeamSearch, FindsTheBetterSequenceGreedyMisses) {
  ScriptedSource source(10, classic);
  const std::vector<std::int32_t> prompt = {kPrompt};
  const auto run = generate(source, prompt, beam_config(2), {});
  EXPECT_EQ(run.mode, DecodeMode::beam_search);
  ASSERT_EQ(run.sequences.size(), 1u);
  const auto& best = run.sequences[0];
  EXPECT_EQ(best.tokens, (std::vector<std::int32_t>{kB, kE, kEos}));
  EXPECT_EQ(best.finish, FinishReason::eos);
  // transformers: sum of logprobs / generated length (EOS included) ^ length_penalty.
  EXPECT_NEAR(best.score, std::log(0.4 * 0.99) / 3.0, 1e-6);
  EXPECT_NEAR(best.logprob, std::log(0.396), 1e-6);
  EXPECT_LE(source.max_seq, 3);  // sequence ids 0 .. 2 * num_beams - 1
}

TEST(BeamSearch, ReturnsSequencesBestFirst) {
  ScriptedSource source(10, classic);
  GenerationConfig c = beam_config(2);
  c.num_return_sequences = 2;
  const std::vector<std::int32_t> prompt = {kPrompt};
  const auto run = generate(source, prompt, c, {});
  ASSERT_EQ(run.sequences.size(), 2u);
  EXPECT_EQ(run.sequences[0].tokens, (std::vector<std::int32_t>{kB, kE, kEos}));
  EXPECT_EQ(run.sequences[1].tokens, (std::vector<std::int32_t>{kA, kC, kEos}));
  EXPECT_GT(run.sequences[0].score, run.sequences[1].score);
}

// Short: S then EOS (0.5 x 1). Long: L, M (0.9), EOS: 0.45 over three tokens.
std::vector<float> short_or_long(const std::vector<std::int32_t>& t) {
  if (t.size() == 1) return logits_of({0, 0.5, 0.5, 0, 0});
  if (t.size() == 2 && t[1] == 1) return logits_of({1, 0, 0, 0, 0});
  if (t.size() == 2 && t[1] == 2) return logits_of({0.1, 0, 0, 0.9, 0});
  return logits_of({1, 0, 0, 0, 0});
}

TEST(BeamSearch, LengthPenaltyDecidesBetweenShortAndLong) {
  const std::vector<std::int32_t> prompt = {4};
  GenerationConfig c = beam_config(2);
  c.length_penalty = 1.0;  // -0.693/2 = -0.347 vs -0.799/3 = -0.266: the long one wins
  {
    ScriptedSource source(5, short_or_long);
    const auto best = generate(source, prompt, c, {}).sequences[0];
    EXPECT_EQ(best.tokens, (std::vector<std::int32_t>{2, 3, 0}));
    EXPECT_NEAR(best.score, std::log(0.45) / 3.0, 1e-6);
  }
  c.length_penalty = 0.0;  // plain sums: -0.693 vs -0.799: the short one wins
  {
    ScriptedSource source(5, short_or_long);
    const auto best = generate(source, prompt, c, {}).sequences[0];
    EXPECT_EQ(best.tokens, (std::vector<std::int32_t>{1, 0}));
    EXPECT_NEAR(best.score, std::log(0.5), 1e-6);
  }
}

TEST(BeamSearch, EarlyStoppingModes) {
  // Every step: EOS 0.5, token 1 0.3, token 2 0.2; two beams. EOS hypotheses after k tokens
  // score (k log 0.3 + log 0.5) / (k + 1): -0.693 (k=0), -0.948 (k=1), -1.034 (k=2), ...
  // so the finished set is full after step 1 with worst score -0.948.
  //  - true: stop as soon as it is full (2 steps);
  //  - false: the best running sum 2 log 0.3 = -2.408 over the current length 2 is -1.204 <
  //    -0.948, no improvement possible (2 steps);
  //  - "never" (length_penalty 1 > 0): divide by max_length - prompt = 6 instead; the best
  //    running sum after step k is (k+1) log 0.3, and (k+1)(-1.204)/6 < -0.948 first at k = 4.
  auto script = [](const std::vector<std::int32_t>&) { return logits_of({0.5, 0.3, 0.2}); };
  const std::vector<std::int32_t> prompt = {1};
  auto steps_for = [&](EarlyStopping mode) {
    GenerationConfig c = beam_config(2);
    c.early_stopping = mode;
    c.max_new_tokens = 6;
    int steps = 0;
    GenerateOptions o;
    o.on_step = [&](const StepTrace&) { ++steps; };
    ScriptedSource source(3, script);
    const auto run = generate(source, prompt, c, o);
    EXPECT_EQ(run.sequences[0].tokens, (std::vector<std::int32_t>{0}));
    return steps;
  };
  EXPECT_EQ(steps_for(EarlyStopping::yes), 2);
  EXPECT_EQ(steps_for(EarlyStopping::no), 2);
  EXPECT_EQ(steps_for(EarlyStopping::never), 5);
}

// A random tree over 4 tokens + EOS; beam search with more beams than live prefixes and
// length_penalty 0 must return exactly the best sequences of an exhaustive enumeration.
TEST(BeamSearch, WideBeamEqualsExhaustiveSearch) {
  for (std::uint32_t seed = 1; seed <= 4; ++seed) {
    auto script = [seed](const std::vector<std::int32_t>& t) {
      std::uint64_t h = seed;
      for (std::int32_t x : t) h = h * 1000003ULL + static_cast<std::uint64_t>(x) + 1;
      std::mt19937_64 gen(h);
      std::vector<float> s(5);
      for (auto& v : s)
        v = static_cast<float>(std::uniform_int_distribution<int>(0, 400)(gen)) / 100.0f;
      return s;
    };
    constexpr int kMaxNew = 4;
    // Enumerate: every sequence that ends in EOS within kMaxNew tokens, or runs to kMaxNew.
    std::vector<std::pair<double, std::vector<std::int32_t>>> all;
    std::function<void(std::vector<std::int32_t>, double)> walk = [&](std::vector<std::int32_t> t,
                                                                      double sum) {
      const auto s = script(t);
      double m = *std::max_element(s.begin(), s.end()), z = 0;
      for (float v : s) z += std::exp(v - m);
      for (std::int32_t tok = 0; tok < 5; ++tok) {
        const double lp = static_cast<double>(static_cast<float>(s[tok] - (m + std::log(z))));
        auto next = t;
        next.push_back(tok);
        if (tok == 0 || static_cast<int>(next.size()) - 1 == kMaxNew) {
          all.emplace_back(sum + lp, std::vector<std::int32_t>(next.begin() + 1, next.end()));
        } else {
          walk(next, sum + lp);
        }
      }
    };
    walk({3}, 0.0);
    std::sort(all.begin(), all.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    ScriptedSource source(5, script);
    GenerationConfig c = beam_config(128);
    c.max_new_tokens = kMaxNew;
    c.length_penalty = 0.0;
    c.early_stopping = EarlyStopping::never;
    c.num_return_sequences = 5;
    const std::vector<std::int32_t> prompt = {3};
    const auto run = generate(source, prompt, c, {});
    ASSERT_EQ(run.sequences.size(), 5u);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(run.sequences[i].tokens, all[i].second) << "seed " << seed << " rank " << i;
      EXPECT_NEAR(run.sequences[i].score, all[i].first, 1e-5) << "seed " << seed << " rank " << i;
    }
  }
}

TEST(BeamSearch, TraceListsLiveFinishedAndPrunedHypotheses) {
  ScriptedSource source(10, classic);
  std::vector<StepTrace> steps;
  GenerateOptions o;
  o.on_step = [&](const StepTrace& s) { steps.push_back(s); };
  const std::vector<std::int32_t> prompt = {kPrompt};
  generate(source, prompt, beam_config(2), o);
  ASSERT_GE(steps.size(), 2u);
  // Step 0: A and B both live. Step 1: B E (0.396) and A C (0.36) live, A D (0.24) pruned.
  ASSERT_EQ(steps[0].beams.size(), 2u);
  EXPECT_EQ(steps[0].beams[0].status, "live");
  EXPECT_EQ(steps[0].beams[0].tokens, (std::vector<std::int32_t>{kA}));
  const auto& b1 = steps[1].beams;
  ASSERT_GE(b1.size(), 3u);
  EXPECT_EQ(b1[0].tokens, (std::vector<std::int32_t>{kB, kE}));
  EXPECT_EQ(b1[0].status, "live");
  EXPECT_NEAR(b1[0].score, std::log(0.396) / 2.0, 1e-6);
  EXPECT_EQ(b1[2].status, "pruned");
  EXPECT_EQ(steps[2].beams[0].status, "finished");
}

}  // namespace
}  // namespace ls::decode
