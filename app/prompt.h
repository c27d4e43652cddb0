// How commands turn user input into token ids: --tokens, --prompt with optional --chat/--system
// (rendered through the model's chat template), and --prompts FILE (one prompt per line, or
// JSON Lines with "prompt" or "messages") for commands that run a batch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/common.h"
#include "engine/loaded_model.h"

namespace ls::app {

using engine::LoadedModel;

// The model --model/--kv-type name (an id resolved in place first: app/model_source.h), opened
// once (weights, tokenizer, template, defaults).
LoadedModel load_model(ModelOptions& o);

struct PromptOptions {
  std::string tokens;     // --tokens 1,2,3
  std::string prompt;     // --prompt TEXT
  bool chat = false;      // --chat: wrap as a user message and apply the chat template
  std::string system;     // --system TEXT (with --chat)
  bool no_think = false;  // --no-think: enable_thinking=false for the template (Qwen3)
  bool split_special = false;
  std::string rendered;  // filled by prompt_tokens: the text actually tokenized
};

void add_prompt_options(CLI::App& cmd, PromptOptions& o);
// The template variables the options set ({"enable_thinking": false} under --no-think), or null.
nlohmann::ordered_json template_variables(const PromptOptions& o);

// Token ids for the prompt options; throws naming the flags when they are inconsistent.
std::vector<std::int32_t> prompt_tokens(PromptOptions& o, const LoadedModel& lm);

// One prompt of a --prompts file: its text and how to render it.
struct FilePrompt {
  std::size_t line = 0;
  std::string prompt;               // a plain prompt ("" when messages are given)
  nlohmann::ordered_json messages;  // a JSON line's "messages" (null otherwise)
};
// Reads FILE: one prompt per line (blank lines and lines starting with # skipped), or JSON Lines
// objects with "prompt" (a string) or "messages" (a chat). Throws naming `flag`, the file and
// the line.
std::vector<FilePrompt> read_prompt_file(const std::string& path, const char* flag = "--prompts");
// Token ids of one file prompt: "messages" always through the chat template, "prompt" as
// prompt_tokens treats --prompt under `how` (--chat, --system, --split-special); `rendered`
// receives the text tokenized.
std::vector<std::int32_t> file_prompt_tokens(const FilePrompt& p, const PromptOptions& how,
                                             const LoadedModel& lm,
                                             std::string* rendered = nullptr);

}  // namespace ls::app
