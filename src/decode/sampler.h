// One token's choice, as every command makes it: the processor chain over the raw scores, the
// choice (greedy argmax or a seeded inverse-CDF draw), the log-probability bookkeeping and
// accept(), behind one call. generate, seeds, replay, sweep and compare all choose through a
// Sampler; beam search ranks its candidates from Sampler::process. Each sequence has its own
// Sampler (its chain's state and its own random stream), so sequences stepped together choose
// exactly as they would alone.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "decode/chain.h"
#include "decode/generation_config.h"
#include "decode/logprobs.h"
#include "decode/rng.h"
#include "decode/trace.h"

namespace ls::decode {

// How to choose: a trace to fill, a draw to use instead of the sampler's own (replay reuses a
// recorded one), and whether to accept() the chosen token (replay accepts the recorded one).
struct ChoiceOptions {
  StepTrace* trace = nullptr;
  int trace_top_n = 5;
  std::optional<double> draw;
  bool accept = true;
  // The raw log-probability costs a log-sum-exp over the whole vocabulary; a caller that
  // reports none (the server without raw logprobs) asks for none: when logprobs.needs_raw() is
  // false, Choice::raw_logprob is 0.
  LogprobRequest logprobs{.wanted = true};
};

struct Choice {
  std::int32_t token = -1;
  double raw_logprob = 0;  // log_softmax of the raw scores at the token: the model's view
  double logprob = 0;      // log_softmax of the processed scores: the distribution drawn from
  // The log-sum-exps behind them, for callers that want other tokens' logprobs too (raw: 0
  // when ChoiceOptions::logprobs did not need them).
  double raw_log_sum_exp = 0;
  double log_sum_exp = 0;
  std::optional<double> draw;
};

class Sampler {
 public:
  // mode greedy or sample (beam modes use process() only). The sequence draws from random stream
  // `stream` of `seed` (Rng::stream), and so do its chain's random stages (XTC's coins).
  // `stream_rng`, when given, is Rng::stream(seed, stream) already: a caller stepping through
  // many streams jumps once per stream instead of `stream` times per sequence.
  Sampler(const GenerationConfig& config, DecodeMode mode, std::int32_t vocab_size,
          std::uint64_t seed, int stream = 0, int min_tokens_to_keep = 1,
          std::optional<Rng> stream_rng = std::nullopt);
  // Greedy with no stages: the raw argmax (lowest id on ties), as the lab's continuations use.
  static Sampler raw_argmax(std::int32_t vocab_size);

  // Chain, choice, accept. When options.trace is given it receives the raw top, every stage
  // and the choice.
  Choice choose(std::span<const float> raw, const TokenHistory& history,
                const ChoiceOptions& options = {});
  // Tells the chain's stateful stages which token the sequence continues with.
  void accept(std::int32_t token) { chain_.accept(token); }
  // The chain alone over `scores`, in place (beam search, sweep).
  void process(std::span<float> scores, const TokenHistory& history);

  // A uniform draw in [0, 1) from this sequence's stream (beam sampling's picks).
  double draw() { return rng_.uniform(); }

  // The scores after the chain in the last choose() (the final distribution).
  std::span<const float> final_scores() const { return work_; }
  const ProcessorChain& chain() const { return chain_; }
  DecodeMode mode() const { return mode_; }

 private:
  DecodeMode mode_;
  ProcessorChain chain_;
  Rng rng_;
  bool allow_invalid_ = false;  // remove_invalid_values: the chain replaces NaN and infinities
  std::vector<float> work_, before_;
};

}  // namespace ls::decode
