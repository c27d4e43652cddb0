// Range checks for GenerationConfig and the decoding mode it implies. Every message names the
// flag or the generation_config.json field that set the bad value (config.origin_of).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "decode/generation_config.h"
#include "decode/order.h"

namespace ls::decode {

namespace {

void check(const GenerationConfig& c, std::string_view field, double value, bool ok,
           std::string_view expected) {
  if (!ok || std::isnan(value)) {
    fail("{} must be {}, got {}", c.origin_of(field), expected, value);
  }
}

}  // namespace

void validate(const GenerationConfig& c) {
  check(c, "temperature", c.temperature,
        std::isfinite(c.temperature) && (c.temperature == 0.0 || c.temperature >= kMinTemperature),
        "0 (greedy) or a finite number >= 1e-4");
  for (const std::int32_t id : c.eos_token_id)
    if (id < 0) fail("{} must hold token ids >= 0, got {}", c.origin_of("eos_token_id"), id);
  if (c.constraint && c.eos_token_id.empty())
    fail("a grammar ({}) needs an end-of-sequence token to end its text: eos_token_id is empty",
         c.constraint->description);
  check(c, "top_k", c.top_k, c.top_k >= 0, ">= 0 (0 turns top-k off)");
  check(c, "top_p", c.top_p, c.top_p >= 0.0 && c.top_p <= 1.0, "in [0, 1] (1 turns top-p off)");
  check(c, "min_p", c.min_p, c.min_p >= 0.0 && c.min_p <= 1.0, "in [0, 1] (0 turns min-p off)");
  check(c, "typical_p", c.typical_p, c.typical_p > 0.0 && c.typical_p <= 1.0,
        "in (0, 1] (1 turns typical sampling off)");
  check(c, "epsilon_cutoff", c.epsilon_cutoff, c.epsilon_cutoff >= 0.0 && c.epsilon_cutoff < 1.0,
        "in [0, 1) (0 turns it off)");
  check(c, "eta_cutoff", c.eta_cutoff, c.eta_cutoff >= 0.0 && c.eta_cutoff < 1.0,
        "in [0, 1) (0 turns it off)");
  check(c, "top_n_sigma", c.top_n_sigma, std::isfinite(c.top_n_sigma),
        "a finite number (<= 0 turns it off)");
  check(c, "dynatemp_range", c.dynatemp_range,
        std::isfinite(c.dynatemp_range) && c.dynatemp_range >= 0.0, ">= 0 (0 turns it off)");
  check(c, "dynatemp_exponent", c.dynatemp_exponent,
        std::isfinite(c.dynatemp_exponent) && c.dynatemp_exponent >= 0.0, "a finite number >= 0");
  check(c, "xtc_probability", c.xtc_probability,
        c.xtc_probability >= 0.0 && c.xtc_probability <= 1.0, "in [0, 1] (0 turns it off)");
  check(c, "xtc_threshold", c.xtc_threshold, c.xtc_threshold >= 0.0 && c.xtc_threshold <= 1.0,
        "in [0, 1] (above 0.5 it never acts)");
  check(c, "dry_multiplier", c.dry_multiplier,
        std::isfinite(c.dry_multiplier) && c.dry_multiplier >= 0.0,
        "a finite number >= 0 (0 turns DRY off)");
  check(c, "dry_base", c.dry_base, std::isfinite(c.dry_base) && c.dry_base >= 1.0,
        "a finite number >= 1");
  check(c, "dry_allowed_length", c.dry_allowed_length, c.dry_allowed_length >= 0, ">= 0");
  check(c, "dry_penalty_last_n", c.dry_penalty_last_n, c.dry_penalty_last_n >= -1,
        ">= -1 (-1: the whole history, 0 turns DRY off)");
  check(c, "mirostat", c.mirostat, c.mirostat >= 0 && c.mirostat <= 2,
        "0 (off), 1 or 2 (the version)");
  check(c, "mirostat_tau", c.mirostat_tau, std::isfinite(c.mirostat_tau) && c.mirostat_tau >= 0.0,
        "a finite number >= 0 (bits)");
  check(c, "mirostat_eta", c.mirostat_eta, std::isfinite(c.mirostat_eta) && c.mirostat_eta >= 0.0,
        "a finite number >= 0");
  check(c, "repetition_penalty", c.repetition_penalty,
        std::isfinite(c.repetition_penalty) && c.repetition_penalty > 0.0,
        "a finite number > 0 (1 turns it off)");
  check(c, "presence_penalty", c.presence_penalty, std::isfinite(c.presence_penalty),
        "a finite number");
  check(c, "frequency_penalty", c.frequency_penalty, std::isfinite(c.frequency_penalty),
        "a finite number");
  check(c, "length_penalty", c.length_penalty, std::isfinite(c.length_penalty), "a finite number");
  check(c, "repeat_last_n", c.repeat_last_n, c.repeat_last_n >= -1,
        ">= -1 (-1: the default span, 0: the penalties see no tokens)");
  check(c, "min_keep", c.min_keep, c.min_keep >= 0, ">= 0");
  check(c, "no_repeat_ngram_size", c.no_repeat_ngram_size, c.no_repeat_ngram_size >= 0, ">= 0");
  // A request (the server's max_tokens 0) may ask for no new token: its run scores the prompt
  // and ends at once. Flags and generation_config.json keep transformers' rule.
  const bool prompt_only_allowed = c.source_of("max_new_tokens") == "request";
  check(c, "max_new_tokens", c.max_new_tokens, c.max_new_tokens >= (prompt_only_allowed ? 0 : 1),
        prompt_only_allowed ? ">= 0" : ">= 1");
  check(c, "max_length", c.max_length, c.max_length >= 0, ">= 0");
  check(c, "min_length", c.min_length, c.min_length >= 0, ">= 0");
  check(c, "min_new_tokens", c.min_new_tokens, c.min_new_tokens >= 0, ">= 0");
  check(c, "num_beams", c.num_beams, c.num_beams >= 1, ">= 1");
  check(c, "num_return_sequences", c.num_return_sequences, c.num_return_sequences >= 1, ">= 1");
  for (const auto& b : c.sequence_bias) {
    if (std::isnan(b.bias)) fail("{}: a bias is nan", c.origin_of("sequence_bias"));
  }
  for (const auto& [id, b] : c.logit_bias) {
    if (std::isnan(b)) fail("{}: the bias of token {} is nan", c.origin_of("logit_bias"), id);
  }
  if (c.num_beams > 1 && c.num_return_sequences > c.num_beams) {
    fail("{} ({}) must be <= {} ({}): beam search returns its best finished beams",
         c.origin_of("num_return_sequences"), c.num_return_sequences, c.origin_of("num_beams"),
         c.num_beams);
  }
  if (c.mirostat != 0 && c.num_beams > 1) {
    fail(
        "{} ({}) cannot be used with beam search ({} {}): mirostat's mu follows one sequence's "
        "chosen tokens, and beams are ranked, not drawn; use mirostat 0 or num_beams 1",
        c.origin_of("mirostat"), c.mirostat, c.origin_of("num_beams"), c.num_beams);
  }
  if (decode_mode(c) == DecodeMode::greedy && c.num_return_sequences > 1) {
    fail(
        "{} is {} but greedy decoding gives one sequence; sample (--do-sample true) or use "
        "beam search (--num-beams)",
        c.origin_of("num_return_sequences"), c.num_return_sequences);
  }
  resolve_order(c);  // throws for unknown or repeated stage names
}

DecodeMode decode_mode(const GenerationConfig& c) {
  const bool sample = c.do_sample && c.temperature > 0.0;
  if (c.num_beams > 1) return sample ? DecodeMode::beam_sample : DecodeMode::beam_search;
  return sample ? DecodeMode::sample : DecodeMode::greedy;
}

bool dry_active(const GenerationConfig& c) {
  return c.dry_multiplier != 0.0 && c.dry_penalty_last_n != 0;
}

bool dry_needs_breakers(const GenerationConfig& c) {
  return dry_active(c) &&
         std::any_of(c.dry_sequence_breakers.begin(), c.dry_sequence_breakers.end(),
                     [](const std::string& s) { return !s.empty(); });
}

std::string to_string(DecodeMode mode) {
  switch (mode) {
    case DecodeMode::greedy:
      return "greedy";
    case DecodeMode::sample:
      return "sample";
    case DecodeMode::beam_search:
      return "beam_search";
    case DecodeMode::beam_sample:
      return "beam_sample";
  }
  return "?";
}

std::string to_string(OrderPreset preset) {
  switch (preset) {
    case OrderPreset::hf:
      return "hf";
    case OrderPreset::vllm:
      return "vllm";
    case OrderPreset::llama_cpp:
      return "llama.cpp";
  }
  return "?";
}

int max_new_tokens_for(const GenerationConfig& c, std::size_t prompt_len) {
  // transformers: an explicit max_new_tokens wins over max_length.
  if (c.source_of("max_new_tokens") == "default" && c.max_length > 0) {
    const long remaining = static_cast<long>(c.max_length) - static_cast<long>(prompt_len);
    return remaining > 0 ? static_cast<int>(remaining) : 0;
  }
  return c.max_new_tokens;
}

}  // namespace ls::decode
