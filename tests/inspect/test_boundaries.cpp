// Decision boundaries against brute force (issue 49 item 1): a 64-token sampled generation over
// a 2,048-token vocabulary (logits drawn per step with a model-like spread: a few strong
// candidates, a long tail), each step's recorded draw; for every step and setting, re-choosing
// with the real chain on a fine grid over the searched range agrees with the interval (every
// grid value inside keeps the token), and just past each reported end the choice changes to the
// reported token. Greedy steps report the warpers as not applying.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "decode/distribution.h"
#include "decode/sampler.h"
#include "inspect/boundaries.h"

namespace ls::inspect {
namespace {

constexpr std::int32_t kVocab = 2048;

decode::GenerationConfig sampling() {
  decode::GenerationConfig c;
  c.do_sample = true;
  c.temperature = 0.8;
  c.top_k = 40;
  c.top_p = 0.9;
  c.min_p = 0.02;
  c.repetition_penalty = 1.2;
  for (const char* f :
       {"do_sample", "temperature", "top_k", "top_p", "min_p", "repetition_penalty"})
    c.sources[f] = "test";
  return c;
}

decode::GenerationConfig with(decode::GenerationConfig c, const std::string& f, double v) {
  if (f == "temperature") c.temperature = v;
  if (f == "top_k") c.top_k = v >= kVocab ? 0 : static_cast<int>(v);
  if (f == "top_p") c.top_p = v;
  if (f == "min_p") c.min_p = v;
  if (f == "repetition_penalty") c.repetition_penalty = v;
  return c;
}

struct Step {
  std::vector<float> raw;
  std::vector<std::int32_t> history;
  double draw;
  std::int32_t chosen;
};

std::int32_t choose(const Step& s, const decode::GenerationConfig& c) {
  decode::Sampler sampler(c, decode::decode_mode(c), kVocab, c.seed.value_or(0));
  decode::ChoiceOptions how;
  how.draw = s.draw;
  how.accept = false;
  return sampler.choose(s.raw, {s.history, 3}, how).token;
}

std::vector<Step> generation(const decode::GenerationConfig& c) {
  std::mt19937_64 rng(49);
  std::normal_distribution<float> tail(0.0f, 1.5f);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::int32_t> history = {5, 6, 7};
  std::vector<Step> steps;
  for (int k = 0; k < 64; ++k) {
    Step s;
    s.raw.resize(kVocab);
    for (float& x : s.raw) x = tail(rng);
    for (int j = 0; j < 6; ++j)  // a few strong candidates, some of them repeated tokens
      s.raw[static_cast<std::size_t>(rng() % kVocab)] += 4.0f + static_cast<float>(j);
    for (std::size_t j = 0; j + 1 < history.size() && j < 3; ++j)
      s.raw[static_cast<std::size_t>(history[history.size() - 1 - j])] += 5.0f;
    s.history = history;
    s.draw = unit(rng);
    s.chosen = choose(s, c);
    history.push_back(s.chosen);
    steps.push_back(std::move(s));
  }
  return steps;
}

// The grid a brute force re-chooses on: every integer up to 300 then log-spaced for top_k,
// 200 log-spaced values for temperature and the penalty, 200 even ones for top_p and min_p.
std::vector<double> grid(const Boundary& b) {
  std::vector<double> g;
  if (b.setting == "top_k") {
    for (double k = b.min; k <= std::min(b.max, 300.0); ++k) g.push_back(k);
    for (double k = 300; k <= b.max; k *= 1.05) g.push_back(std::floor(k));
  } else if (b.setting == "temperature" || b.setting == "repetition_penalty") {
    for (int i = 0; i <= 200; ++i) g.push_back(b.min * std::pow(b.max / b.min, i / 200.0));
  } else {
    for (int i = 0; i <= 200; ++i) g.push_back(b.min + (b.max - b.min) * i / 200.0);
  }
  return g;
}

TEST(DecisionBoundaries, AgreeWithBruteForceOnEveryStep) {
  const decode::GenerationConfig c = sampling();
  const std::vector<Step> steps = generation(c);
  int fragile = 0, finite_ends = 0, checked = 0;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Step& s = steps[k];
    const StepBoundaries sb = step_boundaries(s.raw, s.history, 3, c, s.draw, s.chosen);
    ASSERT_FALSE(sb.greedy);
    ASSERT_EQ(sb.settings.size(), 5u);
    fragile += sb.fragile;
    for (const Boundary& b : sb.settings) {
      ASSERT_TRUE(b.applies) << b.setting << ": " << b.note;
      EXPECT_LE(b.lo, b.value) << "step " << k << " " << b.setting;
      EXPECT_GE(b.hi, b.value) << "step " << k << " " << b.setting;
      for (double v : grid(b)) {
        if (v < b.lo || v > b.hi) continue;
        ++checked;
        EXPECT_EQ(choose(s, with(c, b.setting, v)), s.chosen)
            << "step " << k << " " << b.setting << " = " << v << " inside [" << b.lo << ", " << b.hi
            << "]";
      }
      // Just past each end the choice is the reported token.
      const bool integer = b.setting == "top_k";
      const auto past = [&](double end, double dir) {
        return integer ? end + dir : end + dir * std::max(1e-9, std::abs(end) * 1e-9);
      };
      if (b.hi < b.max) {
        ++finite_ends;
        ASSERT_TRUE(b.above) << b.setting;
        EXPECT_EQ(choose(s, with(c, b.setting, b.hi)), s.chosen) << b.setting << " at hi";
        const std::int32_t t = choose(s, with(c, b.setting, past(b.hi, 1)));
        EXPECT_NE(t, s.chosen) << "step " << k << " " << b.setting << " past hi " << b.hi;
        EXPECT_EQ(t, *b.above) << "step " << k << " " << b.setting;
      } else {
        EXPECT_FALSE(b.above);
      }
      if (b.lo > b.min) {
        ++finite_ends;
        ASSERT_TRUE(b.below) << b.setting;
        EXPECT_EQ(choose(s, with(c, b.setting, b.lo)), s.chosen) << b.setting << " at lo";
        const std::int32_t t = choose(s, with(c, b.setting, past(b.lo, -1)));
        EXPECT_NE(t, s.chosen) << "step " << k << " " << b.setting << " past lo " << b.lo;
        EXPECT_EQ(t, *b.below) << "step " << k << " " << b.setting;
      } else {
        EXPECT_FALSE(b.below);
      }
      const auto near = [&](double e) { return std::abs(b.value - e) <= 0.1 * b.value; };
      if (b.fragile) {
        EXPECT_TRUE((b.lo > b.min && near(integer ? b.lo - 1 : b.lo)) ||
                    (b.hi < b.max && near(integer ? b.hi + 1 : b.hi)))
            << b.setting;
      }
    }
  }
  // The data must exercise the search: many finite ends, some fragile steps, many grid points.
  EXPECT_GT(finite_ends, 100);
  EXPECT_GT(fragile, 0);
  EXPECT_GT(checked, 5000);
}

// The continuous settings (temperature, repetition_penalty) of every other step of `c`'s
// generation: "exact" in the note, every value of a 400-point grid inside the interval keeps the
// token, and just past each end the reported token is chosen. Returns the finite ends seen.
int check_continuous(const decode::GenerationConfig& c) {
  const std::vector<Step> steps = generation(c);
  int finite_ends = 0;
  for (std::size_t k = 0; k < steps.size(); k += 2) {
    const Step& s = steps[k];
    const StepBoundaries sb = step_boundaries(s.raw, s.history, 3, c, s.draw, s.chosen);
    for (const Boundary& b : sb.settings) {
      if (b.setting != "repetition_penalty" && b.setting != "temperature") continue;
      EXPECT_NE(b.note.find("exact"), std::string::npos) << b.note;
      for (int i = 0; i <= 400; ++i) {
        const double v = b.min * std::pow(b.max / b.min, i / 400.0);
        if (v < b.lo || v > b.hi) continue;
        EXPECT_EQ(choose(s, with(c, b.setting, v)), s.chosen)
            << "step " << k << " " << b.setting << " = " << v << " inside [" << b.lo << ", " << b.hi
            << "]";
      }
      for (auto [end, edge, token, dir] :
           {std::tuple{b.hi, b.max, b.above, 1.0}, std::tuple{b.lo, b.min, b.below, -1.0}}) {
        if (end == edge) continue;
        ++finite_ends;
        EXPECT_EQ(choose(s, with(c, b.setting, end)), s.chosen);
        EXPECT_TRUE(token);
        if (token) {
          // The ends are bisected to 1e-13: 1e-12 past is past the change, not a later one.
          EXPECT_EQ(choose(s, with(c, b.setting, end * (1 + dir * 1e-12))), *token)
              << "step " << k << " " << b.setting;
        }
      }
    }
  }
  return finite_ends;
}

// The other presets: llama.cpp's truncates before temperature (the bounds scale the scores the
// truncations see by T), vLLM's runs min_p before top_k and top_p.
TEST(DecisionBoundaries, OtherPresetsAgreeWithBruteForce) {
  for (const auto preset : {decode::OrderPreset::llama_cpp, decode::OrderPreset::vllm}) {
    decode::GenerationConfig c = sampling();
    c.order_preset = preset;
    EXPECT_GT(check_continuous(c), 20);
  }
}

// Chains with one truncation or none, whose kept set is every token above a threshold (the
// penalty's certificate lets that set change inside a stretch): top_p alone (also before
// temperature, llama.cpp's order), min_p alone, no truncation; and a flat distribution, where
// top_p 0.95 keeps most of the vocabulary and its cut moves at almost every penalty.
TEST(DecisionBoundaries, OneThresholdChainsAgreeWithBruteForce) {
  const auto only = [](double top_p, double min_p) {
    decode::GenerationConfig c = sampling();
    c.top_k = 0;
    c.top_p = top_p;
    c.min_p = min_p;
    return c;
  };
  EXPECT_GT(check_continuous(only(0.9, 0)), 10);
  EXPECT_GT(check_continuous(only(1, 0.05)), 10);
  EXPECT_GT(check_continuous(only(1, 0)), 10);
  decode::GenerationConfig llama = only(0.9, 0);
  llama.order_preset = decode::OrderPreset::llama_cpp;
  EXPECT_GT(check_continuous(llama), 10);
  decode::GenerationConfig flat = only(0.95, 0);
  flat.temperature = 3.0;  // flattens the model-like logits
  EXPECT_GT(check_continuous(flat), 10);
}

// A flip a 2 % scan steps over: greedy, token 1 (in the prompt, raw 10) against token 2
// (generated once, raw -10, frequency penalty f = -(20 + eps)). Under the penalty r they score
// 10 / r and -10 r + 20 + eps, so token 1 leads by 10 (r - 1)^2 / r - eps: it loses only in a
// window around r = 1 about 1.8 % wide and wins again past it. A scan from 0.99 in 2 % steps
// (0.99, 1.0098, ...) sees token 1 at every point; the interval must end where the window
// starts, the smaller root of 10 r^2 - (20 + eps) r + 10 = 0.
TEST(DecisionBoundaries, PenaltyFindsAFlipNarrowerThanAScanStep) {
  constexpr double kEps = 8.17e-4;
  decode::GenerationConfig c;
  c.do_sample = false;
  c.repetition_penalty = 0.99;
  c.frequency_penalty = -(20 + kEps);
  for (const char* f : {"do_sample", "repetition_penalty", "frequency_penalty"})
    c.sources[f] = "test";
  Step s;
  s.raw.assign(kVocab, -30.0f);
  s.raw[1] = 10.0f;
  s.raw[2] = -10.0f;
  s.history = {1, 9, 9, 2};
  s.draw = 0;
  s.chosen = choose(s, c);
  ASSERT_EQ(s.chosen, 1);
  for (double r : {0.99, 0.99 * 1.02, 0.99 * 1.02 * 1.02})
    ASSERT_EQ(choose(s, with(c, "repetition_penalty", r)), 1) << r;
  ASSERT_EQ(choose(s, with(c, "repetition_penalty", 1.0)), 2);
  const StepBoundaries sb = step_boundaries(s.raw, s.history, 3, c, std::nullopt, s.chosen);
  const Boundary& rp = sb.settings.back();
  ASSERT_EQ(rp.setting, "repetition_penalty");
  EXPECT_NE(rp.note.find("exact"), std::string::npos) << rp.note;
  const double b = 20 + kEps;
  const double window = (b - std::sqrt(b * b - 400)) / 20;
  EXPECT_NEAR(rp.hi, window, 2e-5);
  ASSERT_TRUE(rp.above);
  EXPECT_EQ(*rp.above, 2);
  EXPECT_TRUE(rp.fragile);
}

TEST(DecisionBoundaries, GreedyStepsReportTheWarpersAsNotApplying) {
  decode::GenerationConfig c = sampling();
  c.do_sample = false;
  std::vector<Step> steps = generation(c);
  const Step& s = steps[3];
  const StepBoundaries sb = step_boundaries(s.raw, s.history, 3, c, std::nullopt, s.chosen);
  EXPECT_TRUE(sb.greedy);
  for (const Boundary& b : sb.settings) {
    if (b.setting == "repetition_penalty") {
      EXPECT_TRUE(b.applies);
      for (double v : grid(b))
        if (v >= b.lo && v <= b.hi) {
          EXPECT_EQ(choose(s, with(c, b.setting, v)), s.chosen) << v;
        }
    } else {
      EXPECT_FALSE(b.applies) << b.setting;
      EXPECT_NE(b.note.find("greedy"), std::string::npos);
    }
  }
}

TEST(DecisionBoundaries, Errors) {
  const decode::GenerationConfig c = sampling();
  const std::vector<Step> steps = generation(c);
  const Step& s = steps[0];
  EXPECT_THROW(step_boundaries(s.raw, s.history, 3, c, std::nullopt, s.chosen), Error);
  EXPECT_THROW(step_boundaries(s.raw, s.history, 3, c, s.draw, (s.chosen + 1) % kVocab), Error);
  decode::GenerationConfig beams = c;
  beams.num_beams = 2;
  beams.do_sample = false;
  EXPECT_THROW(step_boundaries(s.raw, s.history, 3, beams, s.draw, s.chosen), Error);
}

}  // namespace
}  // namespace ls::inspect
