// DRY and mirostat edge cases beside the numpy reference test: breaker resolution over a small
// vocabulary, the breaker cap and the single-token exemption, the exponent clamp, mirostat's
// floor of one token, its mu through Sampler::choose (accept on and off), reset, the chain
// mirostat builds in each preset, and the refusals (beam search, missing breaker table, tools
// that re-run a later step alone).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "core/error.h"
#include "decode/dry.h"
#include "decode/generation_config.h"
#include "decode/mirostat.h"
#include "decode/order.h"
#include "decode/sampler.h"

namespace ls::decode {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Token texts of a made-up vocabulary, and an encoder that knows the rests the tests need.
const std::vector<std::string> kTexts = {"a", "b:", ":", "x\n", "ab", "q", "z", "b"};
DryBreakers resolve(const std::vector<std::string>& breakers) {
  const std::map<std::string, std::vector<std::int32_t>, std::less<>> enc = {
      {"b:", {1}}, {":", {2}}, {"b", {7}}};
  return resolve_dry_breakers(
      breakers, static_cast<std::int32_t>(kTexts.size()),
      [](std::int32_t id) { return kTexts[static_cast<std::size_t>(id)]; },
      [&](std::string_view t) {
        const auto it = enc.find(t);
        return it == enc.end() ? std::vector<std::int32_t>{} : it->second;
      });
}

TEST(DryBreakers, WholeAndPartialMatchesAsLlamaCpp) {
  const DryBreakers d = resolve({":", "ab:", "", "qb"});
  // ":" is inside "b:" and ":"; "ab:" starts at the end of "a" (rest "b:") and of "ab" (rest
  // ":"); "qb" starts at the end of "q" (rest "b"); the empty breaker is skipped.
  using Tails = std::vector<std::vector<std::int32_t>>;
  std::map<std::int32_t, Tails> got(d.heads.begin(), d.heads.end());
  const std::map<std::int32_t, Tails> want = {
      {0, {{1}}}, {1, {{}}}, {2, {{}}}, {4, {{2}}}, {5, {{7}}}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(d.strings, (std::vector<std::string>{":", "ab:", "", "qb"}));
}

TEST(DryBreakers, LongBreakersAreCutTo40Bytes) {
  // Cut to 40 "y"s the breaker is inside a 41-"y" token's text; whole it would not be.
  const std::vector<std::string> texts = {std::string(41, 'y'), "n"};
  const std::vector<std::string> breakers = {std::string(40, 'y') + "n"};
  const DryBreakers d = resolve_dry_breakers(
      breakers, 2, [&](std::int32_t id) { return texts[std::size_t(id)]; },
      [](std::string_view) { return std::vector<std::int32_t>{1}; });
  ASSERT_EQ(d.heads.count(0), 1u);
  EXPECT_EQ(d.heads.at(0), (std::vector<std::vector<std::int32_t>>{{}}));
}

TEST(Dry, PenalisesTheTokenThatWouldExtendARepeat) {
  // 3 4 5 6 3 4 5: the next 6 would make "3 4 5 6" twice: a run of 3 >= allowed 2,
  // penalty 1.0 * 2^(3 - 2) = 2.
  Dry dry(1.0, 2.0, 2, -1, nullptr);
  std::vector<float> s(8, 0.0f);
  const std::vector<std::int32_t> toks = {3, 4, 5, 6, 3, 4, 5};
  dry.apply(s, {toks, 0});
  EXPECT_FLOAT_EQ(s[6], -2.0f);
  for (int i : {0, 1, 2, 3, 4, 5, 7}) EXPECT_EQ(s[static_cast<std::size_t>(i)], 0.0f) << i;
  // Only the last 3 tokens scanned: "3 4 5" never repeats there.
  Dry short_window(1.0, 2.0, 2, 3, nullptr);
  std::vector<float> t(8, 0.0f);
  short_window.apply(t, {toks, 0});
  EXPECT_EQ(t[6], 0.0f);
}

TEST(Dry, BreakersCapRunsAndExemptTheirOwnTokens) {
  auto breakers = std::make_shared<const DryBreakers>(resolve({":"}));
  // 6 7 2(:) 6 7 | 2 6 7: the ":" three tokens back caps every run at 2.
  const std::vector<std::int32_t> toks = {6, 7, 0, 6, 7, 2, 6, 7};
  Dry dry(1.0, 2.0, 1, -1, breakers);
  std::vector<float> s(8, 0.0f);
  dry.apply(s, {toks, 0});
  // "6 7" ended twice before; what followed was 0 (run 2: 1 * 2^1) and 2 (run 2, but ":" is a
  // breaker token: exempt).
  EXPECT_FLOAT_EQ(s[0], -2.0f);
  EXPECT_EQ(s[2], 0.0f);
  // A breaker as the last token: nothing may repeat across it.
  const std::vector<std::int32_t> ends = {6, 7, 6, 7, 2};
  std::vector<float> u(8, 0.0f);
  Dry(1.0, 2.0, 1, -1, breakers).apply(u, {ends, 0});
  for (float x : u) EXPECT_EQ(x, 0.0f);
}

TEST(Dry, ExponentIsClampedBelowFloatOverflow) {
  std::vector<std::int32_t> toks;
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 40; ++i) toks.push_back(i % 7 + 1);  // long repeats
  std::vector<float> s(8, 0.0f);
  Dry(1.0, 1e6, 1, -1, nullptr).apply(s, {toks, 0});
  for (float x : s) EXPECT_TRUE(std::isfinite(x) || x == kNegInf);
  EXPECT_LT(*std::min_element(s.begin(), s.end()), -1e30f);
}

// The expectations llama.cpp's tests/test-sampling.cpp states for its DRY sampler (logits
// log(p), DRY, then softmax, listed best first), with token breakers given directly.
TEST(Dry, AgreesWithLlamaCppsOwnExpectations) {
  struct Case {
    std::vector<float> probs;
    std::vector<std::int32_t> history;
    std::vector<float> want;
    double multiplier, base;
    int allowed, last_n;
    std::vector<std::int32_t> single_token_breakers;
  };
  const std::vector<Case> cases = {
      {{0.25f, 0.25f, 0.25f, 0.25f}, {0, 1}, {0.25f, 0.25f, 0.25f, 0.25f}, 1.0, 1.1, 2, 4, {}},
      {{0.25f, 0.25f, 0.25f, 0.25f},
       {0, 1, 2, 0, 1},
       {0.296923f, 0.296923f, 0.296923f, 0.109232f},
       1.0,
       1.1,
       2,
       5,
       {}},
      {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f},
       {0, 1, 3, 4, 0, 1},
       {0.2f, 0.2f, 0.2f, 0.2f, 0.2f},
       1.0,
       1.1,
       2,
       6,
       {3}},
      {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f},
       {0, 1, 2, 0, 1},
       {0.241818f, 0.241818f, 0.241818f, 0.241818f, 0.032727f},
       2.0,
       1.1,
       2,
       5,
       {}},
      {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f},
       {0, 1, 2, 3, 4, 0, 1},
       {0.2f, 0.2f, 0.2f, 0.2f, 0.2f},
       1.0,
       1.1,
       4,
       7,
       {}},
  };
  for (const Case& c : cases) {
    auto breakers = std::make_shared<DryBreakers>();
    for (std::int32_t t : c.single_token_breakers) breakers->heads[t].push_back({});
    std::vector<float> s;
    for (float p : c.probs) s.push_back(std::log(p));
    Dry(c.multiplier, c.base, c.allowed, c.last_n, breakers).apply(s, {c.history, 0});
    double total = 0;
    for (float x : s) total += std::exp(static_cast<double>(x));
    std::vector<double> p;
    for (float x : s) p.push_back(std::exp(static_cast<double>(x)) / total);
    std::sort(p.rbegin(), p.rend());  // llama.cpp's tester lists them best first
    for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], c.want[i], 1e-5) << i;
  }
}

TEST(Mirostat, V2KeepsTheBestTokenEvenAboveMu) {
  Mirostat m(2, 0.0, 0.1, 4);  // mu = 0: no token's surprise is <= 0 unless p = 1
  std::vector<float> s = {1.0f, 3.0f, 3.0f, 0.0f};
  m.apply(s, {});
  EXPECT_EQ(s, (std::vector<float>{kNegInf, 3.0f, kNegInf, kNegInf}));  // lower id of the tie
  // Equal scores leave together: with mu between their surprise and the next, both stay.
  Mirostat wide(2, 0.75, 0.1, 4);  // mu = 1.5 bits; p(3.0) = 0.44 each: 1.18 bits
  std::vector<float> t = {1.0f, 3.0f, 3.0f, 0.0f};
  wide.apply(t, {});
  EXPECT_EQ(t, (std::vector<float>{kNegInf, 3.0f, 3.0f, kNegInf}));
}

TEST(Mirostat, AcceptMovesMuByTheChosenTokensSurprise) {
  Mirostat m(2, 2.0, 0.5, 4);
  EXPECT_DOUBLE_EQ(m.mu(), 4.0);
  std::vector<float> s = {0.0f, 0.0f, 0.0f, 0.0f};  // 2 bits each, all kept
  m.apply(s, {});
  m.accept(1);
  EXPECT_NEAR(m.mu(), 4.0 - 0.5 * (2.0 - 2.0), 1e-12);
  std::vector<float> t = {std::log(3.0f), 0.0f, kNegInf, kNegInf};  // p = 3/4, 1/4
  m.apply(t, {});
  m.accept(1);  // surprise 2 bits
  EXPECT_NEAR(m.mu(), 4.0, 1e-6);
  m.apply(t, {});
  m.accept(0);  // surprise log2(4/3)
  EXPECT_NEAR(m.mu(), 4.0 - 0.5 * (std::log2(4.0 / 3.0) - 2.0), 1e-6);
  const double before = m.mu();
  m.apply(t, {});
  m.accept(3);  // removed: a forced token leaves mu alone
  EXPECT_EQ(m.mu(), before);
  EXPECT_NE(m.describe().find("mu="), std::string::npos);
  m.reset();
  EXPECT_DOUBLE_EQ(m.mu(), 4.0);
}

TEST(Mirostat, V1KFromTheZipfFit) {
  // Exact Zipf p_i ~ 1 / i^s: the fit gives s back.
  std::vector<double> p;
  double total = 0;
  for (int i = 1; i <= 1000; ++i) p.push_back(std::pow(i, -1.2)), total += p.back();
  for (double& x : p) x /= total;
  const double e = 0.2, mu = 6.0;
  const double k = std::pow(e * std::pow(2.0, mu) / (1 - std::pow(1000.0, -e)), 1 / 1.2);
  EXPECT_EQ(Mirostat::v1_k(p, 1000, mu), static_cast<std::int64_t>(k));
  EXPECT_EQ(Mirostat::v1_k(p, 1000, 1e6), 1);  // beyond int: 1, as llama.cpp on x86-64
}

GenerationConfig sampling(int mirostat) {
  GenerationConfig c;
  c.do_sample = true;
  c.temperature = 0.8;
  c.top_k = 3;
  c.top_p = 0.5;
  c.min_p = 0.1;
  c.repetition_penalty = 1.2;
  c.dynatemp_range = 0.3;
  c.mirostat = mirostat;
  return c;
}

TEST(Mirostat, ReplacesTheTruncationsInEveryPreset) {
  GenerationConfig c = sampling(2);
  auto names = [&] { return build_chain(c, {16, true, 1}).names(); };
  EXPECT_EQ(names(), (std::vector<std::string>{"repetition_penalty", "temperature", "mirostat"}));
  c.order_preset = OrderPreset::vllm;
  EXPECT_EQ(names(), (std::vector<std::string>{"repetition_penalty", "temperature", "mirostat"}));
  c.order_preset = OrderPreset::llama_cpp;  // llama.cpp: logit bias, temperature, mirostat
  c.logit_bias[3] = 1.0;
  EXPECT_EQ(names(), (std::vector<std::string>{"sequence_bias", "temperature", "mirostat"}));
  // A plain temperature: dynamic temperature is not part of llama.cpp's mirostat chain.
  EXPECT_EQ(build_chain(c, {16, true, 1}).stages()[1]->describe(), "temperature(t=0.8)");
  // Greedy: no warpers, so no mirostat, and the processors as without it.
  EXPECT_EQ(build_chain(c, {16, false, 1}).names(),
            (std::vector<std::string>{"sequence_bias", "repetition_penalty"}));
  c.mirostat = 0;
  EXPECT_EQ(names().back(), "temperature");
}

TEST(Mirostat, SamplerAcceptsEachChosenToken) {
  const GenerationConfig c = sampling(2);
  Sampler s(c, DecodeMode::sample, 16, 7);
  const auto& miro = dynamic_cast<const Mirostat&>(*s.chain().stages().back());
  std::vector<float> raw(16);
  for (int i = 0; i < 16; ++i) raw[static_cast<std::size_t>(i)] = 0.3f * static_cast<float>(i % 5);
  std::vector<std::int32_t> toks = {1, 2};
  ChoiceOptions no_accept;
  no_accept.accept = false;
  (void)s.choose(raw, {toks, 2}, no_accept);
  EXPECT_DOUBLE_EQ(miro.mu(), 10.0);
  const Choice ch = s.choose(raw, {toks, 2});
  // mu moved by the chosen token's surprise in the final distribution (the last stage's).
  EXPECT_NEAR(miro.mu(), 10.0 - 0.1 * (-ch.logprob / std::log(2.0) - 5.0), 1e-9);
}

TEST(Mirostat, RefusedWithBeamsAndForLaterStepsReRunAlone) {
  GenerationConfig c = sampling(1);
  c.num_beams = 2;
  const std::string e = error_of([&] { validate(c); });
  EXPECT_NE(e.find("mirostat"), std::string::npos) << e;
  EXPECT_NE(e.find("beam"), std::string::npos) << e;
  c.num_beams = 1;
  const std::vector<std::int32_t> toks = {1, 2, 3};
  EXPECT_NO_THROW(require_mirostat_first_step(c, {toks, 3}, "lens"));
  const std::string later = error_of([&] { require_mirostat_first_step(c, {toks, 2}, "lens"); });
  EXPECT_NE(later.find("lens: mirostat"), std::string::npos) << later;
  c.mirostat = 4;
  EXPECT_NE(error_of([&] { validate(c); }).find("mirostat must be 0 (off), 1 or 2"),
            std::string::npos);
}

TEST(Dry, ChainNeedsBreakersResolvedForItsOwnList) {
  GenerationConfig c;
  c.dry_multiplier = 0.8;
  EXPECT_NE(error_of([&] {
              build_chain(c, {8, true, 1});
            }).find("dry_sequence_breakers"),
            std::string::npos);
  c.dry_breakers = std::make_shared<const DryBreakers>(resolve(c.dry_sequence_breakers));
  EXPECT_EQ(build_chain(c, {8, false, 1}).names(), (std::vector<std::string>{"dry"}));
  set_from_flag(c, "dry_sequence_breakers", "x");  // replaces the default list
  set_from_flag(c, "dry_sequence_breakers", "y");  // and accumulates
  EXPECT_EQ(c.dry_sequence_breakers, (std::vector<std::string>{"x", "y"}));
  EXPECT_NE(error_of([&] {
              build_chain(c, {8, true, 1});
            }).find("--dry-sequence-breaker: DRY"),
            std::string::npos);    // the table is for the old list
  c.dry_sequence_breakers = {""};  // no breakers: nothing to resolve
  EXPECT_EQ(build_chain(c, {8, false, 1}).names(), (std::vector<std::string>{"dry"}));
  c.dry_base = 0.5;
  EXPECT_NE(error_of([&] { validate(c); }).find("dry_base must be a finite number >= 1"),
            std::string::npos);
}

}  // namespace
}  // namespace ls::decode
