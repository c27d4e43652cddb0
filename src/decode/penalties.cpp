// Repetition, presence and frequency penalties (see penalties.h for the formulas' origins).
#include "decode/penalties.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace ls::decode {

namespace {

// (token, count) pairs of `tokens`, sorted by token; ids outside the vocabulary are an error.
std::vector<std::pair<std::int32_t, int>> token_counts(std::span<const std::int32_t> tokens,
                                                       std::size_t vocab, const char* stage) {
  std::vector<std::int32_t> sorted(tokens.begin(), tokens.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<std::int32_t, int>> counts;
  for (std::int32_t t : sorted) {
    if (t < 0 || static_cast<std::size_t>(t) >= vocab) {
      fail("{}: token id {} in the history is outside the vocabulary of {} scores", stage, t,
           vocab);
    }
    if (!counts.empty() && counts.back().first == t) {
      ++counts.back().second;
    } else {
      counts.emplace_back(t, 1);
    }
  }
  return counts;
}

// The tokens a penalty counts: `span` (its default), or the last `last_n` of the whole history.
std::span<const std::int32_t> counted(const TokenHistory& history,
                                      std::span<const std::int32_t> span, int last_n) {
  if (last_n < 0) return span;
  const auto n = std::min(history.tokens.size(), static_cast<std::size_t>(last_n));
  return history.tokens.last(n);
}

std::string window(int last_n, const char* span) {
  return last_n < 0 ? std::string(span) : fmt::format("over the last {} tokens", last_n);
}

}  // namespace

RepetitionPenalty::RepetitionPenalty(double penalty, int last_n)
    : penalty_(penalty), last_n_(last_n) {
  if (!(penalty > 0.0)) fail("repetition_penalty must be > 0, got {}", penalty);
}

void RepetitionPenalty::apply(std::span<float> scores, const TokenHistory& history) {
  const auto tokens = counted(history, history.tokens, last_n_);
  for (auto [token, count] : token_counts(tokens, scores.size(), "repetition_penalty")) {
    const double s = scores[token];
    // Dividing a negative score would raise it; transformers multiplies those instead.
    scores[token] = static_cast<float>(s < 0.0 ? s * penalty_ : s / penalty_);
  }
}

std::string RepetitionPenalty::describe() const {
  return fmt::format("repetition_penalty(penalty={}, {})", penalty_,
                     window(last_n_, "over prompt+generated"));
}

PresencePenalty::PresencePenalty(double penalty, int last_n) : penalty_(penalty), last_n_(last_n) {
  if (std::isnan(penalty)) fail("presence_penalty must be a number, got nan");
}

void PresencePenalty::apply(std::span<float> scores, const TokenHistory& history) {
  const auto tokens = counted(history, history.generated(), last_n_);
  for (auto [token, count] : token_counts(tokens, scores.size(), "presence_penalty")) {
    scores[token] = static_cast<float>(static_cast<double>(scores[token]) - penalty_);
  }
}

std::string PresencePenalty::describe() const {
  return fmt::format("presence_penalty(penalty={}, {})", penalty_,
                     window(last_n_, "over generated"));
}

FrequencyPenalty::FrequencyPenalty(double penalty, int last_n)
    : penalty_(penalty), last_n_(last_n) {
  if (std::isnan(penalty)) fail("frequency_penalty must be a number, got nan");
}

void FrequencyPenalty::apply(std::span<float> scores, const TokenHistory& history) {
  const auto tokens = counted(history, history.generated(), last_n_);
  for (auto [token, count] : token_counts(tokens, scores.size(), "frequency_penalty")) {
    scores[token] = static_cast<float>(static_cast<double>(scores[token]) - penalty_ * count);
  }
}

std::string FrequencyPenalty::describe() const {
  return fmt::format("frequency_penalty(penalty={}, x count {})", penalty_,
                     window(last_n_, "in generated"));
}

}  // namespace ls::decode
