// Prompt handling shared by every command that takes a prompt.
#include "app/prompt.h"

#include <filesystem>

#include "core/error.h"
#include "engine/gguf_tokenizer.h"
#include "model/gguf_metadata.h"

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ls::app {

namespace fs = std::filesystem;

namespace {

// A GGUF carries its tokenizer and chat template in its metadata. The file is opened a second
// time (the mapping is shared by the page cache; only the metadata is parsed again).
void load_gguf_extras(const std::string& path, LoadedModel& lm) {
  const GgufFile f(path);
  if (gguf_has_tokenizer(f)) {
    lm.tokenizer = std::make_shared<const Tokenizer>(engine::gguf_tokenizer(f));
  }
  if (auto t = gguf_chat_template(f)) {
    lm.gguf_chat_template = t->source;
    lm.gguf_special_tokens = t->special_tokens;
  }
}

}  // namespace

LoadedModel load_model(const ModelOptions& o) {
  LoadedModel lm;
  lm.model = Model::load(o.model);
  lm.model->set_kv_type(kv_cache_type(o));
  if (!fs::is_directory(o.model)) {
    load_gguf_extras(o.model, lm);
    return lm;
  }
  const fs::path tok = fs::path(o.model) / "tokenizer.json";
  if (fs::exists(tok))
    lm.tokenizer = std::make_shared<const Tokenizer>(Tokenizer::load(tok.string()));
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
    fail(
        "{}: --prompt needs a tokenizer (tokenizer.json in the model directory, or "
        "tokenizer.ggml.* metadata in a GGUF)",
        lm.model->path());
  std::string text = o.prompt;
  bool split_special = o.split_special;
  if (o.chat) {
    const auto tmpl = load_chat_template(lm);
    text = tmpl.render(chat::make_messages(o.prompt, o.system), nullptr, true);
    // The template's own special tokens must stay special even when user text is split.
    split_special = false;
  }
  o.rendered = text;
  return lm.tokenizer->encode(text, split_special);
}

chat::ChatTemplate load_chat_template(const LoadedModel& lm) {
  if (!lm.gguf_chat_template.empty()) {
    chat::ChatTemplate t;
    t.name = lm.model->path() + " (tokenizer.chat_template)";
    t.source = lm.gguf_chat_template;
    t.special_tokens = lm.gguf_special_tokens;
    t.bos_token = t.special_tokens.value("bos_token", "");
    t.eos_token = t.special_tokens.value("eos_token", "");
    return t;
  }
  if (lm.chat_template_config.empty())
    fail(
        "{}: --chat needs a chat template (tokenizer_config.json with a chat_template, or "
        "tokenizer.chat_template in a GGUF)",
        lm.model->path());
  return chat::ChatTemplate::from_tokenizer_config(lm.chat_template_config);
}

std::string token_bytes(const LoadedModel& lm, std::int32_t id) {
  if (lm.tokenizer) return lm.tokenizer->token_bytes(id);
  return "";
}

std::string token_text(const LoadedModel& lm, std::int32_t id) {
  if (lm.tokenizer) return lm.tokenizer->token_text(id);
  return "";
}

}  // namespace ls::app
