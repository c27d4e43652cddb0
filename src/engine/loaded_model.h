// A model opened once for every command and the server: weights (memory-mapped), tokenizer,
// chat template and generation_config.json, from a Hugging Face directory or a GGUF file. A
// GGUF is opened once: its metadata gives the config, the tokenizer (built directly from the
// tokenizer.ggml.* arrays, which are dropped afterwards) and the chat template. The KV cache
// element type is fixed here, at open.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "chat/chat_template.h"
#include "core/dtype.h"
#include "decode/generation_config.h"
#include "grammar/constraint.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace ls::formats {
class GgufFile;
}

namespace ls::engine {

class LoadedModel {
 public:
  // `path`: a model directory or a .gguf file.
  static LoadedModel open(const std::string& path, const model::LoadOptions& options = {});
  // Only the tokenizer (for commands that print token text without running the model); a
  // path without one ("" too) gives no tokenizer. model() then throws.
  static LoadedModel tokenizer_only(const std::string& path);

  const model::Model& model() const;
  const std::string& path() const { return path_; }
  // Null when the model has no tokenizer (no tokenizer.json / no tokenizer.ggml.* metadata).
  const tok::Tokenizer* tokenizer() const { return tokenizer_.get(); }
  // Throws naming the model and `what` (e.g. "--prompt") when it has no tokenizer.
  const tok::Tokenizer& require_tokenizer(const std::string& what) const;
  // The chat template (read on first use); throws naming the model when it has none.
  const chat::ChatTemplate& chat_template() const;

  std::string token_bytes(std::int32_t id) const;  // raw bytes, "" if unknown
  std::string token_text(std::int32_t id) const;   // valid UTF-8 for JSON and tables
  // The tokens' bytes as a grammar's trie (built on first use, ~0.3 s for Qwen's 151,665
  // tokens, then shared by every request); throws naming `what` when there is no tokenizer.
  std::shared_ptr<const grammar::Vocabulary> grammar_vocabulary(const std::string& what) const;
  // GBNF text compiled for this model's vocabulary; `origin` names it in errors (a file, a
  // request field), `description` in traces and settings.
  std::shared_ptr<const grammar::Constraint> constraint(std::string_view gbnf,
                                                        const std::string& origin,
                                                        std::string description) const;
  // DRY's sequence breakers resolved against this vocabulary (decode/dry_breakers.h), cached
  // per list of breakers (~0.1 s for Qwen's vocabulary the first time); throws naming `what`
  // when the model has no tokenizer.
  std::shared_ptr<const decode::DryBreakers> dry_breakers(const std::vector<std::string>& breakers,
                                                          const std::string& what) const;
  // Sets config.dry_breakers for the config's dry_sequence_breakers when DRY is on with breakers
  // (every layer that builds a GenerationConfig for this model calls it after the last change).
  void resolve_dry(decode::GenerationConfig& config) const;

 private:
  void check_vocabulary() const;
  void read_gguf_text(
      const formats::GgufFile& file);  // tokenizer and chat template from the metadata  // the
                                       // tokenizer's ids fit the embedding; throws naming both
  std::string path_;
  std::unique_ptr<model::Model> model_;
  std::shared_ptr<const tok::Tokenizer> tokenizer_;
  std::string tokenizer_config_;  // path of tokenizer_config.json, "" if none
  mutable std::optional<chat::ChatTemplate> chat_template_;
  struct GrammarVocabulary {
    std::mutex mutex;
    std::shared_ptr<const grammar::Vocabulary> vocabulary;
  };
  mutable std::unique_ptr<GrammarVocabulary> grammar_vocabulary_ =
      std::make_unique<GrammarVocabulary>();
  struct DryCache {
    std::mutex mutex;
    std::map<std::vector<std::string>, std::shared_ptr<const decode::DryBreakers>> by_breakers;
  };
  mutable std::unique_ptr<DryCache> dry_cache_ = std::make_unique<DryCache>();
};

}  // namespace ls::engine
