// DRY repetition penalty (see dry.h).
#include "decode/dry.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.h"

namespace ls::decode {

Dry::Dry(double multiplier, double base, int allowed_length, int penalty_last_n,
         std::shared_ptr<const DryBreakers> breakers)
    : multiplier_(multiplier),
      base_(base),
      allowed_length_(allowed_length),
      penalty_last_n_(penalty_last_n),
      breakers_(std::move(breakers)) {
  if (!std::isfinite(multiplier) || multiplier < 0.0)
    fail("dry_multiplier must be a finite number >= 0, got {}", multiplier);
  if (!std::isfinite(base) || base < 1.0)
    fail("dry_base must be a finite number >= 1, got {}", base);
  if (allowed_length < 0) fail("dry_allowed_length must be >= 0, got {}", allowed_length);
  if (penalty_last_n < -1)
    fail("dry_penalty_last_n must be >= -1 (-1: the whole history), got {}", penalty_last_n);
}

std::vector<std::pair<std::int32_t, int>> Dry::repeat_lengths(
    std::span<const std::int32_t> tokens) const {
  if (penalty_last_n_ == 0) return {};
  const std::size_t n_all = tokens.size();
  const int n = static_cast<int>(
      penalty_last_n_ < 0 ? n_all : std::min(n_all, static_cast<std::size_t>(penalty_last_n_)));
  if (n <= allowed_length_) return {};
  // back(i): the i-th token from the end (0: the last one). The scans run backwards from there.
  auto back = [&](int i) { return tokens[n_all - 1 - static_cast<std::size_t>(i)]; };

  // 1. The most recent breaker caps how far back a repetition may reach: a breaker whose head is
  // i tokens from the end and whose tail follows it ends `longest` tokens later.
  int limit = n;
  for (int i = 0; i < n && breakers_; ++i) {
    const auto it = breakers_->heads.find(back(i));
    if (it == breakers_->heads.end()) continue;
    int longest = -1;
    for (const auto& tail : it->second) {
      const int len = static_cast<int>(tail.size());
      if (len <= longest || len > i) continue;
      bool match = true;
      for (int k = 0; k < len && match; ++k)
        match = tail[static_cast<std::size_t>(k)] == back(i - k - 1);
      if (match) longest = len;
    }
    if (longest >= 0) {
      limit = i - longest;
      break;
    }
  }
  if (limit < allowed_length_) return {};

  // 2. z[k]: how many tokens ending k from the end equal the tokens ending at the end (the
  // Z-algorithm over the reversed window, linear time), capped at `limit`.
  std::vector<int> z(static_cast<std::size_t>(n), 0);
  for (int k = 1, lt = 0, rt = 0; k < n; ++k) {
    int len = 0;
    if (k <= rt) len = std::min(z[static_cast<std::size_t>(k - lt)], rt - k + 1);
    while (k + len < n && back(len) == back(k + len)) ++len;
    z[static_cast<std::size_t>(k)] = len;
    if (len > 0 && k + len - 1 > rt) lt = k, rt = k + len - 1;
  }

  // 3. The token after each repeat (the one k - 1 from the end) would extend it by one.
  std::unordered_map<std::int32_t, int> longest;
  for (int k = 1; k < n; ++k) {
    const int len = std::min(z[static_cast<std::size_t>(k)], limit);
    if (len < allowed_length_) continue;
    int& best = longest.try_emplace(back(k - 1), len).first->second;
    best = std::max(best, len);
  }
  std::vector<std::pair<std::int32_t, int>> out(longest.begin(), longest.end());
  std::sort(out.begin(), out.end());
  return out;
}

void Dry::apply(std::span<float> scores, const TokenHistory& history) {
  if (multiplier_ == 0.0) return;
  // base^exponent stays below float's largest value, as llama.cpp clamps it.
  const int max_exponent = base_ > 1.000001 ? static_cast<int>(88.7228391 / std::log(base_)) : 0;
  for (const auto& [token, len] : repeat_lengths(history.tokens)) {
    if (token < 0 || static_cast<std::size_t>(token) >= scores.size()) continue;
    if (breakers_) {  // a token that alone is a breaker is exempt
      const auto it = breakers_->heads.find(token);
      if (it != breakers_->heads.end() &&
          std::any_of(it->second.begin(), it->second.end(),
                      [](const auto& tail) { return tail.empty(); }))
        continue;
    }
    int exponent = len - allowed_length_;
    if (max_exponent > 0) exponent = std::min(exponent, max_exponent);
    const double penalty = multiplier_ * std::pow(base_, exponent);
    float& s = scores[static_cast<std::size_t>(token)];
    s = static_cast<float>(static_cast<double>(s) - penalty);
  }
}

std::string Dry::describe() const {
  return fmt::format("dry(multiplier={}, base={}, allowed_length={}, last_n={}, {} breaker{})",
                     multiplier_, base_, allowed_length_,
                     penalty_last_n_ < 0 ? std::string("all") : std::to_string(penalty_last_n_),
                     breakers_ ? breakers_->strings.size() : 0,
                     breakers_ && breakers_->strings.size() == 1 ? "" : "s");
}

}  // namespace ls::decode
