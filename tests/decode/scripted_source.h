// Test helper: a LogitsSource whose next-token scores are a function of the tokens fed so far,
// so generation, sampling, beam search and stopping can be tested without a model.
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <vector>

#include "decode/logits_source.h"

namespace ls::decode::test {

// Logits whose softmax is exactly `probs` (zero probability -> -inf).
inline std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) {
    out.push_back(p > 0 ? static_cast<float>(std::log(p))
                        : -std::numeric_limits<float>::infinity());
  }
  return out;
}

class ScriptedSource final : public LogitsSource {
 public:
  // `script` maps every token of a sequence so far (prompt included) to the next scores.
  using Script = std::function<std::vector<float>(const std::vector<std::int32_t>& tokens)>;
  ScriptedSource(std::int32_t vocab, Script script) : vocab_(vocab), script_(std::move(script)) {}

  std::int32_t vocab_size() const override { return vocab_; }
  std::span<const float> feed(int seq, std::span<const std::int32_t> tokens) override {
    auto& s = seqs_[seq];
    s.insert(s.end(), tokens.begin(), tokens.end());
    max_seq = std::max(max_seq, seq);
    ++feeds;
    out_ = script_(s);
    return out_;
  }
  void fork(int from_seq, int to_seq) override {
    seqs_[to_seq] = seqs_[from_seq];
    max_seq = std::max(max_seq, to_seq);
  }
  void reset(int seq) override { seqs_[seq].clear(); }

  int feeds = 0;
  int max_seq = 0;

 private:
  std::int32_t vocab_;
  Script script_;
  std::map<int, std::vector<std::int32_t>> seqs_;
  std::vector<float> out_;
};

}  // namespace ls::decode::test
