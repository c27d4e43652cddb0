// Which stages run, in which order. Presets reproduce transformers' generate() order (processors,
// then warpers: temperature, top_k, top_p, min_p, typical_p, epsilon, eta), vLLM's sampler
// (penalties, temperature, min_p, top_k/top_p) and llama.cpp's default chain (penalties,
// top_n_sigma, top_k, typical, top_p, min_p, temperature last), with their tie rules;
// llama.cpp's top_n_sigma sits after temperature in the other two. `order` re-sequences the named
// stages among the positions they hold in the preset; unnamed stages keep their place.
#pragma once

#include <string>
#include <vector>

#include "decode/chain.h"
#include "decode/generation_config.h"

namespace ls::decode {

// Every stage name of the preset, active or not.
std::vector<std::string> preset_order(OrderPreset preset);
// The preset with config.order applied; throws for unknown or repeated names.
std::vector<std::string> resolve_order(const GenerationConfig& config);
// Warpers only run when sampling (transformers skips them for greedy and beam search).
bool is_warper(const std::string& stage);

struct ChainOptions {
  std::int32_t vocab_size = 0;
  bool include_warpers = true;
  int min_tokens_to_keep = 1;  // transformers uses #eos + 1 for beam sampling
  // The sequence's seed and random stream: XTC's coins (xtc.h) are drawn from them.
  std::uint64_t seed = 0;
  int stream = 0;
};
// The active stages of `config` in resolved order (inactive ones, e.g. top_p=1, are left out).
ProcessorChain build_chain(const GenerationConfig& config, const ChainOptions& options);

}  // namespace ls::decode
