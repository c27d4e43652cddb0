// Decoding flags and the logits recorder (see generation_cli.h).
#include "app/generation_cli.h"

#include <algorithm>

#include "chat/reasoning.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "decode/words.h"
#include "grammar/compose.h"
#include "grammar/json_schema.h"
#include "tokenizer/tokenizer.h"

namespace ls::app {

namespace {

// "\n", "\t" and "\\" in --stop values, so that a newline can be typed on a command line.
std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[i + 1];
      if (c == 'n' || c == 't' || c == '\\') {
        out += c == 'n' ? '\n' : c == 't' ? '\t' : '\\';
        ++i;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace

void add_generation_flags(CLI::App& cmd, GenerationFlags& f) {
  for (const auto& field : decode::generation_fields()) {
    const std::string name(field.name);
    std::string help(field.help);
    if (name == "stop_strings" || name == "dry_sequence_breakers")
      help += "; \\n and \\t are unescaped";
    // Where the value comes from when the flag is absent: the model's generation_config.json
    // if it sets the field, else transformers' GenerationConfig default.
    const bool none = field.default_value == "[]" || field.default_value == "{}" ||
                      (field.default_value == "-1" && name != "dry_penalty_last_n") ||
                      field.default_value == "null";
    help += none ? " (default: generation_config.json, else unset)"
                 : fmt::format(" (default: generation_config.json, else {})", field.default_value);
    // The GenerationConfig name as Python writes it is an alias: --max_new_tokens, --do_sample.
    std::string names(field.flag);
    if ("--" + name != names) names += ",--" + name;
    CLI::Option* opt = nullptr;
    if (field.repeatable) {
      opt = cmd.add_option(names, f.repeated[name], help);
    } else {
      opt = cmd.add_option(names, f.single[name], help);
      // Booleans may be given bare: --do-sample means --do-sample true.
      if (name == "do_sample" || name == "remove_invalid_values") opt->expected(0, 1);
    }
    opt->type_name(field.type);
    // A value that does not parse as the field's type is a usage error (exit 2), caught while
    // the command line is parsed, like any other flag's.
    opt->check(CLI::Validator(
        [name](std::string& value) {
          return value.empty() ? std::string() : decode::flag_value_error(name, value);
        },
        ""));
    f.options[name] = opt;
  }
  cmd.add_option("--ban-word", f.ban_words,
                 "Never generate WORD (every tokenization, with and without a leading space)");
  cmd.add_option("--logit-bias-word", f.bias_words, "Bias a word's tokens: \"WORD=BIAS\"");
  cmd.add_flag("--no-generation-config", f.no_generation_config,
               "Ignore the model's generation_config.json (start from transformers' defaults)");
  auto* g = cmd.add_option("--grammar", f.grammar_file,
                           "Constrain the text to a GBNF grammar (llama.cpp's syntax; rule root)")
                ->type_name("FILE");
  auto* s = cmd.add_option("--json-schema", f.json_schema_file,
                           "Constrain the text to JSON valid under this JSON Schema")
                ->type_name("FILE");
  auto* o = cmd.add_flag("--json-object", f.json_object, "Constrain the text to a JSON object");
  g->excludes(s)->excludes(o);
  s->excludes(o);
}

std::shared_ptr<const grammar::Constraint> constraint_from(const GenerationFlags& f,
                                                           const LoadedModel& lm) {
  if (!f.grammar_file.empty()) {
    return lm.constraint(read_text_file(f.grammar_file), f.grammar_file,
                         "grammar file " + f.grammar_file);
  }
  if (!f.json_schema_file.empty()) {
    const std::string text = read_text_file(f.json_schema_file);
    nlohmann::json schema;
    try {
      schema = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      fail("--json-schema {}: not JSON: {}", f.json_schema_file, e.what());
    }
    const std::string origin = "--json-schema " + f.json_schema_file;
    return lm.constraint(grammar::json_schema_to_gbnf(schema, origin), origin,
                         "json_schema " + f.json_schema_file);
  }
  if (f.json_object)
    return lm.constraint(grammar::json_object_gbnf(), "--json-object", "json_object");
  return nullptr;
}

decode::GenerationConfig generation_config_from(const GenerationFlags& f, const LoadedModel& lm,
                                                const std::vector<std::string>& skip) {
  decode::GenerationConfig config;
  if (!f.no_generation_config && !lm.model().generation_config().empty()) {
    decode::apply_generation_json(config, lm.model().generation_config(),
                                  lm.model().path() + "/generation_config.json");
  }
  if ((!f.ban_words.empty() || !f.bias_words.empty()) && !lm.tokenizer()) {
    fail("--ban-word/--logit-bias-word need a tokenizer.json in {}", lm.model().path());
  }
  apply_generation_flags(config, f, lm.tokenizer(), skip);
  if (f.constrained()) {
    config.constraint = constraint_from(f, lm);
    config.sources["grammar"] = "flag";
  }
  decode::validate(config);
  lm.resolve_dry(config);
  return config;
}

void apply_generation_flags(decode::GenerationConfig& config, const GenerationFlags& f,
                            const tok::Tokenizer* tokenizer, const std::vector<std::string>& skip) {
  for (const auto& field : decode::generation_fields()) {
    const std::string name(field.name);
    if (f.options.at(name)->count() == 0) continue;
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    if (field.repeatable) {
      for (const auto& v : f.repeated.at(name)) {
        const bool text = name == "stop_strings" || name == "dry_sequence_breakers";
        decode::set_from_flag(config, name, text ? unescape(v) : v);
      }
    } else {
      const std::string& v = f.single.at(name);
      decode::set_from_flag(config, name, v.empty() ? "true" : v);
    }
  }
  if (!f.ban_words.empty() || !f.bias_words.empty()) {
    if (!tokenizer) fail("--ban-word/--logit-bias-word need a tokenizer (give --model)");
    const decode::EncodeFn encode = [&](std::string_view text) {
      return tokenizer->encode(text, /*split_special=*/true);
    };
    for (const auto& w : f.ban_words) decode::add_banned_word(config, w, encode);
    for (const auto& w : f.bias_words) decode::add_word_bias(config, w, encode);
  }
}

std::string flag_text(const GenerationFlags& f, const std::string& field) {
  const auto it = f.options.find(field);
  if (it == f.options.end() || it->second->count() == 0) return "";
  const auto v = f.single.find(field);
  return v == f.single.end() ? "" : v->second;
}

std::vector<std::span<const float>> RecordingSource::step(std::span<const decode::Feed> feeds) {
  std::vector<std::span<const float>> scores = inner_.step(feeds);
  for (std::size_t i = 0; i < feeds.size(); ++i)
    if (feeds[i].seq == 0 && !done_) rows_.insert(rows_.end(), scores[i].begin(), scores[i].end());
  return scores;
}

void RecordingSource::release(int seq) {
  if (seq == 0) done_ = true;
  inner_.release(seq);
}

decode::GenerationConfig for_reply(const decode::GenerationConfig& config,
                                   const std::string& rendered, const LoadedModel& lm) {
  decode::GenerationConfig out = config;
  lm.resolve_dry(out);  // chat's /set may have changed DRY's breakers since the flags
  if (!out.constraint || rendered.empty()) return out;
  std::string source;
  try {
    source = lm.chat_template().source;
  } catch (const Error&) {
    return out;  // no template: the prompt was not a chat
  }
  if (!chat::reply_opens_thinking(source, rendered)) return out;
  const grammar::Constraint& c = *config.constraint;
  auto g = std::make_shared<const grammar::Grammar>(grammar::after_thinking(*c.grammar));
  out.constraint = std::make_shared<const grammar::Constraint>(
      grammar::Constraint{std::move(g), c.vocabulary, c.description + " after </think>"});
  return out;
}

decode::GenerationConfig replay_config(const inspect::Recording& rec, const std::string& trace_path,
                                       const GenerationFlags& f, const LoadedModel& lm) {
  decode::GenerationConfig config = inspect::recorded_config(rec);
  apply_generation_flags(config, f, lm.tokenizer());
  if (f.constrained()) {  // what a grammar would have allowed at each recorded step
    config.constraint = constraint_from(f, lm);
    config.sources["grammar"] = "flag";
  } else if (const auto* g = inspect::recorded_grammar(rec)) {  // the one the run had
    config.constraint = lm.constraint(g->at("gbnf").get<std::string>(),
                                      trace_path + " header 'settings.grammar.gbnf'",
                                      g->at("value").get<std::string>());
    config.sources["grammar"] = "trace";
  }
  lm.resolve_dry(config);
  return config;
}

}  // namespace ls::app
