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

TEST(GrammarStage, AGrammarNeedsAnEndOfSequenceToken) {
  GenerationConfig config;
  config.constraint = constraint();
  config.eos_token_id.clear();
  EXPECT_THROW(validate(config), Error);
}

}  // namespace
}  // namespace ls::decode
