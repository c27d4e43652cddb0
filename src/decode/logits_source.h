// What the generation loop needs from a model: next-token scores for a sequence of tokens. The
// model layer implements it over its KV cache; tests implement it with scripted distributions,
// so processors, samplers, beam search and stopping are testable without a model.
#pragma once

#include <cstdint>
#include <span>

namespace ls::decode {

struct LogitsSource {
  virtual ~LogitsSource() = default;
  virtual std::int32_t vocab_size() const = 0;
  // Appends `tokens` to sequence `seq` and returns the float32 scores (vocab_size of them) for
  // the token that follows. The span stays valid until the next call on this source.
  virtual std::span<const float> feed(int seq, std::span<const std::int32_t> tokens) = 0;
  // Beam search: makes `to_seq` a copy of `from_seq` (its tokens and cached state). Beam search
  // with B beams uses sequence ids 0 .. 2B-1; greedy and sampling use sequence 0 only.
  virtual void fork(int from_seq, int to_seq) = 0;
  // Empties sequence `seq`.
  virtual void reset(int seq) = 0;
};

}  // namespace ls::decode
