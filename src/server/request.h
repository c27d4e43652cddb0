// OpenAI request bodies (chat and legacy completions, with vLLM's extra sampling fields and the
// `logitscope` extension) turned into scheduler Jobs. Every field is checked; a bad one throws
// ApiError naming it as a path ("messages[1].role", "logit_bias.42"), as OpenAI's 400s do.
// Unknown fields are ignored. docs/server-api.md lists every field.
#pragma once

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decode/generation_config.h"
#include "engine/loaded_model.h"
#include "server/scheduler.h"

namespace ls::server {

// An error the client caused (or an overload), as OpenAI's error object.
struct ApiError : std::runtime_error {
  ApiError(int status_, std::string message, std::string param_ = "",
           std::string code_ = "invalid_value", std::string type_ = "invalid_request_error")
      : std::runtime_error(std::move(message)),
        status(status_),
        param(std::move(param_)),
        code(std::move(code_)),
        type(std::move(type_)) {}
  int status;
  std::string param, code, type;
};

// What every request is checked against.
struct ServerLimits {
  const engine::LoadedModel* model = nullptr;
  std::string served_name;
  int ctx = 4096;                                // positions per sequence, prompt + generated
  int parallel = 8;                              // the most choices one request may ask for
  decode::GenerationConfig defaults;             // server_defaults(model)
  std::mutex* template_mutex = nullptr;          // the chat template is rendered under it
  const engine::LoadedModel* model_b = nullptr;  // serve --model-b: compared at kept steps
  std::string model_b_name;
};

// The defaults of the OpenAI API (sampling on, temperature 1, top_p 1, no top_k) with the
// model's generation_config.json values for temperature, top_k, top_p, min_p,
// repetition_penalty and eos_token_id (as vLLM reads them), and the tokenizer's EOS token.
decode::GenerationConfig server_defaults(const engine::LoadedModel& model);

struct ParsedRequest {
  bool chat = true;
  std::vector<Job> jobs;                  // one per prompt (chat: one)
  std::vector<std::string> prompt_texts;  // each prompt as text (completions' echo)
  int n = 1;
  bool stream = false;
  bool include_usage = false;
  // Return logprobs (top: 0..20); `processed` is read per job (Job::logprobs, logprobs_mode).
  decode::LogprobRequest logprobs;
  decode::LogprobRequest prompt_logprobs;       // vLLM's prompt_logprobs (top: entries per token)
  std::vector<std::int32_t> token_ids_logprob;  // ids whose logprob every step reports
  bool echo = false;
  bool parse_tools = false;  // tools were given: <tool_call> blocks become tool_calls
  bool keep = false;         // logitscope.keep: keep the generation for replay
  bool reasoning = false;    // chat with a thinking template (Qwen3): <think> -> reasoning_content
};

// `written`: the same body with its objects' keys in the order they were written, where the
// order matters (a JSON Schema's properties are generated in that order, a tool call names
// its function before its arguments); null: key order (nlohmann::json sorts keys).
ParsedRequest parse_chat_request(const nlohmann::json& body, const ServerLimits& limits,
                                 const nlohmann::ordered_json* written = nullptr);
ParsedRequest parse_completion_request(const nlohmann::json& body, const ServerLimits& limits,
                                       const nlohmann::ordered_json* written = nullptr);

// A replay's `settings` (docs/server-api.md): the number fields, top_k and order_preset over the
// recorded config `c`, checked as a request's are; `param` names settings.FIELD.
void apply_replay_settings(const nlohmann::json& settings, decode::GenerationConfig& c,
                           const ServerLimits& limits);

// The chat template over checked messages (and tools); `param` names the messages field.
// `kwargs` (chat_template_kwargs: an object or null) adds template variables, e.g.
// enable_thinking.
std::string render_chat(const nlohmann::json& messages, const nlohmann::json& tools,
                        bool add_generation_prompt, const ServerLimits& limits,
                        const nlohmann::json& kwargs = nullptr);
// The integer field `name` of `body` in [lo, hi]; `fallback` when absent or null. Throws
// ApiError naming it otherwise.
std::int64_t optional_int(const nlohmann::json& body, const char* name, std::int64_t lo,
                          std::int64_t hi, std::int64_t fallback);
// Token ids of `value` (a list of ids) checked against the vocabulary; `param` names it.
std::vector<std::int32_t> token_ids(const nlohmann::json& value, const std::string& param,
                                    const ServerLimits& limits);

}  // namespace ls::server
