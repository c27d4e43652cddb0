// Opening a model with everything around it (see loaded_model.h).
#include "engine/loaded_model.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "formats/gguf_split.h"
#include "model/gguf_metadata.h"
#include "tokenizer/gguf_tokenizer.h"

namespace ls::engine {

namespace fs = std::filesystem;

namespace {
bool is_gguf_file(const std::string& path) {
  return fs::path(path).extension() == ".gguf" && !fs::is_directory(path);
}

// The tokenizer a GGUF's metadata or a directory's tokenizer.json holds; null when none.
std::shared_ptr<const tok::Tokenizer> gguf_file_tokenizer(const formats::GgufFile& file) {
  if (!model::gguf_has_tokenizer(file)) return nullptr;
  return std::make_shared<const tok::Tokenizer>(tok::gguf_tokenizer(file));
}
std::shared_ptr<const tok::Tokenizer> directory_tokenizer(const std::string& dir) {
  const fs::path tok = fs::path(dir) / "tokenizer.json";
  if (!fs::exists(tok)) return nullptr;
  return std::make_shared<const tok::Tokenizer>(tok::Tokenizer::load(tok.string()));
}
}  // namespace

LoadedModel LoadedModel::open(const std::string& path, const model::LoadOptions& options) {
  LoadedModel lm;
  lm.path_ = path;
  if (is_gguf_file(path)) {
    auto file = std::make_unique<formats::GgufFile>(path, formats::GgufArrays::Keep);
    (void)formats::gguf_split_count(*file);  // a later part of a split model: name the first
    lm.read_gguf_text(*file);
    file->drop_arrays();  // the tokenizer holds what it needs; ~40 MiB of parsed arrays go
    lm.model_ = model::Model::from_gguf(std::move(file), options);
    lm.check_vocabulary();
    return lm;
  }
  lm.model_ = model::Model::load(path, options);
  lm.tokenizer_ = directory_tokenizer(path);
  lm.check_vocabulary();
  const fs::path cfg = fs::path(path) / "tokenizer_config.json";
  if (fs::exists(cfg)) lm.tokenizer_config_ = cfg.string();
  return lm;
}

void LoadedModel::read_gguf_text(const formats::GgufFile& file) {
  tokenizer_ = gguf_file_tokenizer(file);
  if (auto t = model::gguf_chat_template(file)) {
    chat::ChatTemplate ct;
    ct.name = path_ + " (tokenizer.chat_template)";
    ct.source = t->source;
    ct.special_tokens = t->special_tokens;
    ct.bos_token = ct.special_tokens.value("bos_token", "");
    ct.eos_token = ct.special_tokens.value("eos_token", "");
    chat_template_ = std::move(ct);
  }
}

LoadedModel LoadedModel::tokenizer_only(const std::string& path) {
  LoadedModel lm;
  lm.path_ = path;
  if (path.empty()) return lm;
  if (is_gguf_file(path)) {
    lm.read_gguf_text(formats::GgufFile(path, formats::GgufArrays::Keep));
    return lm;
  }
  lm.tokenizer_ = directory_tokenizer(path);
  if (fs::exists(fs::path(path) / "tokenizer_config.json"))
    lm.tokenizer_config_ = (fs::path(path) / "tokenizer_config.json").string();
  return lm;
}

void LoadedModel::check_vocabulary() const {
  if (!tokenizer_ || !model_) return;
  const std::int64_t vocab = model_->config().vocab_size;
  // The embedding may have more rows than the tokenizer has ids (Qwen pads 151,665 to 151,936),
  // never fewer: a token id past the rows would read outside the embedding.
  if (tokenizer_->size() > vocab)
    fail(
        "{}: the tokenizer has {} token ids but the model's embedding has {} rows (vocab_size): "
        "they belong to different models",
        path_, tokenizer_->size(), vocab);
}

const model::Model& LoadedModel::model() const {
  if (!model_) fail("{}: the model's weights were not loaded (tokenizer only)", path_);
  return *model_;
}

const tok::Tokenizer& LoadedModel::require_tokenizer(const std::string& what) const {
  if (!tokenizer_)
    fail(
        "{}: {} needs a tokenizer (tokenizer.json in the model directory, or tokenizer.ggml.* "
        "metadata in a GGUF)",
        path(), what);
  return *tokenizer_;
}

const chat::ChatTemplate& LoadedModel::chat_template() const {
  if (!chat_template_) {
    if (tokenizer_config_.empty())
      fail(
          "{}: --chat needs a chat template (tokenizer_config.json with a chat_template, or "
          "tokenizer.chat_template in a GGUF)",
          path());
    chat_template_ = chat::ChatTemplate::from_tokenizer_config(tokenizer_config_);
  }
  return *chat_template_;
}

std::shared_ptr<const grammar::Vocabulary> LoadedModel::grammar_vocabulary(
    const std::string& what) const {
  const tok::Tokenizer& tok = require_tokenizer(what);
  std::lock_guard lock(grammar_vocabulary_->mutex);
  if (!grammar_vocabulary_->vocabulary) {
    const auto n = std::max<std::int64_t>(tok.size(), model_ ? model_->config().vocab_size : 0);
    std::vector<std::string> bytes(static_cast<std::size_t>(n));
    std::vector<bool> special(bytes.size(), false);
    for (std::int64_t id = 0; id < n; ++id) {
      bytes[id] = tok.token_bytes(static_cast<std::int32_t>(id));
      special[id] = tok.is_special(static_cast<std::int32_t>(id));
    }
    grammar_vocabulary_->vocabulary =
        std::make_shared<const grammar::Vocabulary>(std::move(bytes), special);
  }
  return grammar_vocabulary_->vocabulary;
}

std::shared_ptr<const grammar::Constraint> LoadedModel::constraint(std::string_view gbnf,
                                                                   const std::string& origin,
                                                                   std::string description) const {
  auto g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(gbnf, origin));
  return std::make_shared<const grammar::Constraint>(
      grammar::Constraint{std::move(g), grammar_vocabulary(origin), std::move(description)});
}

std::shared_ptr<const decode::DryBreakers> LoadedModel::dry_breakers(
    const std::vector<std::string>& breakers, const std::string& what) const {
  const tok::Tokenizer& tok = require_tokenizer(what);
  std::lock_guard lock(dry_cache_->mutex);
  auto& slot = dry_cache_->by_breakers[breakers];
  if (!slot) {
    // llama.cpp reads a token's text with special tokens rendered, and encodes a breaker's rest
    // without parsing special tokens in it.
    slot = std::make_shared<const decode::DryBreakers>(decode::resolve_dry_breakers(
        breakers, tok.size(), [&](std::int32_t id) { return tok.token_bytes(id); },
        [&](std::string_view text) { return tok.encode(text, /*split_special=*/true); }));
  }
  auto out = slot;
  if (dry_cache_->by_breakers.size() > 16) dry_cache_->by_breakers.clear();  // a server's clients
  return out;
}

void LoadedModel::resolve_dry(decode::GenerationConfig& config) const {
  // Without a tokenizer the table stays unset and build_chain says what is missing.
  if (!decode::dry_needs_breakers(config) || !tokenizer_) return;
  config.dry_breakers = dry_breakers(config.dry_sequence_breakers, "dry_sequence_breakers");
}

std::string LoadedModel::token_bytes(std::int32_t id) const {
  return tokenizer_ ? tokenizer_->token_bytes(id) : "";
}

std::string LoadedModel::token_text(std::int32_t id) const {
  return tokenizer_ ? tokenizer_->token_text(id) : "";
}

}  // namespace ls::engine
