// The table of refused fields (refused_fields.h): OpenAI's, vLLM's and llama-server's request
// fields that change what is generated, with the value that leaves the output alone.
#include "server/refused_fields.h"

#include <fmt/format.h>

#include "server/request.h"

namespace ls::server {

using nlohmann::json;

namespace {

struct Refused {
  const char* field;
  bool chat_only;
  json neutral;         // accepted when equal (null: any value is refused)
  const char* instead;  // what to use, or why not
};

// (json initializers need a runtime table.)
const std::vector<Refused>& table() {
  static const std::vector<Refused> t = {
      // OpenAI
      {"functions", true, nullptr, "the deprecated functions API is not supported: use 'tools'"},
      {"function_call", true, nullptr,
       "the deprecated functions API is not supported: use 'tool_choice'"},
      {"best_of", false, 1, "best_of is not supported: use 'n' and compare the logprobs"},
      {"modalities", true, json::array({"text"}), "only text output is supported"},
      {"audio", true, nullptr, "audio output is not supported"},
      {"reasoning_effort", true, nullptr,
       "reasoning_effort is not supported: Qwen3 thinking is switched with "
       "'chat_template_kwargs': {\"enable_thinking\": false}"},
      {"web_search_options", true, nullptr, "web search is not supported"},
      {"verbosity", true, nullptr, "verbosity is not supported"},
      // vLLM
      {"guided_json", false, nullptr, "use 'response_format' (chat) or 'json_schema'"},
      {"guided_regex", false, nullptr,
       "regular-expression constraints are not supported: use 'grammar'"},
      {"guided_choice", false, nullptr, "use 'grammar', e.g. root ::= \"a\" | \"b\""},
      {"guided_grammar", false, nullptr, "use 'grammar' (GBNF, llama.cpp's syntax)"},
      {"structured_outputs", false, nullptr, "use 'response_format' or 'grammar'"},
      {"use_beam_search", false, false,
       "beam search is not offered by the server (the CLI has it)"},
      {"length_penalty", false, 1, "length_penalty applies to beam search, which the server lacks"},
      {"include_stop_str_in_output", false, false, "the stop string is never included"},
      {"skip_special_tokens", false, true, "special tokens are always left out of the text"},
      {"truncate_prompt_tokens", false, nullptr, "prompts are never truncated: shorten the prompt"},
      {"allowed_token_ids", false, nullptr, "use 'logit_bias' or 'grammar'"},
      // llama-server's names for what these routes take under OpenAI's (its samplers' own
      // fields, DRY and mirostat included, are taken as they are; POST /completion takes these)
      {"tfs_z", false, 1, "tail-free sampling is not supported"},
      {"repeat_penalty", false, 1,
       "use 'repetition_penalty' (with 'repeat_last_n' for llama.cpp's window), or POST "
       "/completion"},
      {"n_predict", false, nullptr, "use 'max_tokens'"},
      {"samplers", false, nullptr, "use 'logitscope': {\"order_preset\": ...}"},
      {"n_probs", false, nullptr, "use 'logprobs' and 'top_logprobs'"},
  };
  return t;
}

// Numbers compare by value (1 == 1.0); everything else exactly.
bool same(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

}  // namespace

void refuse_unsupported_fields(const json& body, bool chat) {
  for (const Refused& r : table()) {
    if (r.chat_only && !chat) continue;
    const auto it = body.find(r.field);
    if (it == body.end() || it->is_null()) continue;
    if (!r.neutral.is_null() && same(*it, r.neutral)) continue;
    throw ApiError(
        400,
        fmt::format("'{}' would change the output and is not supported{}: {}", r.field,
                    r.neutral.is_null() ? "" : fmt::format(" (only {})", r.neutral.dump()),
                    r.instead),
        r.field, "unsupported_field");
  }
}

}  // namespace ls::server
