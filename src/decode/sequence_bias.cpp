// Sequence bias, bad words and suppressed tokens (see sequence_bias.h).
#include "decode/sequence_bias.h"

#include <algorithm>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace ls::decode {

namespace {
void check_ids(std::span<const std::int32_t> ids, std::int32_t vocab_size,
               const std::string& what) {
  for (std::int32_t id : ids) {
    if (id < 0 || id >= vocab_size) {
      fail("{}: token id {} is outside the vocabulary [0, {})", what, id, vocab_size);
    }
  }
}
}  // namespace

SequenceBias::SequenceBias(std::vector<BiasedSequence> sequences, std::int32_t vocab_size,
                           std::string stage_name)
    : sequences_(std::move(sequences)), stage_name_(std::move(stage_name)) {
  for (const auto& seq : sequences_) {
    if (seq.tokens.empty()) fail("{}: a biased token sequence is empty", stage_name_);
    check_ids(seq.tokens, vocab_size, stage_name_);
    if (std::isnan(seq.bias)) fail("{}: the bias of {} is nan", stage_name_, seq.tokens);
  }
}

void SequenceBias::apply(std::span<float> scores, const TokenHistory& history) {
  // Sum every applicable bias per token first and add once, as transformers builds a bias tensor.
  std::map<std::int32_t, double> bias;
  const auto tokens = history.tokens;
  for (const auto& seq : sequences_) {
    const std::size_t len = seq.tokens.size();
    // transformers ignores a sequence longer than the whole context (even if its prefix fits).
    if (len > 1 && len > tokens.size()) continue;
    const std::size_t prefix = len - 1;
    if (!std::equal(seq.tokens.begin(), seq.tokens.begin() + static_cast<long>(prefix),
                    tokens.end() - static_cast<long>(prefix))) {
      continue;
    }
    bias[seq.tokens.back()] += seq.bias;
  }
  for (auto [token, b] : bias) {
    scores[token] = static_cast<float>(static_cast<double>(scores[token]) + b);
  }
}

std::string SequenceBias::describe() const {
  std::string items;
  for (const auto& seq : sequences_) {
    if (!items.empty()) items += ", ";
    items += seq.tokens.size() == 1 ? fmt::format("{}", seq.tokens[0])
                                    : fmt::format("{}", fmt::join(seq.tokens, " "));
    if (stage_name_ != "bad_words_ids") items += fmt::format("={:+g}", seq.bias);
  }
  return fmt::format("{}({})", stage_name_, items);
}

std::unique_ptr<SequenceBias> make_bad_words(const std::vector<std::vector<std::int32_t>>& words,
                                             std::span<const std::int32_t> eos_ids,
                                             std::int32_t vocab_size) {
  std::vector<BiasedSequence> sequences;
  for (const auto& word : words) {
    const bool is_eos =
        word.size() == 1 && std::find(eos_ids.begin(), eos_ids.end(), word[0]) != eos_ids.end();
    if (is_eos) continue;
    sequences.push_back({word, -std::numeric_limits<double>::infinity()});
  }
  return std::make_unique<SequenceBias>(std::move(sequences), vocab_size, "bad_words_ids");
}

SuppressTokens::SuppressTokens(std::vector<std::int32_t> tokens, std::int32_t vocab_size)
    : tokens_(std::move(tokens)) {
  check_ids(tokens_, vocab_size, "suppress_tokens");
}

void SuppressTokens::apply(std::span<float> scores, const TokenHistory& /*history*/) {
  for (std::int32_t t : tokens_) scores[t] = kFilterValue;
}

std::string SuppressTokens::describe() const {
  return fmt::format("suppress_tokens({})", fmt::join(tokens_, ", "));
}

}  // namespace ls::decode
