// Word expansion into token sequences (see words.h).
#include "decode/words.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace ls::decode {

std::vector<std::vector<std::int32_t>> word_token_sequences(std::string_view word,
                                                            const EncodeFn& encode) {
  std::vector<std::vector<std::int32_t>> out;
  for (const std::string& variant : {std::string(word), " " + std::string(word)}) {
    auto ids = encode(variant);
    if (!ids.empty() && std::find(out.begin(), out.end(), ids) == out.end()) {
      out.push_back(std::move(ids));
    }
  }
  return out;
}

void add_banned_word(GenerationConfig& config, std::string_view word, const EncodeFn& encode) {
  if (word.empty()) fail("--ban-word: the word is empty");
  for (auto& seq : word_token_sequences(word, encode)) config.bad_words_ids.push_back(seq);
  config.sources["bad_words_ids"] = "flag";
}

void add_word_bias(GenerationConfig& config, std::string_view spec, const EncodeFn& encode) {
  const auto eq = spec.rfind('=');
  if (eq == std::string_view::npos || eq == 0) {
    fail("--logit-bias-word: expected WORD=BIAS (e.g. \"北京=-5\"), got '{}'", spec);
  }
  const std::string number(spec.substr(eq + 1));
  char* end = nullptr;
  const double bias = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || std::isnan(bias)) {
    fail("--logit-bias-word: the bias in '{}' is not a number", spec);
  }
  for (auto& seq : word_token_sequences(spec.substr(0, eq), encode)) {
    config.sequence_bias.push_back({seq, bias});
  }
  config.sources["sequence_bias"] = "flag";
}

}  // namespace ls::decode
