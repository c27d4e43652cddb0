// Request checking and the request -> Job mapping (see request.h).
#include "server/request.h"

#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "chat/reasoning.h"
#include "decode/words.h"
#include "server/body_fields.h"
#include "server/refused_fields.h"
#include "server/structured_output.h"

namespace ls::server {

using nlohmann::json;

namespace {

using namespace body;

void mark(decode::GenerationConfig& c, const char* name) {
  c.sources[name] = "request";
}

std::int32_t eos_id_of(const engine::LoadedModel& lm) {
  const tok::Tokenizer* tok = lm.tokenizer();
  if (tok == nullptr) return -1;
  std::string eos;
  try {
    eos = lm.chat_template().eos_token;
  } catch (const std::exception&) {
    return -1;  // no template: generation_config.json's eos_token_id is all there is
  }
  if (eos.empty()) return -1;
  const auto ids = tok->encode(eos);
  return ids.size() == 1 ? ids[0] : -1;
}

// The plain number fields a request may set, with the API's ranges (OpenAI's, vLLM's,
// llama-server's); each is the generation_config.json field of the same name, set through
// decode's one table of fields (decode::set_field), which knows its member and type.
struct NumberField {
  const char* name;
  double lo, hi;
  bool lo_open;  // the range excludes `lo`
};
constexpr NumberField kNumberFields[] = {
    {"temperature", 0, 2, false},
    {"top_p", 0, 1, true},
    {"min_p", 0, 1, false},
    {"repetition_penalty", 0, 10, true},
    {"presence_penalty", -2, 2, false},
    {"frequency_penalty", -2, 2, false},
    {"typical_p", 0, 1, true},
    // llama-server's: top_n_sigma <= 0, dynatemp_range 0 and xtc_probability 0 turn them off.
    {"top_n_sigma", -1, 100, false},
    {"dynatemp_range", 0, 2, false},
    {"dynatemp_exponent", 0, 10, false},
    {"xtc_probability", 0, 1, false},
    {"xtc_threshold", 0, 1, false},
    // llama-server's DRY and mirostat (dry_multiplier 0 and mirostat 0 turn them off).
    {"dry_multiplier", 0, 100, false},
    {"dry_base", 1, 100, false},
    {"mirostat_tau", 0, 100, false},
    {"mirostat_eta", 0, 10, false},
};

// The integer fields of llama-server's samplers, as above: name and range (hi -1: the context,
// -2: the vocabulary).
struct IntField {
  const char* name;
  std::int64_t lo, hi;
};
constexpr IntField kIntFields[] = {
    {"dry_allowed_length", 0, 1 << 20},
    {"dry_penalty_last_n", -1, -1},
    {"repeat_last_n", -1, -1},
    {"mirostat", 0, 2},
    {"min_keep", 0, -2},
};

decode::OrderPreset order_preset(const json& v, const std::string& param) {
  const std::string& p = string(v, param);
  if (p == "hf") return decode::OrderPreset::hf;
  if (p == "vllm") return decode::OrderPreset::vllm;
  if (p == "llama_cpp") return decode::OrderPreset::llama_cpp;
  bad(param, fmt::format("'{}' must be hf, vllm or llama_cpp", param));
}

// The plain number fields and top_k of `obj` over `c`; `prefix` leads each param's name.
void apply_numbers(const json& obj, decode::GenerationConfig& c, std::int64_t vocab,
                   const std::string& prefix) {
  for (const NumberField& f : kNumberFields) {
    if (const json* v = field(obj, f.name))
      decode::set_field(c, f.name, number(*v, prefix + f.name, f.lo, f.hi, f.lo_open), "request");
  }
  if (const json* v = field(obj, "top_k")) {
    const auto k = integer(*v, prefix + "top_k", -1, vocab);
    c.top_k = k < 0 ? 0 : static_cast<int>(k);
    mark(c, "top_k");
  }
}

// The integer fields of llama-server's samplers and DRY's breakers, over `c`.
void apply_llama_fields(const json& body, decode::GenerationConfig& c, const ServerLimits& limits) {
  for (const IntField& f : kIntFields) {
    if (const json* v = field(body, f.name)) {
      const std::int64_t hi = f.hi == -1   ? limits.ctx
                              : f.hi == -2 ? limits.model->model().config().vocab_size
                                           : f.hi;
      decode::set_field(c, f.name, integer(*v, f.name, f.lo, hi), "request");
    }
  }
  if (const json* v = field(body, "dry_sequence_breakers")) {
    if (!v->is_array() || v->size() > 64)
      bad("dry_sequence_breakers", "'dry_sequence_breakers' must be a list of up to 64 strings");
    c.dry_sequence_breakers.clear();
    for (std::size_t i = 0; i < v->size(); ++i)
      c.dry_sequence_breakers.push_back(
          string((*v)[i], fmt::format("dry_sequence_breakers[{}]", i)));
    mark(c, "dry_sequence_breakers");
  }
  limits.model->resolve_dry(c);
}

// The sampling fields both endpoints share, over `c`; max_tokens 0 (completions only) leaves
// max_new_tokens 0: the run scores the prompt and generates nothing.
void apply_sampling(const json& body, decode::GenerationConfig& c, const ServerLimits& limits,
                    std::size_t prompt_len, bool completions) {
  const auto V = limits.model->model().config().vocab_size;
  apply_numbers(body, c, V, "");
  apply_llama_fields(body, c, limits);
  if (const json* v = field(body, "logit_bias")) {
    if (!v->is_object()) bad("logit_bias", "'logit_bias' must be an object {\"token id\": bias}");
    for (const auto& [key, bias] : v->items()) {
      const std::string param = "logit_bias." + key;
      std::int64_t id = -1;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id >= V)
        bad(param, fmt::format("'logit_bias' key '{}' must be a token id in [0, {})", key, V));
      c.logit_bias[static_cast<std::int32_t>(id)] = number(bias, param, -100, 100);
    }
    mark(c, "logit_bias");
  }
  if (const json* v = field(body, "seed")) {
    // The whole uint64 range (integer() stops at int64's): JSON numbers above 2^63-1 arrive
    // unsigned. Integral floats (3.0) pass as every integer field's do.
    const auto refuse = [&](const std::string& got) {
      bad("seed", fmt::format("'seed' must be an integer in [0, {}], got {}",
                              std::numeric_limits<std::uint64_t>::max(), got));
    };
    if (v->is_number_unsigned()) {
      c.seed = v->get<std::uint64_t>();
    } else if (v->is_number_integer()) {
      if (v->get<std::int64_t>() < 0) refuse(v->dump());
      c.seed = static_cast<std::uint64_t>(v->get<std::int64_t>());
    } else if (v->is_number_float()) {
      const double d = v->get<double>();
      if (!(d >= 0 && d < 9e15 && d == std::floor(d))) refuse(v->dump());
      c.seed = static_cast<std::uint64_t>(d);
    } else {
      refuse(type_name(*v));
    }
    mark(c, "seed");
  }
  if (const json* v = field(body, "stop")) {
    std::vector<std::string> stops;
    if (v->is_string()) {
      stops.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      if (v->size() > 4)
        bad("stop", fmt::format("'stop' holds at most 4 strings, got {}", v->size()));
      for (std::size_t i = 0; i < v->size(); ++i)
        stops.push_back(string((*v)[i], fmt::format("stop[{}]", i)));
    } else {
      bad("stop", "'stop' must be a string or a list of up to 4 strings");
    }
    for (std::size_t i = 0; i < stops.size(); ++i)
      if (stops[i].empty())
        bad(v->is_string() ? "stop" : fmt::format("stop[{}]", i),
            "a stop string must not be empty");
    c.stop_strings = stops;
    mark(c, "stop_strings");
  }
  bool ignore_eos = false;
  if (const json* v = field(body, "ignore_eos")) ignore_eos = boolean(*v, "ignore_eos");
  if (ignore_eos) {
    c.eos_token_id.clear();
    mark(c, "eos_token_id");
  }
  if (const json* v = field(body, "stop_token_ids")) {
    for (const auto id : token_ids(*v, "stop_token_ids", limits)) c.eos_token_id.push_back(id);
    mark(c, "eos_token_id");
  }
  if (const json* v = field(body, "bad_words")) {
    if (!v->is_array()) bad("bad_words", "'bad_words' must be a list of strings");
    const tok::Tokenizer& tok = limits.model->require_tokenizer("bad_words");
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string& word = string((*v)[i], fmt::format("bad_words[{}]", i));
      if (word.empty()) bad(fmt::format("bad_words[{}]", i), "a bad word must not be empty");
      decode::add_banned_word(c, word, [&](std::string_view t) { return tok.encode(t); });
    }
    mark(c, "bad_words_ids");
  }

  // Length: what is left of the context unless max_tokens says less.
  const auto room = static_cast<std::int64_t>(limits.ctx) - static_cast<std::int64_t>(prompt_len);
  const char* prompt_param = completions ? "prompt" : "messages";
  if (room <= 0)
    throw ApiError(400,
                   fmt::format("the prompt has {} tokens but the context holds {} positions "
                               "(--ctx {}): shorten it",
                               prompt_len, limits.ctx, limits.ctx),
                   prompt_param, "context_length_exceeded");
  std::int64_t max_tokens = room;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (const json* v = field(body, name)) {
      max_tokens = integer(*v, name, completions ? 0 : 1, std::numeric_limits<std::int32_t>::max());
      if (max_tokens > room)
        throw ApiError(400,
                       fmt::format("'{}' is {} but the prompt's {} tokens leave {} of the {} "
                                   "positions of the context",
                                   name, max_tokens, prompt_len, room, limits.ctx),
                       name, "context_length_exceeded");
    }
  }
  c.max_new_tokens = static_cast<int>(max_tokens);
  c.max_length = 0;
  mark(c, "max_new_tokens");
  if (const json* v = field(body, "min_tokens")) {
    c.min_new_tokens = static_cast<int>(integer(*v, "min_tokens", 0, max_tokens));
    mark(c, "min_new_tokens");
  }

  // The extension object.
  if (const json* ext = field(body, "logitscope")) {
    if (!ext->is_object()) bad("logitscope", "'logitscope' must be an object");
    if (const json* v = field(*ext, "sequence_bias")) {
      if (!v->is_array())
        bad("logitscope.sequence_bias",
            "'logitscope.sequence_bias' must be a list of [[ids], bias]");
      for (std::size_t i = 0; i < v->size(); ++i) {
        const std::string param = fmt::format("logitscope.sequence_bias[{}]", i);
        const json& e = (*v)[i];
        if (!e.is_array() || e.size() != 2)
          bad(param, fmt::format("'{}' must be [[token ids], bias]", param));
        auto ids = token_ids(e[0], param + "[0]", limits);
        if (ids.empty()) bad(param + "[0]", "a sequence_bias entry needs at least one token");
        c.sequence_bias.push_back({std::move(ids), number(e[1], param + "[1]", -100, 100)});
      }
      mark(c, "sequence_bias");
    }
    if (const json* v = field(*ext, "order_preset")) {
      c.order_preset = order_preset(*v, "logitscope.order_preset");
      mark(c, "order_preset");
    }
  }
  if (c.num_return_sequences > 1 && c.temperature == 0)
    bad("n", "'n' must be 1 with temperature 0: greedy decoding gives one sequence (as vLLM)");
  try {
    decode::validate(c);
  } catch (const std::exception& e) {
    bad("", e.what());
  }
}

// logitscope.keep: the generation is kept for replay; one sequence of one prompt.
bool keep_requested(const json& body, const ParsedRequest& r, std::size_t prompts) {
  const json* ext = field(body, "logitscope");
  const json* v = ext != nullptr && ext->is_object() ? field(*ext, "keep") : nullptr;
  if (v == nullptr || !boolean(*v, "logitscope.keep")) return false;
  if (r.n != 1) bad("n", "'logitscope.keep' keeps one sequence: 'n' must be 1");
  if (prompts != 1) bad("prompt", "'logitscope.keep' keeps one sequence: give one prompt");
  return true;
}

// The page re-scores kept generations in the browser with the chain's other stages, which do
// not include a grammar: a constrained generation kept there would be re-scored without its
// mask, silently. Until the page has the grammar stage, keeping one is refused.
void refuse_constrained_keep(const ParsedRequest& r) {
  if (r.keep && !r.jobs.empty() && r.jobs[0].config.constraint)
    bad("logitscope.keep",
        "'logitscope.keep' cannot keep a constrained generation (response_format, tool_choice, "
        "grammar or json_schema): the page would re-score it without the grammar");
}

int trace_top_n(const json& body) {
  const json* ext = field(body, "logitscope");
  if (ext == nullptr) return 0;
  if (!ext->is_object()) bad("logitscope", "'logitscope' must be an object");
  const json* v = field(*ext, "trace");
  return v == nullptr ? 0 : static_cast<int>(integer(*v, "logitscope.trace", 0, 20));
}

// logitscope.experts: the trace's steps also carry the router's choice (a mixture of experts;
// nothing for a dense model). Only with a trace.
bool experts_requested(const json& body, int trace_top_n) {
  const json* ext = field(body, "logitscope");
  const json* v = ext != nullptr && ext->is_object() ? field(*ext, "experts") : nullptr;
  if (v == nullptr || !boolean(*v, "logitscope.experts")) return false;
  if (trace_top_n == 0)
    bad("logitscope.experts",
        "'logitscope.experts' adds the router's choice to the trace's steps: it needs "
        "'logitscope.trace' above 0");
  return true;
}

void check_model(const json& body, const ServerLimits& limits) {
  if (const json* v = field(body, "model")) {
    const std::string& name = string(*v, "model");
    if (name != limits.served_name)
      throw ApiError(404,
                     fmt::format("the model '{}' does not exist; this server serves '{}'", name,
                                 limits.served_name),
                     "model", "model_not_found");
  }
}

// stream, stream_options, n, logprobs_mode: the fields both endpoints read the same way.
void read_common(const json& body, ParsedRequest& r, const ServerLimits& limits) {
  if (!body.is_object()) bad("", "the request body must be a JSON object");
  check_model(body, limits);
  refuse_unsupported_fields(body, r.chat);
  if (const json* v = field(body, "stream")) r.stream = boolean(*v, "stream");
  if (const json* v = field(body, "stream_options")) {
    if (!v->is_object()) bad("stream_options", "'stream_options' must be an object");
    if (const json* u = field(*v, "include_usage"))
      r.include_usage = boolean(*u, "stream_options.include_usage");
  }
  if (const json* v = field(body, "n"))
    r.n = static_cast<int>(integer(*v, "n", 1, limits.parallel));
}

// prompt_logprobs (vLLM: top entries and ranks of every prompt token after the first) and
// token_ids_logprob (SGLang: named tokens' logprobs and ranks at every generated step); read
// after logprobs, which token_ids_logprob needs.
void read_scoring(const json& body, ParsedRequest& r, const ServerLimits& limits) {
  if (const json* v = field(body, "prompt_logprobs"))
    r.prompt_logprobs = {true, static_cast<int>(integer(*v, "prompt_logprobs", 0, 20))};
  if (const json* v = field(body, "token_ids_logprob")) {
    if (!r.logprobs.wanted)
      bad("token_ids_logprob", "'token_ids_logprob' needs 'logprobs' (it adds to their entries)");
    r.token_ids_logprob = token_ids(*v, "token_ids_logprob", limits);
    if (r.token_ids_logprob.empty() || r.token_ids_logprob.size() > 256)
      bad("token_ids_logprob",
          fmt::format("'token_ids_logprob' must list 1 to 256 token ids, got {}",
                      r.token_ids_logprob.size()));
  }
}

Job make_job(const json& body, const ParsedRequest& r, std::vector<std::int32_t> prompt,
             const ServerLimits& limits) {
  Job job;
  job.config = limits.defaults;
  job.config.num_return_sequences = r.n;
  apply_sampling(body, job.config, limits, prompt.size(), !r.chat);
  job.prompt = std::move(prompt);
  job.logprobs = r.logprobs;
  if (const json* v = field(body, "logprobs_mode")) {
    const std::string& m = string(*v, "logprobs_mode");
    if (m != "raw" && m != "processed")
      bad("logprobs_mode",
          fmt::format("'logprobs_mode' must be \"raw\" or \"processed\", got \"{}\"", m));
    job.logprobs.processed = m == "processed";
  }
  // Echo with logprobs lists the prompt's tokens too; vLLM's prompt_logprobs may want more.
  const bool echoed = r.echo && r.logprobs.wanted;
  job.prompt_logprobs = {echoed || r.prompt_logprobs.wanted,
                         std::max(echoed ? r.logprobs.top : 0, r.prompt_logprobs.top)};
  job.named = r.token_ids_logprob;
  job.trace_top_n = trace_top_n(body);
  job.expert_routes = experts_requested(body, job.trace_top_n);
  return job;
}

// One message's content as text: a string, or a list of text parts.
std::string content_text(const json& v, const std::string& param) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array())
    bad(param, fmt::format("'{}' must be a string or a list of text parts", param));
  std::string text;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string p = fmt::format("{}[{}]", param, i);
    const json& part = v[i];
    // value("type", json()): a default of "" would make a non-string type a json type_error.
    if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text"))
      bad(p, fmt::format(
                 "'{}' must be {{\"type\": \"text\", \"text\": ...}}; only text is supported", p));
    text += string(part["text"], p + ".text");
  }
  return text;
}

// Messages as the template expects them: content as text, roles checked, tool call arguments
// as objects (Qwen's template writes them with tojson; OpenAI clients send JSON text).
json normalize_messages(const json& messages) {
  if (!messages.is_array()) bad("messages", "'messages' must be a list of messages");
  if (messages.empty()) bad("messages", "'messages' must hold at least one message");
  json out = json::array();
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string p = fmt::format("messages[{}]", i);
    const json& m = messages[i];
    if (!m.is_object()) bad(p, fmt::format("'{}' must be an object", p));
    if (!m.contains("role")) bad(p + ".role", fmt::format("'{}.role' is missing", p));
    std::string role = string(m["role"], p + ".role");
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      bad(p + ".role",
          fmt::format("'{}.role' must be system, developer, user, assistant or tool, got \"{}\"", p,
                      role));
    json msg = {{"role", role}};
    const json* content = field(m, "content");
    const json* calls = role == "assistant" ? field(m, "tool_calls") : nullptr;
    if (content != nullptr) {
      msg["content"] = content_text(*content, p + ".content");
    } else if (calls == nullptr) {
      bad(p + ".content", fmt::format("'{}.content' is missing", p));
    } else {
      msg["content"] = "";
    }
    if (calls != nullptr) {
      if (!calls->is_array())
        bad(p + ".tool_calls", fmt::format("'{}.tool_calls' must be a list", p));
      json list = json::array();
      for (std::size_t k = 0; k < calls->size(); ++k) {
        const std::string cp = fmt::format("{}.tool_calls[{}]", p, k);
        const json& call = (*calls)[k];
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
          bad(cp,
              fmt::format("'{}' must be {{\"type\": \"function\", \"function\": {{...}}}}", cp));
        json fn = call["function"];
        string(fn.value("name", json()), cp + ".function.name");
        if (fn.contains("arguments") && fn["arguments"].is_string()) {
          json parsed = json::parse(fn["arguments"].get<std::string>(), nullptr, false);
          if (!parsed.is_discarded()) fn["arguments"] = parsed;
        }
        json c = call;
        c["function"] = fn;
        list.push_back(c);
      }
      msg["tool_calls"] = list;
    }
    if (const json* id = field(m, "tool_call_id"))
      msg["tool_call_id"] = string(*id, p + ".tool_call_id");
    if (const json* name = field(m, "name")) msg["name"] = string(*name, p + ".name");
    out.push_back(msg);
  }
  return out;
}

}  // namespace

std::vector<std::int32_t> token_ids(const json& value, const std::string& param,
                                    const ServerLimits& limits) {
  if (!value.is_array()) bad(param, fmt::format("'{}' must be a list of token ids", param));
  const auto V = limits.model->model().config().vocab_size;
  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i < value.size(); ++i)
    ids.push_back(
        static_cast<std::int32_t>(integer(value[i], fmt::format("{}[{}]", param, i), 0, V - 1)));
  return ids;
}

decode::GenerationConfig server_defaults(const engine::LoadedModel& lm) {
  decode::GenerationConfig c;
  c.do_sample = true;
  c.top_k = 0;
  const json& file = lm.model().generation_config();
  json taken = json::object();
  for (const char* key : {"temperature", "top_k", "top_p", "min_p", "repetition_penalty",
                          "eos_token_id", "pad_token_id", "bos_token_id"})
    if (file.contains(key)) taken[key] = file[key];
  decode::apply_generation_json(c, taken, lm.path() + "/generation_config.json");
  const std::int32_t eos = eos_id_of(lm);
  if (eos >= 0 &&
      std::find(c.eos_token_id.begin(), c.eos_token_id.end(), eos) == c.eos_token_id.end())
    c.eos_token_id.push_back(eos);
  decode::validate(c);
  return c;
}

void apply_replay_settings(const json& settings, decode::GenerationConfig& c,
                           const ServerLimits& limits) {
  if (!settings.is_object()) bad("settings", "'settings' must be an object");
  apply_numbers(settings, c, limits.model->model().config().vocab_size, "settings.");
  if (const json* v = field(settings, "order_preset")) {
    c.order_preset = order_preset(*v, "settings.order_preset");
    mark(c, "order_preset");
  }
  c.do_sample = true;  // temperature 0 is greedy, as in a request
  try {
    decode::validate(c);
  } catch (const std::exception& e) {
    bad("settings", e.what());
  }
}

std::int64_t optional_int(const json& body, const char* name, std::int64_t lo, std::int64_t hi,
                          std::int64_t fallback) {
  const json* v = field(body, name);
  if (v == nullptr) return fallback;
  if (!v->is_number_integer() || v->get<std::int64_t>() < lo || v->get<std::int64_t>() > hi)
    bad(name, fmt::format("'{}' must be an integer in [{}, {}]", name, lo, hi));
  return v->get<std::int64_t>();
}

std::string render_chat(const json& messages, const json& tools, bool add_generation_prompt,
                        const ServerLimits& limits, const json& kwargs) {
  if (!kwargs.is_null() && !kwargs.is_object())
    bad("chat_template_kwargs", "'chat_template_kwargs' must be an object of template variables");
  const json normalized = normalize_messages(messages);
  if (!tools.is_null() && !tools.is_array()) bad("tools", "'tools' must be a list");
  for (std::size_t i = 0; tools.is_array() && i < tools.size(); ++i) {
    const json& t = tools[i];
    const std::string p = fmt::format("tools[{}]", i);
    if (!t.is_object() || t.value("type", json()) != "function" || !t.contains("function") ||
        !t["function"].is_object() || !t["function"].contains("name") ||
        !t["function"]["name"].is_string())
      bad(p, fmt::format("'{}' must be {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}",
                         p));
  }
  std::lock_guard lock(*limits.template_mutex);
  try {
    const nlohmann::ordered_json m = nlohmann::ordered_json::parse(normalized.dump());
    const nlohmann::ordered_json t =
        tools.is_array() && !tools.empty() ? nlohmann::ordered_json::parse(tools.dump()) : nullptr;
    const nlohmann::ordered_json extra =
        kwargs.is_object() ? nlohmann::ordered_json::parse(kwargs.dump()) : nullptr;
    return limits.model->chat_template().render(m, t, add_generation_prompt, extra);
  } catch (const ApiError&) {
    throw;
  } catch (const std::exception& e) {
    bad("messages", fmt::format("the chat template failed on these messages: {}", e.what()));
  }
}

ParsedRequest parse_chat_request(const json& body, const ServerLimits& limits,
                                 const nlohmann::ordered_json* written) {
  ParsedRequest r;
  r.chat = true;
  read_common(body, r, limits);
  if (const json* v = field(body, "logprobs")) r.logprobs.wanted = boolean(*v, "logprobs");
  if (const json* v = field(body, "top_logprobs")) {
    r.logprobs.top = static_cast<int>(integer(*v, "top_logprobs", 0, 20));
    if (!r.logprobs.wanted) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  read_scoring(body, r, limits);
  const json* messages = field(body, "messages");
  if (messages == nullptr) bad("messages", "'messages' is required");
  json tools = nullptr;
  if (const json* v = field(body, "tools")) tools = *v;
  if (const json* v = field(body, "tool_choice"); v != nullptr && *v == "none") tools = nullptr;
  r.parse_tools = tools.is_array() && !tools.empty();
  json kwargs = nullptr;
  if (const json* v = field(body, "chat_template_kwargs")) kwargs = *v;
  const std::string text = render_chat(*messages, tools, true, limits, kwargs);
  // A thinking template (Qwen3's) writes <think> blocks: the reply's reasoning is split off.
  r.reasoning = limits.model->chat_template().source.find("</think>") != std::string::npos;
  const tok::Tokenizer& tok = limits.model->require_tokenizer("messages");
  r.jobs.push_back(make_job(body, r, tok.encode(text), limits));
  const bool thinking = chat::reply_opens_thinking(limits.model->chat_template().source, text);
  r.jobs.back().config.constraint =
      request_constraint(body, true, tools, limits, thinking, written);
  r.prompt_texts.push_back(text);
  r.keep = keep_requested(body, r, 1);
  refuse_constrained_keep(r);
  return r;
}

ParsedRequest parse_completion_request(const json& body, const ServerLimits& limits,
                                       const nlohmann::ordered_json* written) {
  ParsedRequest r;
  r.chat = false;
  read_common(body, r, limits);
  if (const json* v = field(body, "logprobs")) {
    r.logprobs = {true, static_cast<int>(integer(*v, "logprobs", 0, 20))};
  }
  if (const json* v = field(body, "echo")) r.echo = boolean(*v, "echo");
  read_scoring(body, r, limits);
  if (const json* v = field(body, "suffix"))
    if (!string(*v, "suffix").empty())
      bad("suffix", "'suffix' is not supported (no fill-in-the-middle)");
  const json* prompt = field(body, "prompt");
  if (prompt == nullptr) bad("prompt", "'prompt' is required");
  const tok::Tokenizer& tok = limits.model->require_tokenizer("prompt");
  // One prompt: a string or a list of ids; many: a list of those.
  std::vector<std::pair<std::vector<std::int32_t>, std::string>> prompts;
  const auto one = [&](const json& p, const std::string& param) {
    if (p.is_string()) {
      if (p.get_ref<const std::string&>().empty()) bad(param, fmt::format("'{}' is empty", param));
      prompts.push_back({tok.encode(p.get<std::string>()), p.get<std::string>()});
    } else {
      auto ids = token_ids(p, param, limits);
      if (ids.empty()) bad(param, fmt::format("'{}' is empty", param));
      prompts.push_back({ids, tok.decode(ids)});
    }
  };
  if (prompt->is_string() || (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_number())) {
    one(*prompt, "prompt");
  } else if (prompt->is_array() && !prompt->empty()) {
    if (prompt->size() > 16) bad("prompt", "'prompt' holds at most 16 prompts");
    for (std::size_t i = 0; i < prompt->size(); ++i)
      one((*prompt)[i], fmt::format("prompt[{}]", i));
  } else {
    bad("prompt", "'prompt' must be a non-empty string, a list of token ids, or a list of those");
  }
  if (static_cast<int>(prompts.size()) * r.n > limits.parallel)
    bad("n", fmt::format("{} prompts x n {} exceed --parallel {}", prompts.size(), r.n,
                         limits.parallel));
  const auto constraint = request_constraint(body, false, nullptr, limits, false, written);
  for (auto& [ids, text] : prompts) {
    r.jobs.push_back(make_job(body, r, std::move(ids), limits));
    r.jobs.back().config.constraint = constraint;
    r.prompt_texts.push_back(text);
  }
  r.keep = keep_requested(body, r, prompts.size());
  refuse_constrained_keep(r);
  if (r.keep && r.jobs[0].config.max_new_tokens == 0)
    bad("max_tokens", "'logitscope.keep' needs a generation: 'max_tokens' must be at least 1");
  return r;
}

}  // namespace ls::server
