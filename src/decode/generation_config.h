// GenerationConfig: every decoding parameter, with transformers' GenerationConfig names and
// defaults. Values are layered as generate() layers them: defaults, then the model's
// generation_config.json, then command-line flags; `sources` records where each value came from
// so the trace can state it. validate() rejects bad values with a message naming the flag or the
// file field that set them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "decode/dry_breakers.h"
#include "decode/sequence_bias.h"
#include "grammar/constraint.h"

namespace ls::decode {

enum class EarlyStopping { no, yes, never };  // transformers: False, True, "never"
enum class OrderPreset { hf, vllm, llama_cpp };
enum class DecodeMode { greedy, sample, beam_search, beam_sample };

struct GenerationConfig {
  // Length.
  int max_new_tokens = 256;  // 0 (a server request only): the prompt is scored, nothing generated
  int max_length = 0;        // prompt + generated; used only when max_new_tokens was not given
  int min_length = 0;  // prompt + generated, as transformers counts it for decoder-only models
  int min_new_tokens = 0;
  // Strategy.
  bool do_sample = false;
  int num_beams = 1;
  int num_return_sequences = 1;
  double length_penalty = 1.0;
  EarlyStopping early_stopping = EarlyStopping::no;
  std::optional<std::uint64_t> seed;  // none: the loop draws one and reports it
  // Warpers (applied only when sampling).
  double temperature = 1.0;
  int top_k = 50;
  double top_p = 1.0;
  double min_p = 0.0;
  double typical_p = 1.0;
  double epsilon_cutoff = 0.0;
  double eta_cutoff = 0.0;
  // llama.cpp's: top-n-sigma (<= 0: off) and dynamic temperature (range 0: off).
  double top_n_sigma = -1.0;
  double dynatemp_range = 0.0;
  double dynatemp_exponent = 1.0;
  // llama.cpp's XTC (probability 0: off); its coin comes from the seed (xtc.h).
  double xtc_probability = 0.0;
  double xtc_threshold = 0.1;
  // llama.cpp's min_keep: the truncations (top_p, min_p, typical_p, epsilon/eta, XTC) keep at
  // least this many tokens (0 and 1: one).
  int min_keep = 0;
  // llama.cpp's mirostat (0: off; 1 or 2: the version), its target surprise in bits and its
  // learning rate. On, it replaces the truncation warpers (order.h).
  int mirostat = 0;
  double mirostat_tau = 5.0;
  double mirostat_eta = 0.1;
  // Processors.
  double repetition_penalty = 1.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  // llama.cpp's penalty window: -1 counts as above (repetition over prompt + generated,
  // presence and frequency over generated); n >= 0 makes all three count the last n tokens of
  // prompt + generated, as llama.cpp's penalties sampler (0: none).
  int repeat_last_n = -1;
  int no_repeat_ngram_size = 0;
  // llama.cpp's DRY (multiplier 0: off; penalty_last_n -1: the whole history, 0: off) and its
  // sequence breakers, llama.cpp's defaults.
  double dry_multiplier = 0.0;
  double dry_base = 1.75;
  int dry_allowed_length = 2;
  int dry_penalty_last_n = -1;
  std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};
  std::vector<std::vector<std::int32_t>> bad_words_ids;
  std::vector<BiasedSequence> sequence_bias;
  std::map<std::int32_t, double> logit_bias;  // OpenAI style; joins the sequence_bias stage
  std::vector<std::int32_t> suppress_tokens;
  bool remove_invalid_values = false;
  // Special tokens and stop strings.
  std::vector<std::int32_t> eos_token_id;
  std::int32_t pad_token_id = -1;
  std::int32_t bos_token_id = -1;
  std::vector<std::string> stop_strings;
  // Stage order: a preset, optionally re-sequenced by `order` (see order.h).
  OrderPreset order_preset = OrderPreset::hf;
  std::vector<std::string> order;
  // Constrained decoding (not a generation_config.json field: a flag or a request's
  // response_format / grammar sets it): the chain's first stage removes every token the
  // grammar cannot take next.
  std::shared_ptr<const grammar::Constraint> constraint;
  // dry_sequence_breakers resolved against the model's vocabulary (not a field either: the
  // engine layer, which has the tokenizer, sets it; engine::LoadedModel::dry_breakers).
  std::shared_ptr<const DryBreakers> dry_breakers;

  // field name -> "generation_config.json" or "flag"; absent means "default".
  std::map<std::string, std::string, std::less<>> sources;
  std::string config_path;  // the generation_config.json that was read, for messages

  std::string source_of(std::string_view field) const;
  // How to name a field in an error: "--top-p", "<path> field 'top_p'" or "top_p".
  std::string origin_of(std::string_view field) const;
};

// One settable parameter: its generation_config.json key, its flag and a help line.
struct GenerationField {
  std::string_view name;  // e.g. "top_p"
  std::string_view flag;  // e.g. "--top-p"
  std::string_view help;
  bool repeatable;  // a list flag: each occurrence adds one item
  // Filled by generation_fields(): the value's type for --help ("INT", "FLOAT", "BOOL",
  // "IDS", ...) and transformers' default as JSON ("1.0", "false", "[]").
  std::string type = {};
  std::string default_value = {};
};
std::span<const GenerationField> generation_fields();

// Reads generation_config.json values over `config` (unknown keys are ignored, as transformers
// keeps them as plain attributes). `label` names the file in messages.
void apply_generation_json(GenerationConfig& config, const nlohmann::json& j,
                           const std::string& label);
void load_generation_config(GenerationConfig& config, const std::string& path);
// "" when `text` parses as a value of `field` (an integer, a number, true/false, token ids,
// ...), else what is wrong with it ("expected an integer, got 'abc'"): the flag parser's check.
// For single-number and boolean fields each comma-separated item is checked (sweep takes lists
// of them: --temperature 0.2,0.7).
std::string flag_value_error(std::string_view field, std::string_view text);
// Sets one field from a flag's text, e.g. ("top_p", "0.9"); list fields append on repetition.
void set_from_flag(GenerationConfig& config, std::string_view field, std::string_view value);
// Sets one field from a JSON value through the same table (the server's request fields, checked
// against its own ranges first) and records `source` as where it came from.
void set_field(GenerationConfig& config, std::string_view field, const nlohmann::json& value,
               std::string_view source);

// Throws ls::Error for a negative, NaN or out-of-range value, naming its flag or file field.
void validate(const GenerationConfig& config);
DecodeMode decode_mode(const GenerationConfig& config);  // temperature 0 means greedy
// DRY acts (multiplier != 0, penalty_last_n != 0) and has breakers to resolve (a non-empty one).
bool dry_active(const GenerationConfig& config);
bool dry_needs_breakers(const GenerationConfig& config);
inline bool is_beam(DecodeMode mode) {
  return mode == DecodeMode::beam_search || mode == DecodeMode::beam_sample;
}
std::string to_string(DecodeMode mode);
std::string to_string(OrderPreset preset);
// Tokens the sequence may end with (generate's new-token budget given the prompt length).
int max_new_tokens_for(const GenerationConfig& config, std::size_t prompt_len);

// The smallest temperature above 0 (0 is greedy): below it, logit / T overflows float32 for
// ordinary logits and every probability becomes NaN.
inline constexpr double kMinTemperature = 1e-4;

// {"top_k": {"value": 20, "source": "generation_config.json"}, ...} for every field.
nlohmann::json settings_json(const GenerationConfig& config);

}  // namespace ls::decode
