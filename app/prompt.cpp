// Prompt handling shared by every command that takes a prompt.
#include "app/prompt.h"

#include <filesystem>

#include "core/error.h"

#if __has_include("tokenizer/tokenizer.h")
#include "tokenizer/tokenizer.h"
#define LS_HAVE_TOKENIZER 1
#endif
#if __has_include("chat/chat_template.h")
#include "chat/chat_template.h"
#define LS_HAVE_CHAT 1
#endif

namespace ls::app {

namespace fs = std::filesystem;

LoadedModel load_model(const ModelOptions& o) {
  LoadedModel lm;
  lm.model = Model::load(o.model);
  const fs::path tok = fs::path(o.model) / "tokenizer.json";
#ifdef LS_HAVE_TOKENIZER
  if (fs::exists(tok))
    lm.tokenizer = std::make_shared<const Tokenizer>(Tokenizer::load(tok.string()));
#endif
  const fs::path cfg = fs::path(o.model) / "tokenizer_config.json";
  if (fs::exists(cfg)) lm.chat_template_config = cfg.string();
  return lm;
}

void add_prompt_options(CLI::App& cmd, PromptOptions& o) {
  auto* tokens = cmd.add_option("--tokens", o.tokens, "Input as token ids: 1,2,3");
  auto* prompt = cmd.add_option("-p,--prompt", o.prompt, "Input as text");
  tokens->excludes(prompt);
  cmd.add_flag("--chat", o.chat, "Wrap --prompt as a user message and apply the chat template");
  cmd.add_option("--system", o.system, "System message (with --chat)");
  cmd.add_flag("--split-special", o.split_special,
               "Tokenize special-token text in --prompt as plain text");
}

std::vector<std::int32_t> prompt_tokens(PromptOptions& o, const LoadedModel& lm) {
  if (!o.tokens.empty()) {
    if (o.chat) fail("--chat applies to --prompt, not to --tokens");
    return parse_token_list(o.tokens);
  }
  if (o.prompt.empty()) fail("give the input with --tokens 1,2,3 or --prompt TEXT");
  if (!o.system.empty() && !o.chat) fail("--system needs --chat");
  if (!lm.tokenizer)
    fail("{}: --prompt needs a tokenizer.json in the model directory", lm.model->path());
#ifdef LS_HAVE_TOKENIZER
  std::string text = o.prompt;
  bool split_special = o.split_special;
  if (o.chat) {
#ifdef LS_HAVE_CHAT
    if (lm.chat_template_config.empty())
      fail("{}: --chat needs tokenizer_config.json with a chat_template", lm.model->path());
    const auto tmpl = chat::ChatTemplate::from_tokenizer_config(lm.chat_template_config);
    text = tmpl.render(chat::make_messages(o.prompt, o.system), nullptr, true);
    // The template's own special tokens must stay special even when user text is split.
    split_special = false;
#else
    fail("--chat is not available in this build");
#endif
  }
  o.rendered = text;
  return lm.tokenizer->encode(text, split_special);
#else
  fail("--prompt is not available in this build");
#endif
}

std::string token_bytes(const LoadedModel& lm, std::int32_t id) {
#ifdef LS_HAVE_TOKENIZER
  if (lm.tokenizer) return lm.tokenizer->token_bytes(id);
#endif
  (void)lm;
  (void)id;
  return "";
}

std::string token_text(const LoadedModel& lm, std::int32_t id) {
#ifdef LS_HAVE_TOKENIZER
  if (lm.tokenizer) return lm.tokenizer->token_text(id);
#endif
  (void)lm;
  (void)id;
  return "";
}

}  // namespace ls::app
