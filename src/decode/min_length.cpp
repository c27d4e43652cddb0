// Minimum length: EOS is suppressed until enough tokens exist (see min_length.h).
#include "decode/min_length.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace ls::decode {

MinLength::MinLength(int min_length, std::vector<std::int32_t> eos_ids, bool count_generated_only)
    : min_(min_length), eos_(std::move(eos_ids)), generated_only_(count_generated_only) {
  if (min_length < 0) fail("{} must be >= 0, got {}", name(), min_length);
}

void MinLength::apply(std::span<float> scores, const TokenHistory& history) {
  const std::size_t length = generated_only_ ? history.generated().size() : history.tokens.size();
  if (length >= static_cast<std::size_t>(min_)) return;
  for (std::int32_t eos : eos_) {
    if (eos >= 0 && static_cast<std::size_t>(eos) < scores.size()) scores[eos] = kFilterValue;
  }
}

std::string MinLength::describe() const {
  return fmt::format("{}({}={}, eos=[{}])", name(), generated_only_ ? "new_tokens" : "length", min_,
                     fmt::join(eos_, ", "));
}

}  // namespace ls::decode
