// A progress line on stderr for runs that take a while: "generate  37/256 tokens · 12.4 tok/s ·
// ETA 18 s", redrawn at most 5 times a second. It appears only when stderr is a terminal and the
// run has lasted ~2 s (LS_PROGRESS_DELAY_MS sets that delay, e.g. 0 in tests), so pipes, logs
// and quick runs never see it, and it is erased when the run ends.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "decode/logits_source.h"

namespace ls::app {

class Progress {
 public:
  // `total`: the expected count (an upper bound is fine: ETA then errs long); `unit`: its name.
  Progress(std::string label, std::size_t total, std::string unit = "tokens");
  ~Progress();  // erases the line if one was drawn
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(std::size_t n = 1);
  std::size_t done() const { return done_; }

 private:
  using Clock = std::chrono::steady_clock;
  void draw(Clock::time_point now);

  std::string label_, unit_;
  std::size_t total_, done_ = 0;
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point start_, last_draw_;
  std::chrono::milliseconds delay_;
};

// A logits source that advances a progress line by one for every step (forward pass) it passes
// on: compare and sweep step their sources once per position.
class ProgressSource final : public decode::LogitsSource {
 public:
  ProgressSource(decode::LogitsSource& inner, Progress& progress)
      : inner_(inner), progress_(progress) {}
  std::int32_t vocab_size() const override { return inner_.vocab_size(); }
  std::int32_t context_limit() const override { return inner_.context_limit(); }
  std::vector<std::span<const float>> step(std::span<const decode::Feed> feeds) override {
    auto scores = inner_.step(feeds);
    progress_.advance();
    return scores;
  }
  void fork(int from_seq, int to_seq) override { inner_.fork(from_seq, to_seq); }
  void release(int seq) override { inner_.release(seq); }

 private:
  decode::LogitsSource& inner_;
  Progress& progress_;
};

}  // namespace ls::app
