// Which stages run, in which order. Presets reproduce transformers' generate() order (processors,
// then warpers: temperature, top_k, top_p, min_p, typical_p, epsilon, eta), vLLM's sampler
// (penalties, temperature, min_p, top_k/top_p) and llama.cpp's default chain (penalties, dry,
// top_n_sigma, top_k, typical, top_p, min_p, xtc, temperature last), with their tie rules;
// llama.cpp's top_n_sigma sits after temperature in the other two, and dry with the penalties.
// `order` re-sequences the named stages among the positions they hold in the preset; unnamed stages
// keep their place.
#pragma once

#include <string>
#include <string_view>
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
// Whether `stage` stays in the chain when mirostat is on (and sampling). Mirostat is its own
// truncation: top_k, top_p, min_p, typical_p, epsilon, eta, top_n_sigma and XTC leave, and
// temperature stays as a plain division (dynamic temperature off), as in llama.cpp, whose chain
// with mirostat is logit bias, temperature, mirostat. The llama_cpp preset also drops the
// penalties and DRY, as llama.cpp does; hf and vllm keep every processor. Mirostat itself is
// always the last stage, after whatever `order` says.
bool mirostat_keeps(const std::string& stage, const GenerationConfig& config);
// Mirostat's mu at a step depends on every earlier step's distribution and choice, so a tool
// that re-runs one step apart from the run before it (the lens, sweep, the tree's deeper levels)
// only has it right at the first generated token, where mu is 2 tau. Throws, naming `what`, when
// mirostat is on, sampling, and `history` has generated tokens.
void require_mirostat_first_step(const GenerationConfig& config, const TokenHistory& history,
                                 std::string_view what);

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
