// Greedy and sampling generation loop (beam search lives in beam_search.cpp).
#include "decode/generate.h"

#include <algorithm>
#include <random>

#include "core/error.h"
#include "decode/beam_search.h"
#include "decode/choose.h"
#include "decode/distribution.h"
#include "decode/order.h"
#include "decode/rng.h"
#include "decode/text_stream.h"
#include "decode/trace_json.h"

namespace ls::decode {

std::string to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::eos:
      return "eos";
    case FinishReason::stop_string:
      return "stop_string";
    case FinishReason::length:
      return "length";
    case FinishReason::context_limit:
      return "context_limit";
  }
  return "?";
}

std::uint64_t random_seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

namespace {

// Generates returned sequence `seq`; every sequence runs in turn on source sequence 0.
GenerationResult run_one(LogitsSource& source, int seq, std::span<const std::int32_t> prompt,
                         const GenerationConfig& config, const GenerateOptions& options,
                         ProcessorChain& chain, Rng& rng, DecodeMode mode) {
  GenerationResult result;
  const int max_new = max_new_tokens_for(config, prompt.size());
  std::vector<std::int32_t> tokens(prompt.begin(), prompt.end());
  TextStream stream(config.stop_strings);
  chain.reset();
  source.reset(0);
  std::span<const float> raw = source.feed(0, prompt);
  std::vector<float> work;
  std::vector<float> before;
  const bool tracing = static_cast<bool>(options.on_step);
  bool stopped = false;
  result.message = fmt::format("reached max_new_tokens ({})", max_new);
  for (int step = 0; step < max_new; ++step) {
    if (options.context_limit > 0 &&
        tokens.size() >= static_cast<std::size_t>(options.context_limit)) {
      result.finish = FinishReason::context_limit;
      result.message = fmt::format(
          "stopped at the model's context limit: {} tokens (prompt {} + generated {}) fill its {} "
          "positions",
          tokens.size(), prompt.size(), tokens.size() - prompt.size(), options.context_limit);
      stopped = true;
      break;
    }
    if (raw.size() != static_cast<std::size_t>(source.vocab_size())) {
      fail("the logits source returned {} scores, expected vocab_size {}", raw.size(),
           source.vocab_size());
    }
    work.assign(raw.begin(), raw.end());
    const TokenHistory history{tokens, prompt.size()};
    StepTrace trace;
    if (tracing) {
      trace.sequence = seq;
      trace.step = step;
      trace.mode = to_string(mode);
      trace_raw(trace, raw, options.trace_top_n);
      before = work;
      chain.apply_observed(
          work, history, [&](const LogitsProcessor& stage, std::span<const float> after) {
            trace.stages.push_back(trace_stage(stage, before, after, options.trace_top_n));
            before.assign(after.begin(), after.end());
          });
    } else {
      chain.apply(work, history);
    }
    std::int32_t token = 0;
    if (mode == DecodeMode::sample) {
      const double draw = rng.uniform();
      token = choose_sample(work, draw);
      trace.draw = draw;
    } else {
      token = choose_greedy(work);
    }
    result.logprob += static_cast<double>(raw[token]) - log_sum_exp(raw);
    result.processed_logprob += static_cast<double>(work[token]) - log_sum_exp(work);
    tokens.push_back(token);
    result.tokens.push_back(token);
    chain.accept(token);
    if (tracing) {
      trace_choice(trace, raw, work, token);
      trace.sequence_logprob = result.logprob;
      options.on_step(trace);
    }
    if (std::find(config.eos_token_id.begin(), config.eos_token_id.end(), token) !=
        config.eos_token_id.end()) {
      result.finish = FinishReason::eos;
      result.message = fmt::format("generated EOS token {}", token);
      stopped = true;
      break;
    }
    if (options.token_bytes) {
      auto update = stream.push(options.token_bytes(token));
      if (!update.text.empty() && options.on_text) options.on_text(seq, update.text);
      if (update.stopped) {
        result.finish = FinishReason::stop_string;
        result.message =
            fmt::format("the text contains the stop string \"{}\"", sanitize_utf8(update.stop));
        stopped = true;
        break;
      }
    }
    if (step + 1 < max_new) raw = source.feed(0, std::span<const std::int32_t>(&token, 1));
  }
  if (!stopped) result.finish = FinishReason::length;
  if (result.finish != FinishReason::stop_string) {
    const std::string rest = stream.finish();
    if (!rest.empty() && options.on_text) options.on_text(seq, rest);
  }
  result.text = stream.emitted();
  result.score = result.logprob;
  return result;
}

}  // namespace

GenerationRun generate(LogitsSource& source, std::span<const std::int32_t> prompt,
                       const GenerationConfig& config, const GenerateOptions& options) {
  validate(config);
  if (prompt.empty()) {
    fail("generate: the prompt is empty; Qwen models add no BOS token, so give at least one token");
  }
  if (options.context_limit > 0 &&
      prompt.size() >= static_cast<std::size_t>(options.context_limit)) {
    fail(
        "the prompt has {} tokens but the model's context holds {} positions "
        "(max_position_embeddings): no room to generate; shorten the prompt",
        prompt.size(), options.context_limit);
  }
  if (!config.stop_strings.empty() && !options.token_bytes) {
    fail("stop strings need token text: the generation loop was given no token_bytes callback");
  }
  GenerationRun run;
  run.mode = decode_mode(config);
  run.seed = config.seed ? *config.seed : random_seed();
  if (run.mode == DecodeMode::beam_search || run.mode == DecodeMode::beam_sample) {
    return beam_search(source, prompt, config, options, run);
  }
  ProcessorChain chain = build_chain(
      config, {source.vocab_size(), /*include_warpers=*/run.mode == DecodeMode::sample, 1});
  run.chain = chain.describe();
  if (options.on_header) {
    options.on_header(header_json(config, run.mode, run.seed, chain, prompt.size()));
  }
  Rng rng(run.seed);
  for (int i = 0; i < config.num_return_sequences; ++i) {
    run.sequences.push_back(run_one(source, i, prompt, config, options, chain, rng, run.mode));
  }
  return run;
}

}  // namespace ls::decode
