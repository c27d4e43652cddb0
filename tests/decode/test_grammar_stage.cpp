// The grammar stage in a chain: after any history, exactly the tokens whose bytes the grammar
// can take keep their scores (checked by advancing a fresh matcher over the history's text and
// the token), end-of-sequence only where the text is complete; histories that fork and switch
// (beams, replays) give the same answers as fresh stages.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "decode/generation_config.h"
#include "decode/grammar_stage.h"
#include "decode/order.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"

namespace ls::decode {
namespace {

const std::vector<std::string> kTokens = {"{",   "}",   "\"",    "a",    "b",    "\"a",
                                          "a\"", ":",   ",",     " ",    "1",    "12",
                                          "{\"", "\"}", "<eos>", "\xC3", "\xA9", "é"};
constexpr std::int32_t kEos = 14;

std::shared_ptr<const grammar::Constraint> constraint() {
  std::vector<bool> special(kTokens.size(), false);
  special[kEos] = true;
  auto g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(
      R"(root ::= "{" (pair ("," pair)*)? "}"
pair ::= str ":" " "? num
str ::= "\"" [a-bé]* "\""
num ::= [0-9]+)",
      "test"));
  return std::make_shared<const grammar::Constraint>(grammar::Constraint{
      g, std::make_shared<const grammar::Vocabulary>(kTokens, special), "test grammar"});
}

// Whether `token` may follow `history` (a fresh matcher over the whole text).
bool allowed_after(const std::shared_ptr<const grammar::Constraint>& c,
                   const std::vector<std::int32_t>& history, std::int32_t token) {
  grammar::Matcher m(c->grammar);
  for (std::int32_t t : history)
    if (!m.advance(kTokens[t])) return false;
  if (token == kEos) return m.can_end();
  return m.advance(kTokens[token]);
}

TEST(GrammarStage, KeepsExactlyTheTokensTheGrammarAllows) {
  const auto c = constraint();
  GenerationConfig config;
  config.constraint = c;
  config.eos_token_id = {kEos};
  ProcessorChain chain = build_chain(config, {static_cast<std::int32_t>(kTokens.size() + 2)});
  ASSERT_EQ(chain.names().front(), "grammar");
  std::mt19937 rng(5);
  std::vector<std::vector<std::int32_t>> histories;
  for (int walk = 0; walk < 300; ++walk) {
    // A history: a prefix of an earlier one (a fork) or a fresh start, then allowed tokens.
    std::vector<std::int32_t> h;
    if (!histories.empty() && rng() % 2) {
      h = histories[rng() % histories.size()];
      h.resize(rng() % (h.size() + 1));
    }
    for (int step = 0; step < 10; ++step) {
      std::vector<float> scores(kTokens.size() + 2);
      for (float& s : scores) s = static_cast<float>(rng() % 100) / 10.0f;
      const std::vector<float> before = scores;
      std::vector<std::int32_t> tokens = {7};  // a prompt token, not part of the text
      tokens.insert(tokens.end(), h.begin(), h.end());
      chain.apply(scores, TokenHistory{tokens, 1});
      std::vector<std::int32_t> kept;
      for (std::int32_t t = 0; t < static_cast<std::int32_t>(scores.size()); ++t) {
        const bool want = t < static_cast<std::int32_t>(kTokens.size()) && allowed_after(c, h, t);
        ASSERT_EQ(std::isfinite(scores[t]), want) << "token " << t << " after " << h.size();
        if (want) {
          EXPECT_EQ(scores[t], before[t]);
          kept.push_back(t);
        }
      }
      if (kept.empty() || (kept.size() == 1 && kept[0] == kEos)) break;
      std::int32_t next;
      do next = kept[rng() % kept.size()];
      while (next == kEos);
      h.push_back(next);
    }
    histories.push_back(h);
  }
}

// Bounded repetitions (a string's maxLength, an array's maxItems): the stage shares the short
// tokens' mask between positions with many rounds left (StateSpace::clamped) and walks only the
// long tokens; the masks must equal a fresh matcher's answer token by token. Short here is at
// most 2 bytes, so most tokens are long and most positions are clamped.
TEST(GrammarStage, BoundedRepetitionsGiveExactMasks) {
  const std::vector<std::string> tokens = {
      "{",    "}",   "\"",   "a",      "b",     "ab",     "aab", "aaab", "aaaaa",
      "\"a",  "a\"", "aa\"", "aaaa\"", "\",\"", ",",      "\"}", "é",    "\xC3",
      "\xA9", "aé",  "ba",   "bbbb",   "<eos>", "\"ab\"", "12",  "1234", "123456"};
  const std::int32_t eos = 22;
  std::vector<bool> special(tokens.size(), false);
  special[eos] = true;
  auto g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(
      R"(root ::= "{" str ("," str){0,6} "}" num{0,1}
str ::= "\"" [a-bé]{0,9} "\""
num ::= [0-9]{1,8})",
      "test"));
  const auto c = std::make_shared<const grammar::Constraint>(grammar::Constraint{
      g, std::make_shared<const grammar::Vocabulary>(tokens, special, 2), "test grammar"});
  // The clamp moves a state deep in a string to one with 3 rounds left.
  grammar::Matcher probe(g);
  ASSERT_TRUE(probe.advance("{\"a"));
  EXPECT_NE(probe.space().clamped(probe.state(), 3), probe.state());
  ASSERT_TRUE(probe.advance("aaaaaaa"));  // 8 of 9 characters: one round left
  EXPECT_EQ(probe.space().clamped(probe.state(), 3), probe.state());

  GenerationConfig config;
  config.constraint = c;
  config.eos_token_id = {eos};
  ProcessorChain chain = build_chain(config, {static_cast<std::int32_t>(tokens.size())});
  std::mt19937 rng(11);
  int checked = 0;
  for (int walk = 0; walk < 400; ++walk) {
    std::vector<std::int32_t> h;
    for (int step = 0; step < 24; ++step) {
      std::vector<float> scores(tokens.size(), 1.0f);
      std::vector<std::int32_t> history = {3};
      history.insert(history.end(), h.begin(), h.end());
      chain.apply(scores, TokenHistory{history, 1});
      std::vector<std::int32_t> kept;
      for (std::int32_t t = 0; t < static_cast<std::int32_t>(tokens.size()); ++t) {
        grammar::Matcher m(g);
        bool ok = true;
        for (std::int32_t p : h) ok = ok && m.advance(tokens[static_cast<std::size_t>(p)]);
        const bool want = ok && (t == eos ? m.can_end() : m.advance(tokens[t]));
        ASSERT_EQ(std::isfinite(scores[t]), want)
            << "token '" << tokens[t] << "' after " << h.size() << " tokens (walk " << walk << ")";
        if (want && t != eos) kept.push_back(t);
        ++checked;
      }
      if (kept.empty()) break;
      h.push_back(kept[rng() % kept.size()]);
    }
  }
  EXPECT_GT(checked, 50000);
}

TEST(GrammarStage, AGrammarNeedsAnEndOfSequenceToken) {
  GenerationConfig config;
  config.constraint = constraint();
  config.eos_token_id.clear();
  EXPECT_THROW(validate(config), Error);
}

}  // namespace
}  // namespace ls::decode
