// Stage presets, --order re-sequencing and the chain factory (see order.h).
#include "decode/order.h"

#include <algorithm>
#include <memory>

#include <fmt/ranges.h>

#include "core/error.h"
#include "decode/cutoff.h"
#include "decode/dry.h"
#include "decode/dynamic_temperature.h"
#include "decode/grammar_stage.h"
#include "decode/inf_nan.h"
#include "decode/min_length.h"
#include "decode/min_p.h"
#include "decode/mirostat.h"
#include "decode/no_repeat_ngram.h"
#include "decode/penalties.h"
#include "decode/temperature.h"
#include "decode/top_k.h"
#include "decode/top_n_sigma.h"
#include "decode/top_p.h"
#include "decode/typical_p.h"
#include "decode/xtc.h"

namespace ls::decode {

std::vector<std::string> preset_order(OrderPreset preset) {
  switch (preset) {
    case OrderPreset::hf:
      // transformers' _get_logits_processor; presence/frequency (not in transformers) sit with
      // the other repetition penalty.
      return {"sequence_bias",
              "repetition_penalty",
              "presence_penalty",
              "frequency_penalty",
              "dry",
              "no_repeat_ngram_size",
              "bad_words_ids",
              "min_length",
              "min_new_tokens",
              "remove_invalid_values",
              "suppress_tokens",
              "temperature",
              "top_n_sigma",
              "top_k",
              "top_p",
              "min_p",
              "typical_p",
              "epsilon_cutoff",
              "eta_cutoff",
              "xtc"};
    case OrderPreset::vllm:
      // vLLM's sampler: bad words and min_tokens, logit bias, penalties (repetition, then
      // frequency and presence), then temperature, min_p, top_k/top_p.
      return {"bad_words_ids",
              "min_length",
              "min_new_tokens",
              "sequence_bias",
              "repetition_penalty",
              "frequency_penalty",
              "presence_penalty",
              "dry",
              "no_repeat_ngram_size",
              "suppress_tokens",
              "remove_invalid_values",
              "temperature",
              "top_n_sigma",
              "min_p",
              "top_k",
              "top_p",
              "typical_p",
              "epsilon_cutoff",
              "eta_cutoff",
              "xtc"};
    case OrderPreset::llama_cpp:
      // llama.cpp's default sampler chain: logit bias, penalties, dry, top_k, typical, top_p,
      // min_p, xtc, temperature last.
      return {"sequence_bias",
              "bad_words_ids",
              "min_length",
              "min_new_tokens",
              "suppress_tokens",
              "repetition_penalty",
              "frequency_penalty",
              "presence_penalty",
              "dry",
              "no_repeat_ngram_size",
              "remove_invalid_values",
              "top_n_sigma",
              "top_k",
              "typical_p",
              "top_p",
              "min_p",
              "epsilon_cutoff",
              "eta_cutoff",
              "xtc",
              "temperature"};
  }
  return {};
}

std::vector<std::string> resolve_order(const GenerationConfig& config) {
  std::vector<std::string> order = preset_order(config.order_preset);
  if (config.order.empty()) return order;
  std::vector<std::string> wanted;
  for (std::string name : config.order) {
    std::replace(name.begin(), name.end(), '-', '_');
    if (name == "typical") name = "typical_p";
    if (name == "no_repeat_ngram") name = "no_repeat_ngram_size";
    if (name == "bad_words") name = "bad_words_ids";
    if (std::find(order.begin(), order.end(), name) == order.end()) {
      fail("{}: unknown stage '{}'; stages are {}", config.origin_of("order"), name,
           fmt::join(order, ","));
    }
    if (std::find(wanted.begin(), wanted.end(), name) != wanted.end()) {
      fail("{}: stage '{}' is named twice", config.origin_of("order"), name);
    }
    wanted.push_back(name);
  }
  // The slots the named stages occupy in the preset receive them in the requested order.
  std::size_t next = 0;
  for (auto& slot : order) {
    if (std::find(wanted.begin(), wanted.end(), slot) != wanted.end()) slot = wanted[next++];
  }
  return order;
}

bool mirostat_keeps(const std::string& stage, const GenerationConfig& config) {
  if (stage == "temperature") return true;
  if (is_warper(stage)) return false;
  // llama.cpp's mirostat chain has logit bias, temperature and mirostat: no penalties, no DRY.
  return config.order_preset != OrderPreset::llama_cpp ||
         (stage != "repetition_penalty" && stage != "presence_penalty" &&
          stage != "frequency_penalty" && stage != "dry");
}

void require_mirostat_first_step(const GenerationConfig& config, const TokenHistory& history,
                                 std::string_view what) {
  if (config.mirostat == 0 || decode_mode(config) != DecodeMode::sample) return;
  if (history.generated().empty()) return;
  fail(
      "{}: mirostat ({} {}) carries mu from step to step, but this step (generated token {}) is "
      "re-run apart from the steps before it, where mu would start afresh at 2 tau; use "
      "mirostat 0, or the first generated token",
      what, config.origin_of("mirostat"), config.mirostat, history.generated().size());
}

bool is_warper(const std::string& stage) {
  static const std::vector<std::string> warpers = {"temperature",    "top_n_sigma", "top_k",
                                                   "top_p",          "min_p",       "typical_p",
                                                   "epsilon_cutoff", "eta_cutoff",  "xtc"};
  return std::find(warpers.begin(), warpers.end(), stage) != warpers.end();
}

namespace {

std::unique_ptr<LogitsProcessor> make_stage(const std::string& name, const GenerationConfig& c,
                                            const ChainOptions& o) {
  const bool llama = c.order_preset == OrderPreset::llama_cpp;
  const int keep = std::max(o.min_tokens_to_keep, c.min_keep);
  if (name == "sequence_bias" && (!c.sequence_bias.empty() || !c.logit_bias.empty())) {
    std::vector<BiasedSequence> all = c.sequence_bias;
    for (auto [id, bias] : c.logit_bias) all.push_back({{id}, bias});
    return std::make_unique<SequenceBias>(std::move(all), o.vocab_size);
  }
  if (name == "repetition_penalty" && c.repetition_penalty != 1.0) {
    return std::make_unique<RepetitionPenalty>(c.repetition_penalty, c.repeat_last_n);
  }
  if (name == "presence_penalty" && c.presence_penalty != 0.0) {
    return std::make_unique<PresencePenalty>(c.presence_penalty, c.repeat_last_n);
  }
  if (name == "frequency_penalty" && c.frequency_penalty != 0.0) {
    return std::make_unique<FrequencyPenalty>(c.frequency_penalty, c.repeat_last_n);
  }
  if (name == "dry" && dry_active(c)) {
    if (dry_needs_breakers(c) &&
        (!c.dry_breakers || c.dry_breakers->strings != c.dry_sequence_breakers))
      fail(
          "{}: DRY's sequence breakers are text and need the model's tokenizer to become tokens, "
          "which this command has not got; give the model, or no breakers "
          "(--dry-sequence-breaker '')",
          c.origin_of("dry_sequence_breakers"));
    return std::make_unique<Dry>(c.dry_multiplier, c.dry_base, c.dry_allowed_length,
                                 c.dry_penalty_last_n,
                                 dry_needs_breakers(c) ? c.dry_breakers : nullptr);
  }
  if (name == "no_repeat_ngram_size" && c.no_repeat_ngram_size > 0) {
    return std::make_unique<NoRepeatNgram>(c.no_repeat_ngram_size);
  }
  if (name == "bad_words_ids" && !c.bad_words_ids.empty()) {
    return make_bad_words(c.bad_words_ids, c.eos_token_id, o.vocab_size);
  }
  if (name == "min_length" && c.min_length > 0 && !c.eos_token_id.empty()) {
    return std::make_unique<MinLength>(c.min_length, c.eos_token_id, false);
  }
  if (name == "min_new_tokens" && c.min_new_tokens > 0 && !c.eos_token_id.empty()) {
    return std::make_unique<MinLength>(c.min_new_tokens, c.eos_token_id, true);
  }
  if (name == "remove_invalid_values" && c.remove_invalid_values) {
    return std::make_unique<InfNanRemove>();
  }
  if (name == "suppress_tokens" && !c.suppress_tokens.empty()) {
    return std::make_unique<SuppressTokens>(c.suppress_tokens, o.vocab_size);
  }
  if (!o.include_warpers) return nullptr;
  if (c.mirostat != 0) {  // temperature alone (llama.cpp's plain one), then mirostat
    if (name == "temperature" && c.temperature != 1.0 && c.temperature > 0.0)
      return std::make_unique<Temperature>(c.temperature);
    return nullptr;
  }
  if (name == "temperature" && c.temperature > 0.0 && c.dynatemp_range > 0.0) {
    return std::make_unique<DynamicTemperature>(c.temperature, c.dynatemp_range,
                                                c.dynatemp_exponent);
  }
  if (name == "temperature" && c.temperature != 1.0 && c.temperature > 0.0) {
    return std::make_unique<Temperature>(c.temperature);
  }
  if (name == "top_n_sigma" && c.top_n_sigma > 0.0)
    return std::make_unique<TopNSigma>(c.top_n_sigma);
  // llama.cpp's top_k ignores min_keep (transformers' keeps at least min_tokens_to_keep).
  if (name == "top_k" && c.top_k != 0)
    return std::make_unique<TopK>(c.top_k, llama ? o.min_tokens_to_keep : keep, !llama);
  if (name == "top_p" && c.top_p < 1.0) {
    return std::make_unique<TopP>(c.top_p, keep, llama ? TopPRule::llama_cpp : TopPRule::hf);
  }
  if (name == "min_p" && c.min_p > 0.0) return std::make_unique<MinP>(c.min_p, keep);
  if (name == "typical_p" && c.typical_p < 1.0)
    return std::make_unique<TypicalP>(c.typical_p, keep);
  if (name == "epsilon_cutoff" && c.epsilon_cutoff > 0.0) {
    return std::make_unique<EpsilonCutoff>(c.epsilon_cutoff, keep);
  }
  if (name == "eta_cutoff" && c.eta_cutoff > 0.0)
    return std::make_unique<EtaCutoff>(c.eta_cutoff, keep);
  if (name == "xtc" && c.xtc_probability > 0.0 && c.xtc_threshold <= 0.5)
    return std::make_unique<Xtc>(c.xtc_probability, c.xtc_threshold, keep, o.seed, o.stream);
  return nullptr;
}

}  // namespace

ProcessorChain build_chain(const GenerationConfig& config, const ChainOptions& options) {
  ProcessorChain chain;
  // The grammar first, in every preset: the other stages choose among valid tokens only.
  if (config.constraint)
    chain.add(std::make_unique<GrammarStage>(config.constraint, config.eos_token_id));
  for (const auto& name : resolve_order(config)) {
    if (config.mirostat != 0 && options.include_warpers && !mirostat_keeps(name, config)) continue;
    if (auto stage = make_stage(name, config, options)) chain.add(std::move(stage));
  }
  if (config.mirostat != 0 && options.include_warpers)
    chain.add(std::make_unique<Mirostat>(config.mirostat, config.mirostat_tau, config.mirostat_eta,
                                         options.vocab_size));
  return chain;
}

}  // namespace ls::decode
