// GenerationConfig layering: generation_config.json and flags through one table of fields, so
// both accept the same values and the trace can print every setting with its source.
#include "decode/generation_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "core/mapped_file.h"
#include "grammar/grammar.h"

namespace ls::decode {

using nlohmann::json;

namespace {

enum class Kind {
  i32,
  u64,
  f64,
  boolean,
  ids,
  id_lists,
  seq_bias,
  logit_bias,
  strings,
  early,
  names,
  preset
};

struct Field {
  GenerationField info;
  Kind kind;
  std::function<void(GenerationConfig&, const json&, const std::string&)> set;
  std::function<json(const GenerationConfig&)> get;
};

std::int64_t to_int(const json& j, const std::string& origin) {
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (std::isfinite(d) && d == std::floor(d)) return static_cast<std::int64_t>(d);
  }
  fail("{}: expected an integer, got {}", origin, j.dump());
}

std::int32_t to_i32(const json& j, const std::string& origin) {
  const std::int64_t v = to_int(j, origin);
  if (v < INT32_MIN || v > INT32_MAX) fail("{}: {} does not fit a 32-bit integer", origin, v);
  return static_cast<std::int32_t>(v);
}

double to_f64(const json& j, const std::string& origin) {
  if (!j.is_number()) fail("{}: expected a number, got {}", origin, j.dump());
  return j.get<double>();
}

bool to_bool(const json& j, const std::string& origin) {
  if (!j.is_boolean()) fail("{}: expected true or false, got {}", origin, j.dump());
  return j.get<bool>();
}

std::vector<std::int32_t> to_ids(const json& j, const std::string& origin) {
  std::vector<std::int32_t> out;
  if (j.is_number()) {
    out.push_back(to_i32(j, origin));  // eos_token_id may be a single id
    return out;
  }
  if (!j.is_array())
    fail("{}: expected a token id or a list of token ids, got {}", origin, j.dump());
  for (const auto& v : j) out.push_back(to_i32(v, origin));
  return out;
}

std::vector<std::string> to_strings(const json& j, const std::string& origin) {
  if (j.is_string()) return {j.get<std::string>()};
  if (!j.is_array()) fail("{}: expected a string or a list of strings, got {}", origin, j.dump());
  std::vector<std::string> out;
  for (const auto& v : j) {
    if (!v.is_string()) fail("{}: expected strings, got {}", origin, v.dump());
    out.push_back(v.get<std::string>());
  }
  return out;
}

template <typename T>
Field scalar(GenerationField info, Kind kind, T GenerationConfig::*member) {
  return {info, kind,
          [member](GenerationConfig& c, const json& j, const std::string& o) {
            if constexpr (std::is_same_v<T, bool>) {
              c.*member = to_bool(j, o);
            } else if constexpr (std::is_same_v<T, double>) {
              c.*member = to_f64(j, o);
            } else {
              c.*member = static_cast<T>(to_i32(j, o));
            }
          },
          [member](const GenerationConfig& c) { return json(c.*member); }};
}

const std::vector<Field>& fields() {
  using C = GenerationConfig;
  static const std::vector<Field> table = [] {
    std::vector<Field> t;
    auto info = [](std::string_view name, std::string_view flag, std::string_view help,
                   bool repeatable = false) {
      return GenerationField{name, flag, help, repeatable};
    };
    t.push_back(scalar(info("max_new_tokens", "--max-new-tokens",
                            "tokens to generate at most (logitscope: 256 when neither this nor "
                            "max_length is set; transformers: max_length 20)"),
                       Kind::i32, &C::max_new_tokens));
    t.push_back(
        scalar(info("max_length", "--max-length",
                    "prompt + generated tokens at most (when --max-new-tokens is not given)"),
               Kind::i32, &C::max_length));
    t.push_back(scalar(
        info("min_length", "--min-length", "EOS is banned while prompt + generated is shorter"),
        Kind::i32, &C::min_length));
    t.push_back(scalar(info("min_new_tokens", "--min-new-tokens",
                            "EOS is banned until this many tokens were generated"),
                       Kind::i32, &C::min_new_tokens));
    t.push_back(
        scalar(info("do_sample", "--do-sample", "true: sample; false: greedy or beam search"),
               Kind::boolean, &C::do_sample));
    t.push_back(scalar(info("num_beams", "--num-beams", "beam search width (1: no beam search)"),
                       Kind::i32, &C::num_beams));
    t.push_back(
        scalar(info("num_return_sequences", "--num-return-sequences", "sequences to return"),
               Kind::i32, &C::num_return_sequences));
    t.push_back(scalar(info("length_penalty", "--length-penalty",
                            "beam score = sum logprob / length^length_penalty"),
                       Kind::f64, &C::length_penalty));
    t.push_back({info("early_stopping", "--early-stopping", "beam search: true, false or never"),
                 Kind::early,
                 [](C& c, const json& j, const std::string& o) {
                   if (j.is_boolean()) {
                     c.early_stopping = j.get<bool>() ? EarlyStopping::yes : EarlyStopping::no;
                   } else if (j == "never") {
                     c.early_stopping = EarlyStopping::never;
                   } else {
                     fail("{}: expected true, false or \"never\", got {}", o, j.dump());
                   }
                 },
                 [](const C& c) {
                   return c.early_stopping == EarlyStopping::never
                              ? json("never")
                              : json(c.early_stopping == EarlyStopping::yes);
                 }});
    t.push_back({info("seed", "--seed", "random seed for sampling (same seed, same tokens)"),
                 Kind::u64,
                 [](C& c, const json& j, const std::string& o) {
                   if (!j.is_number_unsigned())
                     fail("{}: expected a non-negative integer, got {}", o, j.dump());
                   c.seed = j.get<std::uint64_t>();
                 },
                 [](const C& c) { return c.seed ? json(*c.seed) : json(nullptr); }});
    t.push_back(scalar(info("temperature", "--temperature", "divide logits by this (0: greedy)"),
                       Kind::f64, &C::temperature));
    t.push_back(
        scalar(info("top_k", "--top-k", "keep the k best tokens (0: off)"), Kind::i32, &C::top_k));
    t.push_back(
        scalar(info("top_p", "--top-p", "keep the smallest set reaching this mass (1: off)"),
               Kind::f64, &C::top_p));
    t.push_back(
        scalar(info("min_p", "--min-p", "drop tokens below min_p x the top probability (0: off)"),
               Kind::f64, &C::min_p));
    t.push_back(scalar(info("typical_p", "--typical-p", "locally typical sampling mass (1: off)"),
                       Kind::f64, &C::typical_p));
    t.push_back(scalar(
        info("epsilon_cutoff", "--epsilon-cutoff", "drop tokens below this probability (0: off)"),
        Kind::f64, &C::epsilon_cutoff));
    t.push_back(scalar(info("eta_cutoff", "--eta-cutoff", "entropy-dependent cutoff (0: off)"),
                       Kind::f64, &C::eta_cutoff));
    t.push_back(scalar(info("top_n_sigma", "--top-n-sigma",
                            "llama.cpp: keep scores within n deviations of the best (<= 0: off)"),
                       Kind::f64, &C::top_n_sigma));
    t.push_back(scalar(info("dynatemp_range", "--dynatemp-range",
                            "llama.cpp: temperature +/- this, by the entropy (0: off)"),
                       Kind::f64, &C::dynatemp_range));
    t.push_back(scalar(info("dynatemp_exponent", "--dynatemp-exponent",
                            "llama.cpp: the entropy's exponent in dynamic temperature"),
                       Kind::f64, &C::dynatemp_exponent));
    t.push_back(scalar(info("xtc_probability", "--xtc-probability",
                            "llama.cpp: the chance per step of removing the top choices (0: off)"),
                       Kind::f64, &C::xtc_probability));
    t.push_back(scalar(info("xtc_threshold", "--xtc-threshold",
                            "llama.cpp: XTC removes all but the last token at or above this"),
                       Kind::f64, &C::xtc_threshold));
    t.push_back(scalar(
        info("min_keep", "--min-keep", "llama.cpp: the truncations keep at least this many tokens"),
        Kind::i32, &C::min_keep));
    t.push_back(
        scalar(info("mirostat", "--mirostat",
                    "llama.cpp: mirostat version 1 or 2, replacing the truncations (0: off)"),
               Kind::i32, &C::mirostat));
    t.push_back(scalar(
        info("mirostat_tau", "--mirostat-tau", "llama.cpp: mirostat's target surprise, in bits"),
        Kind::f64, &C::mirostat_tau));
    t.push_back(
        scalar(info("mirostat_eta", "--mirostat-eta", "llama.cpp: mirostat's learning rate"),
               Kind::f64, &C::mirostat_eta));
    t.push_back(scalar(info("repetition_penalty", "--repetition-penalty",
                            "penalise tokens of prompt + output (1: off)"),
                       Kind::f64, &C::repetition_penalty));
    t.push_back(scalar(info("presence_penalty", "--presence-penalty",
                            "OpenAI: subtract once per generated token seen"),
                       Kind::f64, &C::presence_penalty));
    t.push_back(scalar(info("frequency_penalty", "--frequency-penalty",
                            "OpenAI: subtract per occurrence in the output"),
                       Kind::f64, &C::frequency_penalty));
    t.push_back(scalar(info("repeat_last_n", "--repeat-last-n",
                            "llama.cpp: the penalties count the last n tokens of prompt + output "
                            "(-1: as above)"),
                       Kind::i32, &C::repeat_last_n));
    t.push_back(scalar(info("no_repeat_ngram_size", "--no-repeat-ngram-size",
                            "never repeat an n-gram of this size (0: off)"),
                       Kind::i32, &C::no_repeat_ngram_size));
    t.push_back(scalar(info("dry_multiplier", "--dry-multiplier",
                            "llama.cpp: DRY penalty for extending a repeated sequence (0: off)"),
                       Kind::f64, &C::dry_multiplier));
    t.push_back(scalar(info("dry_base", "--dry-base",
                            "llama.cpp: DRY penalty = multiplier x base^(length - allowed length)"),
                       Kind::f64, &C::dry_base));
    t.push_back(scalar(info("dry_allowed_length", "--dry-allowed-length",
                            "llama.cpp: repeats up to this length go unpenalised by DRY"),
                       Kind::i32, &C::dry_allowed_length));
    t.push_back(scalar(info("dry_penalty_last_n", "--dry-penalty-last-n",
                            "llama.cpp: DRY scans the last n tokens (-1: all, 0: off)"),
                       Kind::i32, &C::dry_penalty_last_n));
    t.push_back({info("dry_sequence_breakers", "--dry-sequence-breaker",
                      "llama.cpp: DRY never matches across this string (repeatable)", true),
                 Kind::strings,
                 [](C& c, const json& j, const std::string& o) {
                   c.dry_sequence_breakers = to_strings(j, o);
                 },
                 [](const C& c) { return json(c.dry_sequence_breakers); }});
    t.push_back({info("bad_words_ids", "--bad-words-ids",
                      "ban token sequences: \"1,2;3\" (repeatable)", true),
                 Kind::id_lists,
                 [](C& c, const json& j, const std::string& o) {
                   if (!j.is_array())
                     fail("{}: expected a list of token id lists, got {}", o, j.dump());
                   c.bad_words_ids.clear();
                   for (const auto& seq : j) {
                     auto ids = to_ids(seq, o);
                     if (ids.empty()) fail("{}: a banned sequence is empty", o);
                     c.bad_words_ids.push_back(std::move(ids));
                   }
                 },
                 [](const C& c) { return json(c.bad_words_ids); }});
    t.push_back({info("sequence_bias", "--sequence-bias",
                      "bias a token sequence: \"1,2=-5\" (repeatable)", true),
                 Kind::seq_bias,
                 [](C& c, const json& j, const std::string& o) {
                   if (!j.is_array())
                     fail("{}: expected a list of [token ids, bias] pairs, got {}", o, j.dump());
                   c.sequence_bias.clear();
                   for (const auto& pair : j) {
                     if (!pair.is_array() || pair.size() != 2)
                       fail("{}: expected [token ids, bias], got {}", o, pair.dump());
                     BiasedSequence b{to_ids(pair[0], o), to_f64(pair[1], o)};
                     if (b.tokens.empty()) fail("{}: a biased sequence is empty", o);
                     c.sequence_bias.push_back(std::move(b));
                   }
                 },
                 [](const C& c) {
                   json out = json::array();
                   for (const auto& b : c.sequence_bias)
                     out.push_back(json::array({b.tokens, b.bias}));
                   return out;
                 }});
    t.push_back({info("logit_bias", "--logit-bias",
                      "add to a token's logit: \"12=-5,13=2\" (repeatable)", true),
                 Kind::logit_bias,
                 [](C& c, const json& j, const std::string& o) {
                   if (!j.is_object())
                     fail("{}: expected an object {{\"token id\": bias}}, got {}", o, j.dump());
                   c.logit_bias.clear();
                   for (const auto& [key, value] : j.items()) {
                     std::int32_t id = 0;
                     auto [p, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
                     if (ec != std::errc() || p != key.data() + key.size())
                       fail("{}: '{}' is not a token id", o, key);
                     c.logit_bias[id] = to_f64(value, o);
                   }
                 },
                 [](const C& c) {
                   json out = json::object();
                   for (auto [id, b] : c.logit_bias) out[std::to_string(id)] = b;
                   return out;
                 }});
    t.push_back(
        {info("suppress_tokens", "--suppress-tokens", "token ids never generated: \"1,2\""),
         Kind::ids,
         [](C& c, const json& j, const std::string& o) { c.suppress_tokens = to_ids(j, o); },
         [](const C& c) { return json(c.suppress_tokens); }});
    t.push_back(scalar(info("remove_invalid_values", "--remove-invalid-values",
                            "replace NaN/inf scores as transformers does"),
                       Kind::boolean, &C::remove_invalid_values));
    t.push_back({info("eos_token_id", "--eos-token-id", "end-of-sequence ids: \"151645,151643\""),
                 Kind::ids,
                 [](C& c, const json& j, const std::string& o) { c.eos_token_id = to_ids(j, o); },
                 [](const C& c) { return json(c.eos_token_id); }});
    t.push_back(
        scalar(info("pad_token_id", "--pad-token-id", "padding id"), Kind::i32, &C::pad_token_id));
    t.push_back(scalar(info("bos_token_id", "--bos-token-id", "beginning-of-sequence id"),
                       Kind::i32, &C::bos_token_id));
    t.push_back({info("stop_strings", "--stop",
                      "stop when the text contains this; never printed (repeatable)", true),
                 Kind::strings,
                 [](C& c, const json& j, const std::string& o) {
                   c.stop_strings = to_strings(j, o);
                   for (const auto& s : c.stop_strings) {
                     if (s.empty()) fail("{}: a stop string is empty", o);
                   }
                 },
                 [](const C& c) { return json(c.stop_strings); }});
    t.push_back(
        {info("order_preset", "--order-preset", "stage order and tie rules: hf, vllm or llama.cpp"),
         Kind::preset,
         [](C& c, const json& j, const std::string& o) {
           const std::string v = j.is_string() ? j.get<std::string>() : j.dump();
           if (v == "hf" || v == "transformers") {
             c.order_preset = OrderPreset::hf;
           } else if (v == "vllm") {
             c.order_preset = OrderPreset::vllm;
           } else if (v == "llama.cpp" || v == "llama_cpp" || v == "llamacpp") {
             c.order_preset = OrderPreset::llama_cpp;
           } else {
             fail("{}: expected hf, vllm or llama.cpp, got {}", o, v);
           }
         },
         [](const C& c) { return json(to_string(c.order_preset)); }});
    t.push_back({info("order", "--order", "re-sequence stages, e.g. top_k,top_p,temperature"),
                 Kind::names,
                 [](C& c, const json& j, const std::string& o) { c.order = to_strings(j, o); },
                 [](const C& c) { return json(c.order); }});
    return t;
  }();
  return table;
}

const Field* find_field(std::string_view name) {
  for (const auto& f : fields()) {
    if (f.info.name == name) return &f;
  }
  return nullptr;
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(b, s.find_last_not_of(" \t") - b + 1));
}

json parse_integer(std::string_view text, const std::string& origin) {
  const std::string t = trim(text);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size()) {
    fail("{}: expected an integer, got '{}'", origin, text);
  }
  return v;
}

json parse_number(std::string_view text, const std::string& origin) {
  const std::string t = trim(text);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size())
    fail("{}: expected a number, got '{}'", origin, text);
  return v;
}

json parse_ids(std::string_view text, const std::string& origin) {
  json out = json::array();
  for (const auto& part : split(text, ',')) out.push_back(parse_integer(part, origin));
  return out;
}

// "ids=bias" -> {ids, bias}; the bias may carry a sign ("12=+2").
std::pair<json, json> parse_assignment(std::string_view text, const std::string& origin) {
  const auto eq = text.rfind('=');
  if (eq == std::string_view::npos) fail("{}: expected TOKENS=BIAS, got '{}'", origin, text);
  return {parse_ids(text.substr(0, eq), origin), parse_number(text.substr(eq + 1), origin)};
}

json parse_flag_value(Kind kind, std::string_view text, const std::string& origin) {
  switch (kind) {
    case Kind::i32:
      return parse_integer(text, origin);
    case Kind::u64: {
      const std::string t = trim(text);
      std::uint64_t v = 0;
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (t.empty() || ec != std::errc() || p != t.data() + t.size()) {
        fail("{}: expected a non-negative integer, got '{}'", origin, text);
      }
      return v;
    }
    case Kind::f64:
      return parse_number(text, origin);
    case Kind::boolean:
    case Kind::early: {
      const std::string t = trim(text);
      if (t == "true" || t == "1" || t == "yes") return true;
      if (t == "false" || t == "0" || t == "no") return false;
      if (kind == Kind::early && t == "never") return "never";
      fail("{}: expected true or false{}, got '{}'", origin, kind == Kind::early ? " or never" : "",
           text);
    }
    case Kind::ids:
      return parse_ids(text, origin);
    case Kind::id_lists: {
      json out = json::array();
      for (const auto& seq : split(text, ';')) out.push_back(parse_ids(seq, origin));
      return out;
    }
    case Kind::seq_bias: {
      auto [ids, bias] = parse_assignment(text, origin);
      return json::array({json::array({ids, bias})});
    }
    case Kind::logit_bias: {
      json out = json::object();
      for (const auto& item : split(text, ',')) {
        auto [ids, bias] = parse_assignment(item, origin);
        out[std::to_string(ids[0].get<std::int64_t>())] = bias;
      }
      return out;
    }
    case Kind::strings:
      return json::array({std::string(text)});
    case Kind::names: {
      json out = json::array();
      for (const auto& part : split(text, ',')) out.push_back(trim(part));
      return out;
    }
    case Kind::preset:
      return trim(text);
  }
  return nullptr;
}

}  // namespace

std::string GenerationConfig::source_of(std::string_view field) const {
  auto it = sources.find(field);
  return it == sources.end() ? "default" : it->second;
}

std::string GenerationConfig::origin_of(std::string_view field) const {
  const std::string source = source_of(field);
  const Field* f = find_field(field);
  if (source == "flag" && f) return std::string(f->info.flag);
  if (source == "generation_config.json") {
    return fmt::format("{} field '{}'",
                       config_path.empty() ? "generation_config.json" : config_path, field);
  }
  return std::string(field);
}

// The type a flag's value has, as --help shows it.
std::string_view type_name(Kind kind) {
  switch (kind) {
    case Kind::i32:
    case Kind::u64:
      return "INT";
    case Kind::f64:
      return "FLOAT";
    case Kind::boolean:
      return "BOOL";
    case Kind::ids:
      return "IDS";
    case Kind::id_lists:
      return "ID_LIST";
    case Kind::seq_bias:
    case Kind::logit_bias:
      return "BIAS";
    case Kind::strings:
      return "TEXT";
    case Kind::early:
      return "BOOL|never";
    case Kind::names:
      return "NAMES";
    case Kind::preset:
      return "PRESET";
  }
  return "VALUE";
}

std::span<const GenerationField> generation_fields() {
  static const std::vector<GenerationField> infos = [] {
    const GenerationConfig defaults;  // transformers' GenerationConfig() defaults
    std::vector<GenerationField> out;
    for (const auto& f : fields()) {
      GenerationField info = f.info;
      info.type = type_name(f.kind);
      info.default_value = f.get(defaults).dump();
      out.push_back(std::move(info));
    }
    return out;
  }();
  return infos;
}

void apply_generation_json(GenerationConfig& config, const json& j, const std::string& label) {
  if (!j.is_object()) fail("{}: expected a JSON object", label);
  config.config_path = label;
  for (const auto& [key, value] : j.items()) {
    const Field* f = find_field(key);
    // Unknown keys (transformers_version, ...) and nulls (unset) change nothing.
    if (!f || value.is_null()) continue;
    f->set(config, value, fmt::format("{} field '{}'", label, key));
    config.sources[key] = "generation_config.json";
  }
}

void load_generation_config(GenerationConfig& config, const std::string& path) {
  const std::string text = read_text_file(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail("{}: invalid JSON: {}", path, e.what());
  }
  apply_generation_json(config, j, path);
}

std::string flag_value_error(std::string_view field, std::string_view text) {
  const Field* f = find_field(field);
  if (!f) return fmt::format("unknown generation setting '{}'", field);
  const bool scalar = f->kind == Kind::i32 || f->kind == Kind::u64 || f->kind == Kind::f64 ||
                      f->kind == Kind::boolean || f->kind == Kind::early;
  try {
    if (scalar)
      for (const std::string& item : split(text, ',')) (void)parse_flag_value(f->kind, item, "");
    else
      (void)parse_flag_value(f->kind, text, "");
  } catch (const Error& e) {
    std::string_view m = e.what();
    if (m.starts_with(": ")) m.remove_prefix(2);  // the origin is the flag CLI11 names
    return std::string(m);
  }
  return "";
}

void set_from_flag(GenerationConfig& config, std::string_view field, std::string_view value) {
  const Field* f = find_field(field);
  if (!f) fail("unknown generation setting '{}'", field);
  const std::string origin(f->info.flag);
  json parsed = parse_flag_value(f->kind, value, origin);
  // A repeated list flag adds to what earlier occurrences gave (but replaces the file's value).
  if (f->info.repeatable && config.source_of(field) == "flag") {
    json merged = f->get(config);
    if (merged.is_object()) {
      merged.update(parsed);
    } else {
      for (auto& item : parsed)  // a value given twice is kept once (chat's /set stop x, twice)
        if (std::find(merged.begin(), merged.end(), item) == merged.end()) merged.push_back(item);
    }
    parsed = std::move(merged);
  }
  f->set(config, parsed, origin);
  config.sources[std::string(field)] = "flag";
}

void set_field(GenerationConfig& config, std::string_view field, const json& value,
               std::string_view source) {
  const Field* f = find_field(field);
  if (!f) fail("unknown generation setting '{}'", field);
  f->set(config, value, std::string(field));
  config.sources[std::string(field)] = source;
}

json settings_json(const GenerationConfig& config) {
  json out = json::object();
  for (const auto& f : fields()) {
    out[std::string(f.info.name)] = {{"value", f.get(config)},
                                     {"source", config.source_of(f.info.name)}};
  }
  // The grammar as its description and its GBNF text: a trace shows which grammar chose, and
  // replay rebuilds it from the text.
  out["grammar"] = {
      {"value", config.constraint ? json(config.constraint->description) : json(nullptr)},
      {"source", config.source_of("grammar")}};
  if (config.constraint) out["grammar"]["gbnf"] = grammar::to_gbnf(*config.constraint->grammar);
  return out;
}

}  // namespace ls::decode
