// inspect::lens_report on hand-written lens rows (no model): which layer first picks the final
// choice, where it settles, until when the runner-up led, ranks with ties, the chain's
// probability, the draw shared by every layer, and the errors. Expected values are worked out
// by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "inspect/lens.h"

namespace ls::inspect {
namespace {

constexpr std::int32_t kVocab = 4;

decode::GenerationConfig greedy() {
  decode::GenerationConfig c;
  c.do_sample = false;
  return c;
}

LensReport run(const std::vector<float>& rows, const decode::GenerationConfig& c,
               std::optional<double> draw = std::nullopt) {
  LensRequest q;
  q.rows = rows;
  q.vocab = kVocab;
  q.config = &c;
  q.draw = draw;
  q.top = 2;
  return lens_report(q);
}

TEST(LensReport, GreedyFirstChoiceSettlingAndRunnerUp) {
  // Layer 0 prefers token 0, layers 1-3 token 2 except layer 2 (token 1).
  const std::vector<float> rows = {
      3, 1, 2, 0,  // layer 0: argmax 0
      1, 0, 3, 2,  // layer 1: argmax 2
      0, 4, 3, 1,  // layer 2: argmax 1
      2, 0, 5, 1,  // layer 3: argmax 2; runner-up (greedy: raw order) token 0
  };
  const decode::GenerationConfig c = greedy();
  const LensReport r = run(rows, c);
  EXPECT_EQ(r.chosen, 2);
  ASSERT_TRUE(r.runner_up);
  EXPECT_EQ(*r.runner_up, 0);
  EXPECT_EQ(r.first_chosen_layer, 1);
  EXPECT_EQ(r.settled_layer, 3);      // layer 2 picks token 1, so only layer 3 on
  EXPECT_EQ(r.runner_up_lost_at, 0);  // token 0 above token 2 only at layer 0
  EXPECT_FALSE(r.draw);
  ASSERT_EQ(r.layers.size(), 4u);
  const std::vector<std::int32_t> picks = {0, 2, 1, 2};
  for (int l = 0; l < 4; ++l) EXPECT_EQ(r.layers[l].sampler_choice, picks[l]) << "layer " << l;
  // Layer 2: logits 0, 4, 3, 1: token 2 ranks 2, token 0 ranks 4.
  EXPECT_EQ(r.layers[2].ids, (std::vector<std::int32_t>{2, 0}));
  EXPECT_EQ(r.layers[2].ranks, (std::vector<std::int64_t>{2, 4}));
  const double lse2 = std::log(std::exp(0.0) + std::exp(4.0) + std::exp(3.0) + std::exp(1.0));
  EXPECT_NEAR(r.layers[2].logprobs[0], 3.0 - lse2, 1e-12);
  EXPECT_NEAR(r.layers[2].top[0].logprob, 4.0 - lse2, 1e-12);
  EXPECT_EQ(r.layers[2].top[0].id, 1);
  EXPECT_EQ(r.layers[2].top[1].id, 2);
  // Entropy of softmax(0, 4, 3, 1) by hand.
  double h = 0;
  for (double x : {0.0, 4.0, 3.0, 1.0}) h -= std::exp(x - lse2) * (x - lse2);
  EXPECT_NEAR(r.layers[2].entropy, h, 1e-9);
  // Greedy: the chain leaves every token; chosen_prob is the softmax probability.
  EXPECT_NEAR(r.layers[3].chosen_prob,
              std::exp(5.0 - std::log(std::exp(2.0) + 1 + std::exp(5.0) + std::exp(1.0))), 1e-9);
}

TEST(LensReport, TiesRankLowerIdFirstAndTopKRemovesTheChosen) {
  decode::GenerationConfig c;
  c.do_sample = true;
  c.temperature = 1.0;
  c.top_k = 1;
  c.sources["top_k"] = "test";
  // Layer 0: token 1 on top (top_k 1 keeps it alone); tokens 2 and 3 tie at 2, so token 3
  // ranks third (the lower id first). Layer 1: token 3 alone on top.
  const std::vector<float> rows = {0, 3, 2, 2, 0, 1, 2, 3};
  const LensReport r = run(rows, c, 0.5);
  EXPECT_EQ(r.chosen, 3);
  ASSERT_TRUE(r.draw);
  EXPECT_EQ(*r.draw, 0.5);
  EXPECT_EQ(r.layers[0].sampler_choice, 1);
  EXPECT_EQ(r.layers[0].ranks[0], 3);  // token 3 ties token 2 and comes after it
  EXPECT_EQ(r.layers[0].chosen_prob, 0.0);
  EXPECT_EQ(r.layers[1].chosen_prob, 1.0);
  EXPECT_EQ(r.first_chosen_layer, 1);
  EXPECT_EQ(r.settled_layer, 1);
  // Runner-up after top_k 1: every other token is removed; by raw logit, token 2.
  ASSERT_TRUE(r.runner_up);
  EXPECT_EQ(*r.runner_up, 2);
  EXPECT_FALSE(r.runner_up_lost_at);  // token 2 never above token 3 (layer 0: a tie)
}

TEST(LensReport, TheSameDrawAtEveryLayer) {
  // Two tokens, temperature 1, no truncation: p = softmax. With equal logits (p 0.5 each) a
  // draw of 0.25 and one of 0.75 must pick different tokens, and each pick must be the same
  // at every layer whose row is the same.
  decode::GenerationConfig c;
  c.do_sample = true;
  c.temperature = 1.0;
  const std::vector<float> rows = {0, 0, -50, -50, 0, 0, -50, -50};
  const LensReport a = run(rows, c, 0.25), b = run(rows, c, 0.75);
  EXPECT_NE(a.chosen, b.chosen);
  for (const LensReport* r : {&a, &b}) {
    EXPECT_EQ(r->layers[0].sampler_choice, r->layers[1].sampler_choice);
    EXPECT_EQ(r->first_chosen_layer, 0);
    EXPECT_NEAR(r->layers[1].chosen_prob, 0.5, 1e-9);
  }
}

TEST(LensReport, FollowsAGivenTokenAndTracksIds) {
  const std::vector<float> rows = {3, 1, 2, 0, 2, 0, 5, 1};
  const decode::GenerationConfig c = greedy();
  LensRequest q;
  q.rows = rows;
  q.vocab = kVocab;
  q.config = &c;
  q.token = 0;
  q.track = {3, 0};
  const LensReport r = lens_report(q);
  EXPECT_EQ(r.chosen, 0);
  EXPECT_EQ(r.first_chosen_layer, 0);
  EXPECT_FALSE(r.settled_layer);  // layer 1 picks token 2
  ASSERT_TRUE(r.runner_up);
  EXPECT_EQ(*r.runner_up, 2);
  EXPECT_EQ(r.runner_up_lost_at, 1);
  EXPECT_EQ(r.layers[1].ids, (std::vector<std::int32_t>{0, 2, 3}));  // chosen, runner-up, 3
  EXPECT_EQ(r.layers[1].ranks, (std::vector<std::int64_t>{2, 1, 3}));
}

TEST(LensReport, Errors) {
  const std::vector<float> rows = {0, 1, 2, 3};
  const decode::GenerationConfig c = greedy();
  LensRequest q;
  q.rows = rows;
  q.vocab = kVocab;
  q.config = &c;
  q.track = {4};
  EXPECT_THROW(lens_report(q), Error);
  q.track = {};
  q.token = -1;
  EXPECT_THROW(lens_report(q), Error);
  q.token.reset();
  q.vocab = 3;  // 4 values are not whole rows of 3
  EXPECT_THROW(lens_report(q), Error);
  q.vocab = kVocab;
  decode::GenerationConfig s;
  s.do_sample = true;
  q.config = &s;
  q.draw = 1.0;
  EXPECT_THROW(lens_report(q), Error);
  decode::GenerationConfig beams;
  beams.num_beams = 2;
  q.config = &beams;
  q.draw.reset();
  EXPECT_THROW(lens_report(q), Error);
}

}  // namespace
}  // namespace ls::inspect
