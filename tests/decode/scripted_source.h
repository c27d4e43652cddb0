// Test helper: a LogitsSource whose next-token scores are a function of the tokens fed so far,
// so generation, sampling, beam search and stopping can be tested without a model.
#pragma once

#include <algorithm>
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
  std::int32_t context_limit() const override { return limit; }
  std::vector<std::span<const float>> step(std::span<const Feed> feeds) override {
    ++steps;
    max_batch = std::max(max_batch, static_cast<int>(feeds.size()));
    out_.assign(feeds.size(), {});
    std::vector<std::span<const float>> spans;
    for (std::size_t i = 0; i < feeds.size(); ++i) {
      auto& s = seqs_[feeds[i].seq];
      s.insert(s.end(), feeds[i].tokens.begin(), feeds[i].tokens.end());
      max_seq = std::max(max_seq, feeds[i].seq);
      ++feeds_total;
      out_[i] = script_(s);
    }
    for (const auto& o : out_) spans.emplace_back(o);
    return spans;
  }
  void fork(int from_seq, int to_seq) override {
    seqs_[to_seq] = seqs_[from_seq];
    max_seq = std::max(max_seq, to_seq);
  }
  void release(int seq) override { seqs_.erase(seq); }

  std::int32_t limit = 0;  // context_limit(); 0: none
  int feeds_total = 0;     // sequences fed, over all steps
  int steps = 0;           // step() calls
  int max_batch = 0;       // most feeds in one step
  int max_seq = 0;
  std::size_t live() const { return seqs_.size(); }  // sequences not released

 private:
  std::int32_t vocab_;
  Script script_;
  std::map<int, std::vector<std::int32_t>> seqs_;
  std::vector<std::vector<float>> out_;
};

}  // namespace ls::decode::test
