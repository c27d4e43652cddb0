// Generation loop tests with scripted logits: greedy, EOS, min_new_tokens, stop strings split
// across tokens, max_new_tokens, the context limit, seeded determinism (also across threads),
// sampling frequencies against softmax (chi-square), the trace and the processor-order experiment.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "core/error.h"
#include "decode/choose.h"
#include "decode/generate.h"
#include "decode/trace_json.h"
#include "decode/trace_text.h"
#include "scripted_source.h"

namespace ls::decode {
namespace {

using test::logits_of;
using test::ScriptedSource;

constexpr std::int32_t kEos = 0, kA = 1, kB = 2, kC = 3, kPrompt = 9;
// Tokens 4-6 appear in the scripts below by position only (as D, E, F in the comments).

// The classic case: greedy takes A (0.6) then C (0.6) = 0.36; B (0.4) then E (0.99) = 0.396.
std::vector<float> classic(const std::vector<std::int32_t>& t) {
  const std::size_t generated = t.size() - 1;
  if (generated == 0) return logits_of({0, 0.6, 0.4, 0, 0, 0, 0, 0, 0, 0});
  if (generated == 1 && t.back() == kA) return logits_of({0, 0, 0, 0.6, 0.4, 0, 0, 0, 0, 0});
  if (generated == 1 && t.back() == kB) return logits_of({0, 0, 0, 0, 0, 0.99, 0.01, 0, 0, 0});
  return logits_of({1, 0, 0, 0, 0, 0, 0, 0, 0, 0});
}

GenerationConfig greedy_config() {
  GenerationConfig c;
  c.eos_token_id = {kEos};
  c.max_new_tokens = 10;
  return c;
}

std::string letter(std::int32_t id) {
  return std::string(1, static_cast<char>('a' + id));
}

TEST(Greedy, ArgmaxWithLowestIdOnTies) {
  const std::vector<float> s = {1.0f, 3.0f, 3.0f, -1.0f};
  EXPECT_EQ(choose_greedy(s), 1);
  const std::vector<float> all_removed(4, -std::numeric_limits<float>::infinity());
  EXPECT_THROW(choose_greedy(all_removed), Error);
}

TEST(Greedy, ClassicCasePicksTheLocallyBestPath) {
  ScriptedSource source(10, classic);
  const std::vector<std::int32_t> prompt = {kPrompt};
  const auto run = generate(source, prompt, greedy_config(), {});
  ASSERT_EQ(run.sequences.size(), 1u);
  EXPECT_EQ(run.sequences[0].tokens, (std::vector<std::int32_t>{kA, kC, kEos}));
  EXPECT_EQ(run.sequences[0].finish, FinishReason::eos);
  EXPECT_NEAR(run.sequences[0].logprob, std::log(0.36), 1e-6);
}

TEST(Stopping, EosEndsGenerationAndIsNotPrinted) {
  // Always "a" except after three generated tokens, where the second EOS id (7) is certain.
  ScriptedSource source(8, [](const std::vector<std::int32_t>& t) {
    std::vector<double> p(8, 0.0);
    p[t.size() == 4 ? 7 : 1] = 1.0;
    return logits_of(p);
  });
  GenerationConfig c = greedy_config();
  c.eos_token_id = {0, 7};
  std::string printed;
  GenerateOptions o;
  o.token_bytes = letter;
  o.on_text = [&](int, std::string_view text) { printed += text; };
  const std::vector<std::int32_t> prompt = {3};
  const auto r = generate(source, prompt, c, o).sequences[0];
  EXPECT_EQ(r.tokens, (std::vector<std::int32_t>{1, 1, 1, 7}));
  EXPECT_EQ(r.finish, FinishReason::eos);
  EXPECT_EQ(printed, "bbb");
  EXPECT_EQ(r.text, "bbb");
}

TEST(Stopping, MinNewTokensSuppressesEosUntilReached) {
  // EOS has probability 0.9 at every step; token 1 the remaining 0.1.
  auto script = [](const std::vector<std::int32_t>&) { return logits_of({0.9, 0.1, 0, 0}); };
  const std::vector<std::int32_t> prompt = {2, 3};
  GenerationConfig c = greedy_config();
  {
    ScriptedSource source(4, script);
    EXPECT_EQ(generate(source, prompt, c, {}).sequences[0].tokens, (std::vector<std::int32_t>{0}));
  }
  c.min_new_tokens = 3;
  {
    ScriptedSource source(4, script);
    EXPECT_EQ(generate(source, prompt, c, {}).sequences[0].tokens,
              (std::vector<std::int32_t>{1, 1, 1, 0}));
  }
  c.min_new_tokens = 0;
  c.min_length = 4;  // counts the two prompt tokens, as transformers does
  {
    ScriptedSource source(4, script);
    EXPECT_EQ(generate(source, prompt, c, {}).sequences[0].tokens,
              (std::vector<std::int32_t>{1, 1, 0}));
  }
}

// Tokens 1..5 spell "Hel", "lo ", "wor", "ld", "!" in that order.
struct Spelled {
  std::vector<std::string> pieces{"", "Hel", "lo ", "wor", "ld", "!", "\xe5\x8c", "\x97"};
  std::vector<std::int32_t> order;
  std::vector<float> operator()(const std::vector<std::int32_t>& t) const {
    std::vector<double> p(pieces.size(), 0.0);
    const std::size_t i = t.size() - 1;
    p[i < order.size() ? order[i] : 0] = 1.0;
    return logits_of(p);
  }
};

TEST(Stopping, StopStringSplitAcrossTokensIsCaughtAndNeverPrinted) {
  Spelled spelled{.order = {1, 2, 3, 4, 5}};
  ScriptedSource source(8, spelled);
  GenerationConfig c = greedy_config();
  c.stop_strings = {"o wo"};  // "lo " + "wor"
  std::vector<std::string> chunks;
  GenerateOptions o;
  o.token_bytes = [&](std::int32_t id) { return spelled.pieces[id]; };
  o.on_text = [&](int, std::string_view text) { chunks.emplace_back(text); };
  const std::vector<std::int32_t> prompt = {7};
  const auto r = generate(source, prompt, c, o).sequences[0];
  EXPECT_EQ(r.finish, FinishReason::stop_string);
  EXPECT_EQ(r.tokens, (std::vector<std::int32_t>{1, 2, 3}));
  std::string printed;
  for (const auto& chunk : chunks) printed += chunk;
  EXPECT_EQ(printed, "Hell");
  EXPECT_EQ(r.text, "Hell");
  // "Hel" is printed at once; "lo " is held back as far as it could start the stop string.
  EXPECT_EQ(chunks.front(), "Hel");
}

TEST(Stopping, PartialStopStringIsReleasedWhenItDoesNotComplete) {
  Spelled spelled{.order = {1, 2, 3, 4, 5}};
  ScriptedSource source(8, spelled);
  GenerationConfig c = greedy_config();
  c.stop_strings = {"lo!"};
  c.max_new_tokens = 5;
  std::string printed;
  GenerateOptions o;
  o.token_bytes = [&](std::int32_t id) { return spelled.pieces[id]; };
  o.on_text = [&](int, std::string_view text) { printed += text; };
  const std::vector<std::int32_t> prompt = {7};
  const auto r = generate(source, prompt, c, o).sequences[0];
  EXPECT_EQ(r.finish, FinishReason::length);
  EXPECT_EQ(printed, "Hello world!");
}

TEST(Stopping, StreamingNeverEmitsHalfAUtf8Character) {
  Spelled spelled{.order = {6, 7, 5}};  // e5 8c | 97 | "!" = "北!"
  ScriptedSource source(8, spelled);
  GenerationConfig c = greedy_config();
  c.max_new_tokens = 3;
  std::vector<std::string> chunks;
  GenerateOptions o;
  o.token_bytes = [&](std::int32_t id) { return spelled.pieces[id]; };
  o.on_text = [&](int, std::string_view text) { chunks.emplace_back(text); };
  const std::vector<std::int32_t> prompt = {1};
  generate(source, prompt, c, o);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0], "\xe5\x8c\x97");
  EXPECT_EQ(chunks[1], "!");
}

TEST(Stopping, MaxNewTokensAndContextLimit) {
  auto script = [](const std::vector<std::int32_t>&) { return logits_of({0.1, 0.9, 0, 0}); };
  const std::vector<std::int32_t> prompt = {2, 3, 2};
  GenerationConfig c = greedy_config();
  c.max_new_tokens = 4;
  {
    ScriptedSource source(4, script);
    const auto r = generate(source, prompt, c, {}).sequences[0];
    EXPECT_EQ(r.tokens.size(), 4u);
    EXPECT_EQ(r.finish, FinishReason::length);
  }
  {
    ScriptedSource source(4, script);
    source.limit = 5;  // room for two generated tokens
    const auto r = generate(source, prompt, c, {}).sequences[0];
    EXPECT_EQ(r.tokens.size(), 2u);
    EXPECT_EQ(r.finish, FinishReason::context_limit);
    EXPECT_NE(r.message.find("context limit"), std::string::npos) << r.message;
  }
  {
    ScriptedSource source(4, script);
    source.limit = 3;
    try {
      generate(source, prompt, c, {});
      FAIL() << "a prompt filling the context must be an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("context"), std::string::npos) << e.what();
    }
  }
}

// A deterministic, prefix-dependent pseudo-model over 50 tokens.
std::vector<float> pseudo_model(const std::vector<std::int32_t>& t) {
  std::uint64_t h = 1469598103934665603ULL;
  for (std::int32_t x : t) h = (h ^ static_cast<std::uint64_t>(x)) * 1099511628211ULL;
  std::vector<float> s(50);
  for (std::size_t i = 0; i < s.size(); ++i) {
    h = h * 6364136223846793005ULL + 1442695040888963407ULL;
    s[i] = static_cast<float>((h >> 40) % 1000) / 250.0f;
  }
  return s;
}

std::vector<std::int32_t> sample_tokens(std::uint64_t seed, std::vector<double>* draws = nullptr) {
  ScriptedSource source(50, pseudo_model);
  GenerationConfig c;
  c.do_sample = true;
  c.top_k = 0;
  c.seed = seed;
  c.max_new_tokens = 24;
  GenerateOptions o;
  if (draws) o.on_step = [&](const StepTrace& s) { draws->push_back(*s.draw); };
  const std::vector<std::int32_t> prompt = {1, 2, 3};
  return generate(source, prompt, c, o).sequences[0].tokens;
}

TEST(Sampling, SameSeedSameTokensDifferentSeedsDiffer) {
  std::vector<double> draws1, draws2;
  const auto a = sample_tokens(7, &draws1);
  const auto b = sample_tokens(7, &draws2);
  EXPECT_EQ(a, b);
  EXPECT_EQ(draws1, draws2);
  EXPECT_EQ(draws1.size(), 24u);
  int differing = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) differing += sample_tokens(seed) != a ? 1 : 0;
  EXPECT_EQ(differing, 5);
}

TEST(Sampling, ConcurrentRunsMatchASequentialRun) {
  // No hidden global generator: two threads sampling at once get what one thread gets.
  const auto expected = sample_tokens(99);
  std::vector<std::int32_t> t1, t2;
  std::thread a([&] { t1 = sample_tokens(99); });
  std::thread b([&] { t2 = sample_tokens(99); });
  a.join();
  b.join();
  EXPECT_EQ(t1, expected);
  EXPECT_EQ(t2, expected);
}

TEST(Sampling, TheRecordedDrawReplaysTheStep) {
  ScriptedSource source(50, pseudo_model);
  GenerationConfig c;
  c.do_sample = true;
  c.top_k = 0;
  c.seed = 3;
  c.max_new_tokens = 5;
  std::vector<StepTrace> steps;
  GenerateOptions o;
  o.on_step = [&](const StepTrace& s) { steps.push_back(s); };
  const std::vector<std::int32_t> prompt = {4};
  const auto r = generate(source, prompt, c, o).sequences[0];
  std::vector<std::int32_t> tokens = prompt;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(choose_sample(pseudo_model(tokens), *steps[i].draw), r.tokens[i]);
    tokens.push_back(r.tokens[i]);
  }
}

// Chi-square statistic of `counts` against probabilities `p` over n draws.
double chi_square(const std::vector<int>& counts, const std::vector<double>& p, int n) {
  double chi = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double e = n * p[i];
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

std::vector<int> draw_counts(const std::vector<double>& p, double temperature, int n) {
  ScriptedSource source(static_cast<std::int32_t>(p.size()),
                        [&](const std::vector<std::int32_t>&) { return logits_of(p); });
  GenerationConfig c;
  c.do_sample = true;
  c.top_k = 0;
  c.temperature = temperature;
  c.seed = 2024;
  c.max_new_tokens = 1;
  c.num_return_sequences = n;
  const std::vector<std::int32_t> prompt = {0};
  std::vector<int> counts(p.size(), 0);
  for (const auto& r : generate(source, prompt, c, {}).sequences) ++counts[r.tokens[0]];
  return counts;
}

TEST(Sampling, FrequenciesOf20000DrawsMatchSoftmax) {
  const std::vector<double> p = {0.4, 0.25, 0.15, 0.1, 0.05, 0.03, 0.015, 0.005};
  const int n = 20000;
  const double chi = chi_square(draw_counts(p, 1.0, n), p, n);
  // 7 degrees of freedom: P(chi2 > 24.32) = 0.001.
  EXPECT_LT(chi, 24.32) << "chi-square " << chi;
  // At temperature 0.5 the distribution is p^2 renormalised.
  std::vector<double> q;
  double z = 0;
  for (double v : p) z += v * v;
  for (double v : p) q.push_back(v * v / z);
  const double chi_t = chi_square(draw_counts(p, 0.5, n), q, n);
  EXPECT_LT(chi_t, 24.32) << "chi-square at T=0.5 " << chi_t;
  // A wrong distribution is rejected by the same statistic (the test can fail).
  EXPECT_GT(chi_square(draw_counts(p, 1.0, n), q, n), 24.32);
}

TEST(Sampling, TemperatureZeroMeansGreedy) {
  ScriptedSource source(50, pseudo_model);
  GenerationConfig c;
  c.do_sample = true;
  c.temperature = 0.0;
  c.max_new_tokens = 8;
  const std::vector<std::int32_t> prompt = {5};
  const auto sampled = generate(source, prompt, c, {});
  EXPECT_EQ(sampled.mode, DecodeMode::greedy);
  ScriptedSource source2(50, pseudo_model);
  c.do_sample = false;
  c.temperature = 1.0;
  EXPECT_EQ(generate(source2, prompt, c, {}).sequences[0].tokens, sampled.sequences[0].tokens);
}

// logits [3, 2.5, 2, 1.5, 1, 0.5, 0, -1] with temperature 2, top_k 5, top_p 0.8: in transformers'
// order the pool is 4 tokens, with temperature applied last only 3 (numpy:
// check_against_numpy.py's order experiment computes the same two pools).
std::vector<StepTrace> order_experiment(std::vector<std::string> order) {
  ScriptedSource source(8, [](const std::vector<std::int32_t>&) {
    return std::vector<float>{3.0f, 2.5f, 2.0f, 1.5f, 1.0f, 0.5f, 0.0f, -1.0f};
  });
  GenerationConfig c;
  c.do_sample = true;
  c.temperature = 2.0;
  c.top_k = 5;
  c.top_p = 0.8;
  c.order = std::move(order);
  c.seed = 1;
  c.max_new_tokens = 1;
  std::vector<StepTrace> steps;
  GenerateOptions o;
  o.on_step = [&](const StepTrace& s) { steps.push_back(s); };
  const std::vector<std::int32_t> prompt = {0};
  generate(source, prompt, c, o);
  return steps;
}

TEST(Trace, ProcessorOrderChangesThePoolAndTheTraceShowsIt) {
  const auto hf = order_experiment({});
  const auto late = order_experiment({"top_k", "top_p", "temperature"});
  ASSERT_EQ(hf.size(), 1u);
  ASSERT_EQ(late.size(), 1u);
  ASSERT_EQ(hf[0].stages.size(), 3u);
  EXPECT_EQ(hf[0].stages[0].name, "temperature");
  EXPECT_EQ(hf[0].stages[1].name, "top_k");
  EXPECT_EQ(hf[0].stages[2].name, "top_p");
  EXPECT_EQ(hf[0].stages[1].candidates, 5);
  EXPECT_EQ(hf[0].stages[2].candidates, 4);
  EXPECT_EQ(late[0].stages[0].name, "top_k");
  EXPECT_EQ(late[0].stages[1].name, "top_p");
  EXPECT_EQ(late[0].stages[2].name, "temperature");
  EXPECT_EQ(late[0].stages[1].candidates, 3);
  EXPECT_EQ(hf[0].final_candidates, 4);
  EXPECT_EQ(late[0].final_candidates, 3);
}

TEST(Trace, StepRecordsEveryQuantity) {
  ScriptedSource source(10, classic);
  GenerationConfig c = greedy_config();
  c.repetition_penalty = 1.2;
  std::vector<StepTrace> steps;
  GenerateOptions o;
  o.on_step = [&](const StepTrace& s) { steps.push_back(s); };
  o.trace_top_n = 3;
  nlohmann::json header;
  o.on_header = [&](const RunHeader& h) { header = header_json(h); };
  const std::vector<std::int32_t> prompt = {kPrompt};
  generate(source, prompt, c, o);
  ASSERT_EQ(steps.size(), 3u);
  const StepTrace& s0 = steps[0];
  EXPECT_EQ(s0.raw_candidates, 2);
  ASSERT_EQ(s0.raw_top.size(), 2u);
  EXPECT_EQ(s0.raw_top[0].id, kA);
  EXPECT_NEAR(s0.raw_top[0].prob, 0.6, 1e-6);
  ASSERT_EQ(s0.stages.size(), 1u);
  EXPECT_EQ(s0.stages[0].name, "repetition_penalty");
  EXPECT_EQ(s0.chosen, kA);
  EXPECT_EQ(s0.chosen_raw_rank, 1);
  EXPECT_NEAR(s0.chosen_raw_prob, 0.6, 1e-6);
  EXPECT_EQ(s0.runner_up, kB);
  EXPECT_NEAR(s0.margin_prob, 0.2, 1e-6);  // the prompt token 9 is not a candidate: no penalty
  const double h = -(0.6 * std::log(0.6) + 0.4 * std::log(0.4));
  EXPECT_NEAR(s0.entropy_before, h, 1e-6);
  EXPECT_FALSE(s0.draw.has_value());
  EXPECT_NEAR(steps[1].sequence_logprob, std::log(0.36), 1e-6);
  EXPECT_NEAR(steps[2].sequence_logprob, std::log(0.36), 1e-6);
  const auto j = step_json(s0, letter);
  EXPECT_EQ(j["chosen"]["text"], "b");
  EXPECT_EQ(j["chosen"]["raw_rank"], 1);
  EXPECT_EQ(j["stages"][0]["name"], "repetition_penalty");
  EXPECT_TRUE(j["draw"].is_null());
  EXPECT_EQ(header["type"], "header");
  EXPECT_EQ(header["mode"], "greedy");
  EXPECT_EQ(header["settings"]["repetition_penalty"]["source"], "default");
  EXPECT_EQ(header["stages"], nlohmann::json::array({"repetition_penalty"}));
  const std::string text = format_step(s0, letter);
  EXPECT_NE(text.find("repetition_penalty"), std::string::npos) << text;
  EXPECT_NE(text.find("raw p 60.00%"), std::string::npos) << text;
  EXPECT_NE(text.find("raw rank 1"), std::string::npos) << text;
}

TEST(Trace, TruncatedMassIsReported) {
  ScriptedSource source(4, [](const std::vector<std::int32_t>&) {
    return logits_of({0.5, 0.3, 0.15, 0.05});
  });
  GenerationConfig c;
  c.do_sample = true;
  c.top_k = 2;
  c.seed = 5;
  c.max_new_tokens = 1;
  std::vector<StepTrace> steps;
  GenerateOptions o;
  o.on_step = [&](const StepTrace& s) { steps.push_back(s); };
  const std::vector<std::int32_t> prompt = {0};
  generate(source, prompt, c, o);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_NEAR(steps[0].mass_removed, 0.2, 1e-6);
  EXPECT_NEAR(steps[0].stages[0].mass_removed, 0.2, 1e-6);
  EXPECT_EQ(steps[0].final_candidates, 2);
  EXPECT_NEAR(steps[0].chosen_prob, steps[0].chosen == 0 ? 0.625 : 0.375, 1e-6);
  ASSERT_TRUE(steps[0].draw.has_value());
  EXPECT_EQ(steps[0].chosen, *steps[0].draw < 0.625 ? 0 : 1);
}

}  // namespace
}  // namespace ls::decode
