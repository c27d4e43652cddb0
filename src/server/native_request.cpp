// parse_native_request (native_request.h): llama-server's fields and defaults over the model's
// special tokens, its sampler list as the chain's order, and its prompt forms (text, ids, both
// mixed, or a list of those).
#include "server/native_request.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "decode/order.h"
#include "server/body_fields.h"
#include "server/structured_output.h"

namespace ls::server {

using nlohmann::json;
using namespace body;

namespace {

// llama-server's sampler names (and the alternative spellings its CLI takes) -> our stages.
// "penalties" is one sampler there: repetition, frequency and presence, in that order.
std::vector<std::string> stages_of(const std::string& name) {
  if (name == "penalties") return {"repetition_penalty", "frequency_penalty", "presence_penalty"};
  if (name == "dry") return {"dry"};
  if (name == "top_k" || name == "top-k") return {"top_k"};
  if (name == "top_p" || name == "top-p" || name == "nucleus") return {"top_p"};
  if (name == "min_p" || name == "min-p") return {"min_p"};
  if (name == "typ_p" || name == "typical_p" || name == "typical-p" || name == "typical" ||
      name == "typ-p" || name == "typ")
    return {"typical_p"};
  if (name == "temperature" || name == "temp") return {"temperature"};
  if (name == "xtc") return {"xtc"};
  if (name == "top_n_sigma" || name == "top-n-sigma") return {"top_n_sigma"};
  return {};
}

std::string name_of_letter(char c) {
  switch (c) {
    case 'd':
      return "dry";
    case 'k':
      return "top_k";
    case 'y':
      return "typ_p";
    case 'p':
      return "top_p";
    case 'm':
      return "min_p";
    case 't':
      return "temperature";
    case 'x':
      return "xtc";
    case 'e':
      return "penalties";
    case 's':
      return "top_n_sigma";
    default:
      return std::string(1, c);
  }
}

// llama-server's default sampler list.
const std::vector<std::string> kDefaultSamplers = {"penalties", "dry",   "top_k", "typ_p",
                                                   "top_p",     "min_p", "xtc",   "temperature"};

// The defaults of llama-server (common_params_sampling), over the model's special tokens.
decode::GenerationConfig native_defaults(const ServerLimits& limits) {
  decode::GenerationConfig c;
  c.eos_token_id = limits.defaults.eos_token_id;
  c.pad_token_id = limits.defaults.pad_token_id;
  c.bos_token_id = limits.defaults.bos_token_id;
  c.do_sample = true;
  c.order_preset = decode::OrderPreset::llama_cpp;
  c.temperature = 0.8;
  c.top_k = 40;
  c.top_p = 0.95;
  c.min_p = 0.05;
  c.sources["order_preset"] = "request";
  return c;
}

void mark(decode::GenerationConfig& c, const char* name) {
  c.sources[name] = "request";
}

// A number field of llama-server's over `member`; `lo`/`hi` bound what makes sense.
void read_number(const json& b, const char* name, double& member, double lo, double hi,
                 decode::GenerationConfig& c) {
  if (const json* v = field(b, name)) {
    member = number(*v, name, lo, hi);
    mark(c, name);
  }
}

// logit_bias as llama-server takes it: [[id or text, bias or false], ...] (text: each of its
// tokens), or OpenAI's {"id": bias}. Biases of one token add up, as llama.cpp applies each.
void read_logit_bias(const json& v, decode::GenerationConfig& c, const ServerLimits& limits) {
  const auto V = limits.model->model().config().vocab_size;
  const auto bias_of = [](const json& b, const std::string& param) {
    if (b.is_boolean() && !b.get<bool>()) return -std::numeric_limits<double>::infinity();
    if (!b.is_number()) bad(param, fmt::format("'{}' must be a number or false", param));
    return number(b, param, -1e6, 1e6);
  };
  if (v.is_object()) {
    for (const auto& [key, b] : v.items()) {
      const std::string param = "logit_bias." + key;
      std::int64_t id = -1;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id >= V)
        bad(param, fmt::format("'logit_bias' key '{}' must be a token id in [0, {})", key, V));
      c.logit_bias[static_cast<std::int32_t>(id)] += bias_of(b, param);
    }
    return;
  }
  if (!v.is_array())
    bad("logit_bias", "'logit_bias' must be a list of [token id or text, bias] or an object");
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string param = fmt::format("logit_bias[{}]", i);
    const json& e = v[i];
    if (!e.is_array() || e.size() != 2)
      bad(param, fmt::format("'{}' must be [token id or text, bias or false]", param));
    const double b = bias_of(e[1], param + "[1]");
    if (e[0].is_string()) {
      const tok::Tokenizer& tok = limits.model->require_tokenizer(param + "[0]");
      for (const auto id : tok.encode(e[0].get<std::string>())) c.logit_bias[id] += b;
    } else {
      const auto id = integer(e[0], param + "[0]", 0, V - 1);
      c.logit_bias[static_cast<std::int32_t>(id)] += b;
    }
  }
}

// The prompt forms: "text", [ids], [ids and texts mixed], or a list of those (one job each).
std::vector<std::vector<std::int32_t>> read_prompts(const json& body, const ServerLimits& limits) {
  const json* prompt = field(body, "prompt");
  if (prompt == nullptr) bad("prompt", "'prompt' is required");
  const tok::Tokenizer& tok = limits.model->require_tokenizer("prompt");
  const auto V = limits.model->model().config().vocab_size;
  // Text is tokenized with special tokens recognised, as llama-server does.
  const auto one = [&](const json& p, const std::string& param) {
    std::vector<std::int32_t> ids;
    if (p.is_string()) {
      ids = tok.encode(p.get<std::string>(), true);
    } else if (p.is_array()) {
      for (std::size_t i = 0; i < p.size(); ++i) {
        const std::string at = fmt::format("{}[{}]", param, i);
        if (p[i].is_string()) {
          const auto more = tok.encode(p[i].get<std::string>(), true);
          ids.insert(ids.end(), more.begin(), more.end());
        } else {
          ids.push_back(static_cast<std::int32_t>(integer(p[i], at, 0, V - 1)));
        }
      }
    } else {
      bad(param, fmt::format("'{}' must be text, a list of token ids and texts, or a list of those",
                             param));
    }
    if (ids.empty()) bad(param, fmt::format("'{}' is empty", param));
    return ids;
  };
  // One prompt is a string or a list whose items are ids or strings; many: a list of lists or
  // strings, as llama-server tells them apart (a list of strings only is many prompts).
  const bool many = prompt->is_array() && !prompt->empty() &&
                    std::all_of(prompt->begin(), prompt->end(),
                                [](const json& p) { return p.is_string() || p.is_array(); });
  std::vector<std::vector<std::int32_t>> prompts;
  if (many) {
    if (prompt->size() > 16) bad("prompt", "'prompt' holds at most 16 prompts");
    for (std::size_t i = 0; i < prompt->size(); ++i)
      prompts.push_back(one((*prompt)[i], fmt::format("prompt[{}]", i)));
  } else {
    prompts.push_back(one(*prompt, "prompt"));
  }
  if (static_cast<int>(prompts.size()) > limits.parallel)
    bad("prompt", fmt::format("{} prompts exceed --parallel {}", prompts.size(), limits.parallel));
  return prompts;
}

// Fields of llama-server's that would change the output and are not offered here.
void refuse_unsupported(const json& b) {
  const auto refuse_unless = [&](const char* name, const json& neutral, const char* why) {
    const json* v = field(b, name);
    if (v != nullptr && *v != neutral &&
        !(v->is_number() && neutral.is_number() && v->get<double>() == neutral.get<double>()))
      bad(name, fmt::format("'{}' would change the output and is not supported: {}", name, why),
          "unsupported_value");
  };
  refuse_unless("n_indent", 0, "no minimum indentation is enforced");
  refuse_unless("t_max_predict_ms", 0, "no time limit: use 'n_predict'");
  refuse_unless("t_max_prompt_ms", -1, "no time limit");
  refuse_unless("tfs_z", 1, "tail-free sampling was removed from llama.cpp too");
  refuse_unless("image_data", json::array(), "images are not supported");
  refuse_unless("lora", json::array(), "LoRA adapters are not supported");
  refuse_unless("grammar_lazy", false, "lazy grammars are not supported");
  refuse_unless("grammar_triggers", json::array(), "lazy grammars are not supported");
  refuse_unless("input_extra", json::array(), "fill-in-the-middle is not supported");
}

// An integer field of llama-server's over `member`.
void read_int(const json& b, const char* name, int& member, std::int64_t lo, std::int64_t hi,
              decode::GenerationConfig& c) {
  if (const json* v = field(b, name)) {
    member = static_cast<int>(integer(*v, name, lo, hi));
    mark(c, name);
  }
}

// The penalties, DRY, mirostat and min_keep. A window of -1 is the whole context, as there.
void read_llama_samplers(const json& b, decode::GenerationConfig& c, const ServerLimits& limits) {
  read_number(b, "repeat_penalty", c.repetition_penalty, 0, 100, c);
  if (c.repetition_penalty == 0) bad("repeat_penalty", "'repeat_penalty' must be above 0");
  read_number(b, "presence_penalty", c.presence_penalty, -100, 100, c);
  read_number(b, "frequency_penalty", c.frequency_penalty, -100, 100, c);
  c.repeat_last_n = 64;
  read_int(b, "repeat_last_n", c.repeat_last_n, -1, std::numeric_limits<std::int32_t>::max(), c);
  if (c.repeat_last_n == -1) c.repeat_last_n = limits.ctx;
  read_number(b, "dry_multiplier", c.dry_multiplier, 0, 1e6, c);
  if (const json* v = field(b, "dry_base")) {
    c.dry_base = number(*v, "dry_base", 0, 1e6);
    if (c.dry_base < 1) c.dry_base = 1.75;  // llama-server puts its default back below 1
    mark(c, "dry_base");
  }
  read_int(b, "dry_allowed_length", c.dry_allowed_length, 0,
           std::numeric_limits<std::int32_t>::max(), c);
  read_int(b, "dry_penalty_last_n", c.dry_penalty_last_n, -1,
           std::numeric_limits<std::int32_t>::max(), c);
  if (const json* v = field(b, "dry_sequence_breakers")) {
    if (!v->is_array() || v->empty() || v->size() > 64)
      bad("dry_sequence_breakers", "'dry_sequence_breakers' must be a list of 1 to 64 strings");
    c.dry_sequence_breakers.clear();
    for (std::size_t i = 0; i < v->size(); ++i)
      c.dry_sequence_breakers.push_back(
          string((*v)[i], fmt::format("dry_sequence_breakers[{}]", i)));
    mark(c, "dry_sequence_breakers");
  }
  read_int(b, "mirostat", c.mirostat, 0, 2, c);
  read_number(b, "mirostat_tau", c.mirostat_tau, 0, 1e6, c);
  read_number(b, "mirostat_eta", c.mirostat_eta, 0, 1e6, c);
  read_int(b, "min_keep", c.min_keep, 0, limits.model->model().config().vocab_size, c);
}

// The names `samplers` lists: a list of names, or a string of their letters.
std::vector<std::string> sampler_names(const json& samplers) {
  std::vector<std::string> names;
  if (samplers.is_string()) {
    for (const char c : samplers.get<std::string>()) names.push_back(name_of_letter(c));
  } else if (samplers.is_array()) {
    for (std::size_t i = 0; i < samplers.size(); ++i)
      names.push_back(string(samplers[i], fmt::format("samplers[{}]", i)));
  } else {
    bad("samplers", "'samplers' must be a list of sampler names or a string of their letters");
  }
  return names;
}

// llama-server's sampler names as the decode chain's stage names, in order. Throws ApiError
// naming samplers[i] for an unknown name or one given twice.
std::vector<std::string> sampler_stages(const std::vector<std::string>& names) {
  std::vector<std::string> stages;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string param = fmt::format("samplers[{}]", i);
    const auto more = stages_of(names[i]);
    if (more.empty())
      bad(param, fmt::format("'{}' is '{}', not a sampler: use penalties, dry, top_k, typ_p, "
                             "top_p, min_p, xtc, temperature or top_n_sigma",
                             param, names[i]));
    for (const auto& s : more) {
      if (std::find(stages.begin(), stages.end(), s) != stages.end())
        bad(param, fmt::format("'{}' names '{}' a second time: each sampler runs once here", param,
                               names[i]));
      stages.push_back(s);
    }
  }
  return stages;
}

}  // namespace

NativeRequest parse_native_request(const json& b, const ServerLimits& limits,
                                   const nlohmann::ordered_json* written) {
  if (!b.is_object()) bad("", "the request body must be a JSON object");
  refuse_unsupported(b);
  NativeRequest r;
  r.parsed.chat = false;
  if (const json* v = field(b, "stream")) r.parsed.stream = boolean(*v, "stream");
  if (const json* v = field(b, "return_tokens"))
    r.options.return_tokens = boolean(*v, "return_tokens");
  if (const json* v = field(b, "timings_per_token"))
    r.options.timings_per_token = boolean(*v, "timings_per_token");
  if (const json* v = field(b, "post_sampling_probs"))
    r.options.post_sampling = boolean(*v, "post_sampling_probs");
  // n_probs; OpenAI's `logprobs` stands in when n_probs is not given, as llama-server reads it.
  if (const json* v = field(b, "n_probs")) {
    r.options.n_probs = static_cast<int>(integer(*v, "n_probs", 0, 1024));
  } else if (const json* l = field(b, "logprobs"); l != nullptr && l->is_number()) {
    r.options.n_probs = static_cast<int>(integer(*l, "logprobs", 0, 1024));
  }
  if (const json* v = field(b, "response_fields")) {
    if (!v->is_array()) bad("response_fields", "'response_fields' must be a list of strings");
    for (std::size_t i = 0; i < v->size(); ++i)
      r.options.response_fields.push_back(string((*v)[i], fmt::format("response_fields[{}]", i)));
  }

  decode::GenerationConfig c = native_defaults(limits);
  // Temperature: <= 0 is greedy (llama.cpp keeps the best token only).
  if (const json* v = field(b, "temperature")) {
    const double t = number(*v, "temperature", -1e6, 1e6);
    if (t > 0 && t < decode::kMinTemperature)
      bad("temperature", fmt::format("'temperature' must be <= 0 (greedy) or >= {}, got {}",
                                     decode::kMinTemperature, t));
    c.temperature = std::max(t, 0.0);
    mark(c, "temperature");
  }
  read_number(b, "dynatemp_range", c.dynatemp_range, 0, 100, c);
  read_number(b, "dynatemp_exponent", c.dynatemp_exponent, 0, 100, c);
  if (const json* v = field(b, "top_k")) {
    const auto k = integer(*v, "top_k", std::numeric_limits<std::int32_t>::min(),
                           std::numeric_limits<std::int32_t>::max());
    const auto V = limits.model->model().config().vocab_size;
    c.top_k = k <= 0 || k >= V ? 0 : static_cast<int>(k);  // <= 0: the whole vocabulary
    mark(c, "top_k");
  }
  if (const json* v = field(b, "top_p")) {
    c.top_p = number(*v, "top_p", 0, 1, true);  // 1: off
    mark(c, "top_p");
  }
  read_number(b, "min_p", c.min_p, 0, 1, c);
  if (const json* v = field(b, "typical_p")) {
    c.typical_p = number(*v, "typical_p", 0, 1, true);  // 1: off
    mark(c, "typical_p");
  }
  read_number(b, "xtc_probability", c.xtc_probability, 0, 1, c);
  read_number(b, "xtc_threshold", c.xtc_threshold, 0, 1, c);
  read_number(b, "top_n_sigma", c.top_n_sigma, -1, 100, c);
  read_llama_samplers(b, c, limits);
  if (const json* v = field(b, "logit_bias")) {
    read_logit_bias(*v, c, limits);
    mark(c, "logit_bias");
  }
  const json* ignore_eos_field = field(b, "ignore_eos");
  const bool ignore_eos = ignore_eos_field != nullptr && boolean(*ignore_eos_field, "ignore_eos");
  if (ignore_eos) {
    // As llama-server does it: the end tokens are biased to -inf, so they are never chosen.
    for (const auto id : c.eos_token_id)
      c.logit_bias[id] = -std::numeric_limits<double>::infinity();
    mark(c, "logit_bias");
  }
  if (const json* v = field(b, "seed")) {
    // -1 (llama.cpp's LLAMA_DEFAULT_SEED as int) draws one.
    if (!(v->is_number_integer() && !v->is_number_unsigned() && v->get<std::int64_t>() == -1)) {
      if (v->is_number_unsigned()) {
        c.seed = v->get<std::uint64_t>();
      } else {
        c.seed = static_cast<std::uint64_t>(
            integer(*v, "seed", 0, std::numeric_limits<std::int64_t>::max()));
      }
      mark(c, "seed");
    }
  }
  if (const json* v = field(b, "stop")) {
    if (v->is_string()) v = nullptr;  // llama-server reads a list only; a lone string is ignored
    if (v != nullptr && !v->is_array()) bad("stop", "'stop' must be a list of strings");
    for (std::size_t i = 0; v != nullptr && i < v->size(); ++i) {
      const std::string& s = string((*v)[i], fmt::format("stop[{}]", i));
      if (!s.empty()) c.stop_strings.push_back(s);  // empty ones are skipped, as there
    }
    mark(c, "stop_strings");
  }
  // The sampler list: the stages it names run in its order; the others do not run.
  std::vector<std::string> samplers = kDefaultSamplers;
  if (const json* v = field(b, "samplers")) {
    samplers = sampler_names(*v);
    c.order = sampler_stages(samplers);
    const auto named = [&](const char* stage) {
      return std::find(c.order.begin(), c.order.end(), stage) != c.order.end();
    };
    if (!named("repetition_penalty")) {
      c.repetition_penalty = 1;
      c.presence_penalty = c.frequency_penalty = 0;
    }
    if (!named("dry")) c.dry_multiplier = 0;
    if (!named("top_k")) c.top_k = 0;
    if (!named("typical_p")) c.typical_p = 1;
    if (!named("top_p")) c.top_p = 1;
    if (!named("min_p")) c.min_p = 0;
    if (!named("xtc")) c.xtc_probability = 0;
    if (!named("top_n_sigma")) c.top_n_sigma = -1;
    if (!named("temperature")) {  // no temperature stage: the draw is at 1
      c.temperature = 1;
      c.dynatemp_range = 0;
    }
    mark(c, "order");
  }
  c.constraint = request_constraint(b, false, nullptr, limits, false, written);
  limits.model->resolve_dry(c);

  const auto prompts = read_prompts(b, limits);
  // n_predict (or max_tokens): -1 runs to the end of the context, 0 only evaluates the prompt.
  std::int64_t n_predict = -1;
  for (const char* name : {"n_predict", "max_tokens"}) {
    if (const json* v = field(b, name)) {
      n_predict = integer(*v, name, -1, std::numeric_limits<std::int32_t>::max());
      break;
    }
  }
  for (const auto& ids : prompts) {
    const auto room = static_cast<std::int64_t>(limits.ctx) - static_cast<std::int64_t>(ids.size());
    if (room <= 0)
      throw ApiError(400,
                     fmt::format("the prompt has {} tokens but the context holds {} positions "
                                 "(--ctx {}): shorten it",
                                 ids.size(), limits.ctx, limits.ctx),
                     "prompt", "context_length_exceeded");
    Job job;
    job.config = c;
    // 0: the run scores the prompt and generates nothing.
    job.config.max_new_tokens = static_cast<int>(n_predict < 0 ? room : std::min(n_predict, room));
    job.config.max_length = 0;
    job.config.sources["max_new_tokens"] = "request";
    try {
      decode::validate(job.config);
      decode::resolve_order(job.config);
    } catch (const std::exception& e) {
      bad(c.order.empty() ? "" : "samplers", e.what());
    }
    job.prompt = ids;
    job.logprobs = {r.options.n_probs > 0, r.options.n_probs, r.options.post_sampling};
    r.parsed.jobs.push_back(std::move(job));
    r.parsed.prompt_texts.push_back(limits.model->tokenizer()->decode(ids));
  }

  const double inf = std::numeric_limits<double>::infinity();
  json bias = json::array();
  for (const auto& [id, v] : c.logit_bias) bias.push_back({id, v == -inf ? json(false) : json(v)});
  r.options.settings = {
      {"n_predict", n_predict},
      {"seed", c.seed ? json(*c.seed) : json(-1)},
      {"temperature", c.temperature},
      {"dynatemp_range", c.dynatemp_range},
      {"dynatemp_exponent", c.dynatemp_exponent},
      {"top_k", c.top_k},
      {"top_p", c.top_p},
      {"min_p", c.min_p},
      {"xtc_probability", c.xtc_probability},
      {"xtc_threshold", c.xtc_threshold},
      {"typical_p", c.typical_p},
      {"top_n_sigma", c.top_n_sigma},
      {"repeat_last_n", c.repeat_last_n},
      {"repeat_penalty", c.repetition_penalty},
      {"presence_penalty", c.presence_penalty},
      {"frequency_penalty", c.frequency_penalty},
      {"dry_multiplier", c.dry_multiplier},
      {"dry_base", c.dry_base},
      {"dry_allowed_length", c.dry_allowed_length},
      {"dry_penalty_last_n", c.dry_penalty_last_n},
      {"dry_sequence_breakers", c.dry_sequence_breakers},
      {"mirostat", c.mirostat},
      {"mirostat_tau", c.mirostat_tau},
      {"mirostat_eta", c.mirostat_eta},
      {"min_keep", c.min_keep},
      {"stop", c.stop_strings},
      {"max_tokens", n_predict},
      {"ignore_eos", ignore_eos},
      {"stream", r.parsed.stream},
      {"logit_bias", bias},
      {"n_probs", r.options.n_probs},
      {"post_sampling_probs", r.options.post_sampling},
      {"grammar", c.constraint ? json(c.constraint->description) : json("")},
      {"samplers", samplers},
      {"timings_per_token", r.options.timings_per_token},
  };
  return r;
}

}  // namespace ls::server
