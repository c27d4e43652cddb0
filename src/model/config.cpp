// Validation of config.json: each required key present with the right type and a sane value;
// features this engine does not implement (sliding window, rope scaling) are refused by name
// rather than silently ignored, because they would change the logits.
#include "model/config.h"

#include <cmath>

#include "core/error.h"
#include "core/mapped_file.h"

namespace ls {

namespace {

const nlohmann::json& require(const nlohmann::json& j, const std::string& src, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) fail("{}: missing required field '{}'", src, key);
  return *it;
}

std::int64_t positive_int(const nlohmann::json& j, const std::string& src, const char* key) {
  const auto& v = require(j, src, key);
  if (!v.is_number_integer()) fail("{}: field '{}' must be an integer, got {}", src, key, v.dump());
  const auto x = v.get<std::int64_t>();
  if (x <= 0) fail("{}: field '{}' must be positive, got {}", src, key, x);
  return x;
}

double positive_number(const nlohmann::json& j, const std::string& src, const char* key) {
  const auto& v = require(j, src, key);
  if (!v.is_number()) fail("{}: field '{}' must be a number, got {}", src, key, v.dump());
  const auto x = v.get<double>();
  if (!(x > 0) || !std::isfinite(x))
    fail("{}: field '{}' must be a positive number, got {}", src, key, x);
  return x;
}

std::int64_t optional_token_id(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer())
    return -1;  // may be a list: generation_config rules
  return it->get<std::int64_t>();
}

}  // namespace

ModelConfig parse_model_config(const nlohmann::json& j, const std::string& src) {
  if (!j.is_object()) fail("{}: expected a JSON object", src);
  ModelConfig c;
  const auto& type = require(j, src, "model_type");
  if (!type.is_string()) fail("{}: field 'model_type' must be a string", src);
  c.model_type = type.get<std::string>();
  if (c.model_type != "qwen2")
    fail("{}: model_type '{}' is not supported (supported: qwen2)", src, c.model_type);
  c.hidden_size = positive_int(j, src, "hidden_size");
  c.intermediate_size = positive_int(j, src, "intermediate_size");
  c.num_hidden_layers = positive_int(j, src, "num_hidden_layers");
  c.num_attention_heads = positive_int(j, src, "num_attention_heads");
  c.num_key_value_heads = j.contains("num_key_value_heads")
                              ? positive_int(j, src, "num_key_value_heads")
                              : c.num_attention_heads;
  c.vocab_size = positive_int(j, src, "vocab_size");
  c.max_position_embeddings = positive_int(j, src, "max_position_embeddings");
  c.rms_norm_eps = positive_number(j, src, "rms_norm_eps");
  c.rope_theta = j.contains("rope_theta") ? positive_number(j, src, "rope_theta") : 10000.0;
  if (auto it = j.find("tie_word_embeddings"); it != j.end()) {
    if (!it->is_boolean()) fail("{}: field 'tie_word_embeddings' must be true or false", src);
    c.tie_word_embeddings = it->get<bool>();
  }
  if (c.hidden_size % c.num_attention_heads != 0)
    fail("{}: hidden_size {} is not divisible by num_attention_heads {}", src, c.hidden_size,
         c.num_attention_heads);
  c.head_dim = c.hidden_size / c.num_attention_heads;
  if (c.head_dim % 2 != 0)
    fail("{}: head_dim {} must be even for rotary embeddings", src, c.head_dim);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    fail("{}: num_attention_heads {} is not a multiple of num_key_value_heads {}", src,
         c.num_attention_heads, c.num_key_value_heads);
  if (auto it = j.find("hidden_act"); it != j.end() && *it != "silu")
    fail("{}: hidden_act {} is not supported (expected \"silu\")", src, it->dump());
  if (auto it = j.find("use_sliding_window"); it != j.end() && it->is_boolean() && it->get<bool>())
    fail("{}: use_sliding_window=true is not supported", src);
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null())
    fail("{}: rope_scaling {} is not supported", src, it->dump());
  c.bos_token_id = optional_token_id(j, "bos_token_id");
  c.eos_token_id = optional_token_id(j, "eos_token_id");
  return c;
}

ModelConfig load_model_config(const std::string& path) {
  const std::string text = read_text_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", path, e.what());
  }
  return parse_model_config(j, path);
}

}  // namespace ls
