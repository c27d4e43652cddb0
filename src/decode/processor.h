// The interface every logits processor and warper implements. A stage rewrites a full-vocabulary
// span of float scores in place, given the token history (prompt + generated tokens), exactly as
// a transformers LogitsProcessor rewrites its `scores` tensor: removed tokens get -inf
// (transformers' filter_value), nothing is ever erased, so stages compose in any order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

namespace ls::decode {

// The tokens a stage may look at: the prompt followed by the tokens generated so far.
struct TokenHistory {
  std::span<const std::int32_t> tokens;
  std::size_t prompt_len = 0;

  std::span<const std::int32_t> generated() const { return tokens.subspan(prompt_len); }
};

// transformers' filter_value: a removed token scores -inf, so softmax gives it probability 0.
inline constexpr float kFilterValue = -std::numeric_limits<float>::infinity();

class LogitsProcessor {
 public:
  virtual ~LogitsProcessor() = default;

  virtual void apply(std::span<float> scores, const TokenHistory& history) = 0;
  // Called with each chosen token (stateful stages); the built-in stages read the history instead.
  virtual void accept(std::int32_t /*token*/) {}
  // Called before a new sequence starts.
  virtual void reset() {}
  // The stage's name as used by --order, e.g. "top_k".
  virtual std::string name() const = 0;
  // The stage and its parameters for the trace, e.g. "top_k(k=50, keep ties)".
  virtual std::string describe() const = 0;
};

}  // namespace ls::decode
