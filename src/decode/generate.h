// The model-independent generation loop: asks a LogitsSource for scores, runs the processor
// chain, chooses a token (greedy, seeded sampling, or beam search), streams text with stop
// strings withheld, and stops on EOS, a stop string, max_new_tokens or the context limit.
// Everything a trace shows is handed to callbacks; nothing here prints.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "decode/generation_config.h"
#include "decode/logits_source.h"
#include "decode/trace.h"

namespace ls::decode {

enum class FinishReason { eos, stop_string, length, context_limit };
std::string to_string(FinishReason reason);

struct GenerationResult {
  std::vector<std::int32_t> tokens;  // generated tokens; an EOS that ended the sequence included
  std::string text;                  // what was printed: no EOS text, no stop string or after
  FinishReason finish = FinishReason::length;
  std::string message;           // why it stopped, in words
  double logprob = 0;            // sum of raw (model) logprobs of `tokens`
  double processed_logprob = 0;  // sum of logprobs under the distributions sampled from
  double score = 0;              // beam search: length-penalised score; else = logprob
};

struct GenerateOptions {
  TokenBytesFn token_bytes;  // needed for text output and stop strings
  // Streamed text of sequence i (sampling/greedy: as produced; beam search: once at the end).
  std::function<void(int sequence, std::string_view text)> on_text;
  std::function<void(const nlohmann::json& header)> on_header;  // before the first step
  std::function<void(const StepTrace&)> on_step;                // traces are built only if set
  int trace_top_n = 5;
  std::int32_t context_limit = 0;  // the model's max_position_embeddings; 0: no limit
};

struct GenerationRun {
  DecodeMode mode = DecodeMode::greedy;
  std::uint64_t seed = 0;  // the seed in force (drawn at random when the config had none)
  std::string chain;       // the stages in order, described
  std::vector<GenerationResult> sequences;
};

GenerationRun generate(LogitsSource& source, std::span<const std::int32_t> prompt,
                       const GenerationConfig& config, const GenerateOptions& options);

// A fresh seed from std::random_device (used when none was given; the run reports it).
std::uint64_t random_seed();

}  // namespace ls::decode
