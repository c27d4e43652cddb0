// No-repeat n-gram ban over the whole history (decoder-only models: the prompt counts too).
#include "decode/no_repeat_ngram.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace ls::decode {

NoRepeatNgram::NoRepeatNgram(int ngram_size) : n_(ngram_size) {
  if (ngram_size <= 0) fail("no_repeat_ngram_size must be > 0, got {}", ngram_size);
}

void NoRepeatNgram::apply(std::span<float> scores, const TokenHistory& history) {
  const auto tokens = history.tokens;
  const std::size_t n = static_cast<std::size_t>(n_);
  // transformers bans nothing until the sequence is long enough to hold one full n-gram.
  if (tokens.size() + 1 < n) return;
  const auto prefix = tokens.subspan(tokens.size() + 1 - n);  // the last n-1 tokens
  for (std::size_t start = 0; start + n <= tokens.size(); ++start) {
    if (std::equal(prefix.begin(), prefix.end(), tokens.begin() + static_cast<long>(start))) {
      const std::int32_t banned = tokens[start + n - 1];
      if (banned >= 0 && static_cast<std::size_t>(banned) < scores.size()) {
        scores[banned] = kFilterValue;
      }
    }
  }
}

std::string NoRepeatNgram::describe() const {
  return fmt::format("no_repeat_ngram_size(n={})", n_);
}

}  // namespace ls::decode
