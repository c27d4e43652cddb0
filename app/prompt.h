// How commands turn user input into token ids and ids back into text: --tokens, --prompt with
// optional --chat/--system (rendered through the model's chat template), and a LoadedModel
// that bundles the model with its tokenizer and chat template (from the directory's
// tokenizer.json / tokenizer_config.json, or from a GGUF file's metadata).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/common.h"
#include "model/model.h"

namespace ls {
class Tokenizer;
}
namespace ls::chat {
struct ChatTemplate;
}

namespace ls::app {

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::shared_ptr<const Tokenizer> tokenizer;  // null when the model has no tokenizer.json
  std::string chat_template_config;            // path of tokenizer_config.json, "" if none
  // A GGUF's tokenizer.chat_template and the special tokens it sees ("" when none / not GGUF).
  std::string gguf_chat_template;
  nlohmann::ordered_json gguf_special_tokens = nlohmann::ordered_json::object();
};

LoadedModel load_model(const ModelOptions& o);

// The model's chat template (tokenizer_config.json, or a GGUF's tokenizer.chat_template); throws
// naming the model when it has none.
chat::ChatTemplate load_chat_template(const LoadedModel& lm);

struct PromptOptions {
  std::string tokens;  // --tokens 1,2,3
  std::string prompt;  // --prompt TEXT
  bool chat = false;   // --chat: wrap as a user message and apply the chat template
  std::string system;  // --system TEXT (with --chat)
  bool split_special = false;
  std::string rendered;  // filled by prompt_tokens: the text actually tokenized
};

void add_prompt_options(CLI::App& cmd, PromptOptions& o);

// Token ids for the prompt options; throws naming the flags when they are inconsistent.
std::vector<std::int32_t> prompt_tokens(PromptOptions& o, const LoadedModel& lm);

std::string token_bytes(const LoadedModel& lm, std::int32_t id);  // raw bytes, "" if unknown
std::string token_text(const LoadedModel& lm, std::int32_t id);   // valid UTF-8 for JSON

}  // namespace ls::app
