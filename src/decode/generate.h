// The model-independent generation loop. Each Request (a prompt, its settings and callbacks)
// becomes a run:
// greedy or sampled sequences (num_return_sequences of them, forked from one prefilled prompt)
// or a beam search. generate_batch() steps every active sequence of every run together: one
// LogitsSource::step per token, whatever the mix. Each sequence chooses with its own Sampler
// and random stream, so a run's tokens and log-probabilities are the same alone or in a batch.
// Text streams with stop strings withheld; a sequence stops on EOS, a stop string,
// max_new_tokens or the context limit. Everything a trace shows goes to callbacks; nothing here
// prints.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "decode/generation_config.h"
#include "decode/logits_source.h"
#include "decode/logprobs.h"
#include "decode/trace.h"

namespace ls::decode {

enum class FinishReason { eos, stop_string, length, context_limit };
std::string to_string(FinishReason reason);

struct GenerationResult {
  std::vector<std::int32_t> tokens;  // generated tokens; an EOS that ended the sequence included
  std::string text;                  // what was printed: no EOS text, no stop string or after
  FinishReason finish = FinishReason::length;
  std::string message;           // why it stopped, in words
  std::string stop;              // the stop string that ended it (finish stop_string), else ""
  double logprob = 0;            // sum of raw (model) logprobs of `tokens`
  double processed_logprob = 0;  // sum of logprobs under the distributions sampled from
  double score = 0;              // beam search: length-penalised score; else = logprob
};

// What a run is about to do, handed to on_header before its first step.
struct RunHeader {
  DecodeMode mode = DecodeMode::greedy;
  std::uint64_t seed = 0;
  std::string seed_source;  // "flag", "generation_config.json", ... or "random"
  std::size_t prompt_tokens = 0;
  OrderPreset order_preset = OrderPreset::hf;
  std::vector<std::string> order;   // the configured stage order
  std::vector<std::string> stages;  // the active stages, in order
  std::string chain;                // the stages described
  nlohmann::json settings;          // settings_json(config): every field, value and source
};

// One chosen token, for callers that report log-probabilities (the server's logprobs): the raw
// scores and the distribution it was drawn from (after the whole chain), valid during the call.
struct TokenChoice {
  int step = 0;
  std::int32_t token = -1;
  double raw_logprob = 0;
  double logprob = 0;
  double raw_log_sum_exp = 0;  // of `raw` (0 when raw log-probabilities are off)
  double log_sum_exp = 0;      // of `processed`
  std::span<const float> raw;
  std::span<const float> processed;
  std::optional<double> draw;  // the uniform draw sampled with (none for greedy)
};

struct GenerateOptions {
  TokenBytesFn token_bytes;  // needed for text output and stop strings
  // Streamed text of returned sequence i (sampling/greedy: as produced, sequences interleaved
  // when several run together; beam search: once at the end).
  std::function<void(int sequence, std::string_view text)> on_text;
  std::function<void(const RunHeader& header)> on_header;  // before the first step
  std::function<void(const StepTrace&)> on_step;           // traces are built only if set
  // Sampling runs only: each chosen token (before its text), and each sequence's end.
  std::function<void(int sequence, const TokenChoice&)> on_token;
  std::function<void(int sequence, const GenerationResult&)> on_finish;
  int trace_top_n = 5;
  // The log-probabilities the caller reports. Raw ones unless logprobs.needs_raw() is false
  // (the server's clients that ask for none, or for processed ones): GenerationResult::logprob
  // and TokenChoice::raw_logprob are then 0, one log-sum-exp over the vocabulary less per token.
  // Traces still have them.
  LogprobRequest logprobs{.wanted = true};
  // Traces (on_step) also carry the router's choice of each step's input token
  // (StepTrace::experts) when the source is a mixture of experts; greedy and sampling only.
  bool expert_routes = false;
};

struct GenerationRun {
  DecodeMode mode = DecodeMode::greedy;
  std::uint64_t seed = 0;  // the seed in force (drawn at random when the config had none)
  std::string chain;       // the stages in order, described
  std::vector<GenerationResult> sequences;
};

// One generation request: what the CLI's prompts, the lab's seeds and the server's requests
// each turn into. The run it becomes holds each sequence's state (tokens, sampler and random
// stream, text stream, stop state, finish reason) and reports through `options`.
struct Request {
  std::span<const std::int32_t> prompt;  // must outlive the run
  GenerationConfig config;
  GenerateOptions options;
  // The first `cached_prefix` prompt tokens are already in the run's first sequence (the
  // server prefills long prompts in chunks between other requests' steps); sampling runs only.
  std::size_t cached_prefix = 0;
};

// Runs every request to completion, all stepped together; results in request order. Sequence
// ids 0, 1, ... of the source are used (released again when the runs end).
std::vector<GenerationRun> generate_batch(LogitsSource& source, std::span<const Request> requests);
// One request.
GenerationRun generate(LogitsSource& source, std::span<const std::int32_t> prompt,
                       const GenerationConfig& config, const GenerateOptions& options);

// The router's choice of the last token fed to `seq` (LogitsSource::expert_routes) split into
// one row per layer (a dense layer's row empty); empty when the source has none.
std::vector<std::vector<ExpertChoice>> expert_layers(const Sequences& source, int seq);

// A fresh seed from std::random_device (used when none was given; the run reports it).
std::uint64_t random_seed();

}  // namespace ls::decode
