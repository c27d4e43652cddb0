// What a GGUF file's metadata means to the engine: the model config ({arch}.* keys mapped onto
// the config.json keys parse_model_config reads, so both formats obey the same rules), whether it
// carries a tokenizer (tok::gguf_tokenizer builds it) and the chat template with the special
// tokens it is rendered with. A GGUF alone is a complete model.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "model/config.h"

namespace ls::model {

// The config.json model_type of a GGUF general.architecture ("qwen3moe" -> "qwen3_moe"; "" when
// not one of the family) and back.
std::string gguf_model_type(const std::string& architecture);
std::string gguf_architecture(const std::string& model_type);

// config.json-style object built from the metadata (general.architecture one of qwen2, qwen3,
// qwen2moe, qwen3moe, whose {arch}.expert_* keys give the mixture of experts);
// vocab_size is the row count of token_embd.weight, tie_word_embeddings is "output.weight is
// absent", bos/eos come from tokenizer.ggml.{bos,eos}_token_id.
nlohmann::json gguf_config_json(const formats::GgufFile& f);
ModelConfig gguf_model_config(const formats::GgufFile& f);

// True when the file carries a tokenizer (tokenizer.ggml.model is present).
bool gguf_has_tokenizer(const formats::GgufFile& f);

// tokenizer.chat_template and the special tokens a template sees (eos_token, pad_token,
// bos_token when tokenizer.ggml.add_bos_token is true), as texts.
struct GgufChatTemplate {
  std::string source;
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();
};
std::optional<GgufChatTemplate> gguf_chat_template(const formats::GgufFile& f);

}  // namespace ls::model
