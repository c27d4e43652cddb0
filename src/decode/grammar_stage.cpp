// The grammar stage (grammar_stage.h): the parse kept in step with the history, token masks
// cached per parse state (a string's characters leave the state as it was, so a long string
// value costs one mask), and the mask applied as -inf.
#include "decode/grammar_stage.h"

#include <algorithm>

#include "core/error.h"

namespace ls::decode {
namespace {

// Masks kept per sequence: each is vocabulary / 8 bytes (19 KB for Qwen's); a grammar whose
// states do not repeat gets its cache cleared rather than grown without bound.
constexpr std::size_t kMaxMasks = 512;

}  // namespace

GrammarStage::GrammarStage(std::shared_ptr<const grammar::Constraint> constraint,
                           std::vector<std::int32_t> eos_ids)
    : constraint_(std::move(constraint)), eos_(std::move(eos_ids)), space_(constraint_->grammar) {
  states_.push_back(space_.start());
}

void GrammarStage::reset() {
  tokens_.clear();
  states_.resize(1);
}

std::uint32_t GrammarStage::sync(std::span<const std::int32_t> generated) {
  std::size_t same = 0;
  while (same < tokens_.size() && same < generated.size() && tokens_[same] == generated[same])
    ++same;
  tokens_.resize(same);
  states_.resize(same + 1);
  const grammar::Vocabulary& vocab = *constraint_->vocabulary;
  for (std::size_t i = same; i < generated.size(); ++i) {
    const std::int32_t t = generated[i];
    std::uint32_t s = states_.back();
    // An end-of-sequence token ends the text (a sequence only continues past one when told to
    // ignore it); any other token the grammar did not allow (a replayed or forced one) leaves
    // no parse, and every later token is removed.
    if (std::find(eos_.begin(), eos_.end(), t) == eos_.end()) {
      if (t < 0 || t >= vocab.size()) {
        s = grammar::StateSpace::kDead;
      } else {
        for (char c : vocab.bytes(t)) {
          s = space_.next(s, static_cast<std::uint8_t>(c));
          if (s == grammar::StateSpace::kDead) break;
        }
      }
    }
    tokens_.push_back(t);
    states_.push_back(s);
  }
  return states_.back();
}

const std::vector<std::uint64_t>& GrammarStage::mask(std::uint32_t state) {
  if (auto it = masks_.find(state); it != masks_.end()) return it->second;
  const grammar::Vocabulary& vocab = *constraint_->vocabulary;
  std::vector<std::uint64_t> bits;
  // Inside a long bounded repetition (a string's maxLength: every character a new state), the
  // short tokens are allowed as in the state with fewer rounds left, whose mask is shared; only
  // the long tokens are walked with this state.
  const std::uint32_t shared = space_.clamped(state, static_cast<int>(vocab.short_limit()) + 1);
  if (shared != state) {
    bits = mask(shared);  // a copy
    const std::vector<std::uint64_t>& short_tokens = vocab.short_tokens();
    for (std::size_t w = 0; w < bits.size(); ++w) bits[w] &= short_tokens[w];
    vocab.add_allowed_long(space_, state, bits);
  } else {
    vocab.allowed(space_, state, bits);
  }
  if (masks_.size() >= kMaxMasks) masks_.clear();
  return masks_.emplace(state, std::move(bits)).first->second;
}

void GrammarStage::apply(std::span<float> scores, const TokenHistory& history) {
  const std::uint32_t state = sync(history.generated());
  const std::vector<std::uint64_t>& bits = mask(state);
  const std::size_t n = scores.size();
  // End-of-sequence tokens are special (never in a mask): they keep their score only where the
  // grammar's text is complete.
  const bool can_end = space_.can_end(state);
  std::vector<float> eos_scores(eos_.size());
  const std::size_t kept = eos_.size();
  for (std::size_t i = 0; i < kept; ++i)
    eos_scores[i] = eos_[i] >= 0 && static_cast<std::size_t>(eos_[i]) < n ? scores[eos_[i]] : 0;
  for (std::size_t w = 0; w * 64 < n; ++w) {
    const std::uint64_t word = w < bits.size() ? bits[w] : 0;
    if (word == ~std::uint64_t{0}) continue;
    const std::size_t end = std::min(n, w * 64 + 64);
    for (std::size_t i = w * 64; i < end; ++i)
      if (!(word >> (i - w * 64) & 1)) scores[i] = kFilterValue;
  }
  if (can_end)
    for (std::size_t i = 0; i < kept; ++i)
      if (eos_[i] >= 0 && static_cast<std::size_t>(eos_[i]) < n) scores[eos_[i]] = eos_scores[i];
}

std::string GrammarStage::describe() const {
  return fmt::format("grammar({})", constraint_->description);
}

}  // namespace ls::decode
