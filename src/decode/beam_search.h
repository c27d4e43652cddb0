// Beam search with transformers' semantics (its current vectorised _beam_search): scores are
// log_softmax'ed, processed, added to each beam's running sum; the best (max(2, 1 + #eos) x
// num_beams) continuations are ranked; those among the first num_beams that end (EOS, stop
// string, length) enter the finished set with score sum / generated_length^length_penalty
// (generated_length counts the final token); the best num_beams unfinished ones continue.
// early_stopping true/false/"never" follow transformers' stopping heuristics.
#pragma once

#include "decode/generate.h"

namespace ls::decode {

// Called by generate() for num_beams > 1; `run` carries mode and seed in, results out.
GenerationRun beam_search(LogitsSource& source, std::span<const std::int32_t> prompt,
                          const GenerationConfig& config, const GenerateOptions& options,
                          GenerationRun run);

}  // namespace ls::decode
