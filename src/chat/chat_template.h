// A model's chat template as Hugging Face stores it in tokenizer_config.json ("chat_template":
// a string, or a list of {name, template}), rendered with the messages, the tools, the
// add_generation_prompt flag and the tokenizer's special tokens, as transformers'
// apply_chat_template does.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "jinja/template.h"

namespace ls::chat {

struct ChatTemplate {
  // Reads `chat_template` (or the chat_template.jinja file beside the config, where newer
  // transformers versions keep it) and the special tokens. A list of named templates uses
  // "default" (and "tool_use" when tools are given). Errors name the file.
  static ChatTemplate from_tokenizer_config(const std::string& path);

  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     bool add_generation_prompt) const;
  // `extra_context` (an object, may be null) adds template variables, e.g. enable_thinking.
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     bool add_generation_prompt, const nlohmann::ordered_json& extra_context) const;

  std::string source;
  std::string bos_token, eos_token;  // "" when the tokenizer has none
  std::string tool_use_source;       // the "tool_use" named template, if any
  // Hugging Face's special_tokens_map: every special token that is set, by name (bos_token,
  // eos_token, pad_token, unk_token, ..., additional_special_tokens); all passed to the template.
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();
  std::string name = "chat_template";  // used in error messages

 private:
  std::shared_ptr<const jinja::Template> compiled_, compiled_tool_use_;
  std::string compiled_source_, compiled_tool_use_source_;
};

// Wraps one user prompt (with an optional system message; "" = none) as a messages list.
nlohmann::ordered_json make_messages(const std::string& prompt, const std::string& system);

}  // namespace ls::chat
