// Prompt handling shared by every command that takes a prompt.
#include "app/prompt.h"

#include <fstream>

#include "app/model_source.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace ls::app {

LoadedModel load_model(ModelOptions& o) {
  resolve_model(o);
  return LoadedModel::open(o.model, load_options(o));
}

void add_prompt_options(CLI::App& cmd, PromptOptions& o) {
  auto* tokens = cmd.add_option("--tokens", o.tokens, "Input as token ids: 1,2,3");
  auto* prompt = cmd.add_option("-p,--prompt", o.prompt, "Input as text");
  tokens->excludes(prompt);
  cmd.add_flag("--chat", o.chat, "Wrap --prompt as a user message and apply the chat template");
  cmd.add_option("--system", o.system, "System message (with --chat)");
  cmd.add_flag("--no-think", o.no_think,
               "With --chat: render the template with enable_thinking=false (Qwen3 answers "
               "without a <think> block)");
  cmd.add_flag("--split-special", o.split_special,
               "Tokenize special-token text in --prompt as plain text");
}

nlohmann::ordered_json template_variables(const PromptOptions& o) {
  if (!o.no_think) return nullptr;
  return {{"enable_thinking", false}};
}

std::vector<std::int32_t> prompt_tokens(PromptOptions& o, const LoadedModel& lm) {
  if (!o.tokens.empty()) {
    if (o.chat) fail("--chat applies to --prompt, not to --tokens");
    return parse_token_list(o.tokens);
  }
  if (o.prompt.empty()) fail("give the input with --tokens 1,2,3 or --prompt TEXT");
  if (!o.system.empty() && !o.chat) fail("--system needs --chat");
  if (o.no_think && !o.chat) fail("--no-think needs --chat");
  const tok::Tokenizer& tok = lm.require_tokenizer("--prompt");
  std::string text = o.prompt;
  bool split_special = o.split_special;
  if (o.chat) {
    text = lm.chat_template().render(chat::make_messages(o.prompt, o.system), nullptr, true,
                                     template_variables(o));
    // The template's own special tokens must stay special even when user text is split.
    split_special = false;
  }
  o.rendered = text;
  return tok.encode(text, split_special);
}

std::vector<FilePrompt> read_prompt_file(const std::string& path, const char* flag) {
  require_regular_file(path, kMaxTextFileBytes, flag);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{} {}: cannot open the file", flag, path);
  std::vector<FilePrompt> prompts;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[0] == '#') continue;
    FilePrompt p;
    p.line = n;
    if (line[first] != '{') {
      p.prompt = line;
      prompts.push_back(std::move(p));
      continue;
    }
    nlohmann::ordered_json j;
    try {
      j = nlohmann::ordered_json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      fail("{} {} line {}: not valid JSON: {}", flag, path, n, e.what());
    }
    if (j.contains("messages")) {
      if (!j["messages"].is_array() || j["messages"].empty())
        fail("{} {} line {}: \"messages\" must be a non-empty array of chat messages", flag, path,
             n);
      p.messages = j["messages"];
    } else if (j.contains("prompt") && j["prompt"].is_string() &&
               !j["prompt"].get<std::string>().empty()) {
      p.prompt = j["prompt"].get<std::string>();
    } else {
      fail("{} {} line {}: expected {{\"prompt\": \"text\"}} or {{\"messages\": [...]}}", flag,
           path, n);
    }
    prompts.push_back(std::move(p));
  }
  if (prompts.empty())
    fail(
        "{} {}: no prompts (one per line, or JSON Lines with \"prompt\" or \"messages\"; # "
        "starts a comment)",
        flag, path);
  return prompts;
}

std::vector<std::int32_t> file_prompt_tokens(const FilePrompt& p, const PromptOptions& how,
                                             const LoadedModel& lm, std::string* rendered) {
  std::vector<std::int32_t> ids;
  std::string text;
  if (p.messages.is_null()) {
    PromptOptions one = how;
    one.tokens.clear();
    one.prompt = p.prompt;
    ids = prompt_tokens(one, lm);
    text = one.rendered;
  } else {
    const tok::Tokenizer& tok = lm.require_tokenizer("--prompts");
    text = lm.chat_template().render(p.messages, nullptr, true, template_variables(how));
    ids = tok.encode(text);  // the template's special tokens stay special
  }
  if (rendered != nullptr) *rendered = text;
  return ids;
}

}  // namespace ls::app
