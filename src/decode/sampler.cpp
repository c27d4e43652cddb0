// The per-sequence chain-and-choice object (see sampler.h).
#include "decode/sampler.h"

#include "core/error.h"
#include "decode/choose.h"
#include "decode/distribution.h"
#include "decode/order.h"

namespace ls::decode {

Sampler::Sampler(const GenerationConfig& config, DecodeMode mode, std::int32_t vocab_size,
                 std::uint64_t seed, int stream, int min_tokens_to_keep,
                 std::optional<Rng> stream_rng)
    : mode_(mode),
      chain_(build_chain(config, {vocab_size,
                                  /*include_warpers=*/mode == DecodeMode::sample ||
                                      mode == DecodeMode::beam_sample,
                                  min_tokens_to_keep, seed, stream})),
      rng_(stream_rng ? *stream_rng : Rng::stream(seed, stream)),
      allow_invalid_(config.remove_invalid_values) {}

Sampler Sampler::raw_argmax(std::int32_t vocab_size) {
  GenerationConfig none;  // transformers' defaults: no processor is active in greedy mode
  none.suppress_tokens.clear();
  return Sampler(none, DecodeMode::greedy, vocab_size, 0);
}

void Sampler::process(std::span<float> scores, const TokenHistory& history) {
  chain_.apply(scores, history);
}

Choice Sampler::choose(std::span<const float> raw, const TokenHistory& history,
                       const ChoiceOptions& options) {
  StepTrace* trace = options.trace;
  const int trace_top_n = options.trace_top_n;
  if (!allow_invalid_)
    require_finite_logits(raw, history.tokens.empty() ? 0 : history.tokens.size() - 1,
                          "; remove_invalid_values (--remove-invalid-values) replaces them, as "
                          "transformers does");
  work_.assign(raw.begin(), raw.end());
  if (trace != nullptr) {
    trace->mode = mode_;
    trace_raw(*trace, raw, trace_top_n);
    before_ = work_;
    chain_.apply_observed(
        work_, history, [&](const LogitsProcessor& stage, std::span<const float> after) {
          trace->stages.push_back(trace_stage(stage, before_, after, trace_top_n));
          before_.assign(after.begin(), after.end());
        });
  } else {
    chain_.apply(work_, history);
  }
  Choice c;
  if (mode_ == DecodeMode::sample) {  // the sampling walk's own sum gives the log-sum-exp
    c.draw = options.draw ? *options.draw : rng_.uniform();
    c.token = choose_sample(work_, *c.draw, &c.log_sum_exp);
  } else {
    c.token = choose_greedy(work_);
    c.log_sum_exp = log_sum_exp(work_);
  }
  if (options.logprobs.needs_raw() || trace != nullptr) {
    // No stage: the final scores are the raw ones, bit for bit, and so is their log-sum-exp.
    c.raw_log_sum_exp = chain_.empty() ? c.log_sum_exp : log_sum_exp(raw);
    c.raw_logprob = static_cast<double>(raw[c.token]) - c.raw_log_sum_exp;
  }
  c.logprob = static_cast<double>(work_[c.token]) - c.log_sum_exp;
  if (options.accept) chain_.accept(c.token);
  if (trace != nullptr) {
    trace->draw = c.draw;
    trace_choice(*trace, raw, work_, c.token);
  }
  return c;
}

}  // namespace ls::decode
