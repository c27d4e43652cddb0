// DRY's sequence breakers resolved against a vocabulary, as llama.cpp resolves them: a breaker is
// a string, but repetitions are tokens, so each breaker becomes "head" tokens (a token whose text
// contains the whole breaker, or ends with its first bytes) and, for the partial ones, the
// tokens that spell the rest of it. The decode layer has no tokenizer: the engine layer passes
// each token's text and an encoder, and the result rides on GenerationConfig::dry_breakers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ls::decode {

struct DryBreakers {
  // The breaker strings this was resolved from, as given (build_chain checks that they are the
  // config's: a table left over from other breakers would silently break other sequences).
  std::vector<std::string> strings;
  // head token -> the tails that complete a breaker after it; an empty tail means the head alone
  // holds a whole breaker (it also stops DRY from penalising that token).
  std::unordered_map<std::int32_t, std::vector<std::vector<std::int32_t>>> heads;
};

// llama.cpp caps breakers at 40 bytes and the tail tokens of a partial match at 20.
inline constexpr std::size_t kDryMaxBreakerBytes = 40;
inline constexpr std::size_t kDryMaxTailTokens = 20;

using TokenTextFn = std::function<std::string(std::int32_t id)>;
using TailEncodeFn = std::function<std::vector<std::int32_t>(std::string_view text)>;

// For every non-empty breaker (cut to 40 bytes) and every token id in [0, vocab_size): a token
// whose text contains the breaker is a head with an empty tail; otherwise each position where
// the text's end matches the breaker's beginning gives a head with the tail encode(rest of the
// breaker), cut to 20 tokens. Duplicate tails are kept once.
DryBreakers resolve_dry_breakers(std::span<const std::string> breakers, std::int32_t vocab_size,
                                 const TokenTextFn& token_text, const TailEncodeFn& encode);

}  // namespace ls::decode
