// Float32 metadata (rms epsilon, rope base) is turned into the double its shortest decimal
// spelling denotes (1e-6f -> 1e-6), so a GGUF written from config.json gives back the very
// config values the Hugging Face directory gives, and hence bit-identical logits.
#include "model/gguf_metadata.h"

#include <charconv>

#include "core/error.h"
#include "formats/tensor_names.h"

namespace ls::model {

namespace {

double config_float(const formats::GgufFile& f, const std::string& key) {
  const formats::GgufKV* kv = f.find_kv(key);
  const double v = f.require_float(key);
  if (kv->type != formats::GgufType::Float32) return v;
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v));
  double d = v;
  std::from_chars(buf, r.ptr, d);
  return d;
}

std::string meta_source(const formats::GgufFile& f) {
  return f.path() + " (GGUF metadata)";
}

// The mixture of experts as llama.cpp's converter writes it. GGUF has no decoder_sparse_step
// or mlp_only_layers: every layer is sparse. norm_topk_prob is fixed by the architecture in
// llama.cpp (qwen3moe renormalises, qwen2moe does not) unless expert_weights_norm says.
void add_moe_keys(const formats::GgufFile& f, const std::string& a, const std::string& model_type,
                  nlohmann::json& j) {
  j["num_experts"] = f.require_int(a + "expert_count");
  j["num_experts_per_tok"] = f.require_int(a + "expert_used_count");
  j["moe_intermediate_size"] = f.require_int(a + "expert_feed_forward_length");
  if (model_type == "qwen2_moe")
    j["shared_expert_intermediate_size"] =
        f.find_kv(a + "expert_shared_feed_forward_length")
            ? f.require_int(a + "expert_shared_feed_forward_length")
            : f.require_int(a + "feed_forward_length");  // llama.cpp's fallback
  j["norm_topk_prob"] = f.get_bool(a + "expert_weights_norm").value_or(model_type == "qwen3_moe");
}

}  // namespace

std::string gguf_model_type(const std::string& architecture) {
  if (architecture == "qwen2" || architecture == "qwen3") return architecture;
  if (architecture == "qwen2moe") return "qwen2_moe";
  if (architecture == "qwen3moe") return "qwen3_moe";
  return "";
}

std::string gguf_architecture(const std::string& model_type) {
  if (model_type == "qwen2_moe") return "qwen2moe";
  if (model_type == "qwen3_moe") return "qwen3moe";
  return model_type;
}

nlohmann::json gguf_config_json(const formats::GgufFile& f) {
  const std::string arch = f.require_string("general.architecture");
  const std::string model_type = gguf_model_type(arch);
  if (model_type.empty())
    fail(
        "{}: metadata 'general.architecture' is '{}' (supported: qwen2, qwen3, qwen2moe, qwen3moe)",
        f.path(), arch);
  const std::string a = arch + ".";
  nlohmann::json j = nlohmann::json::object();
  j["model_type"] = model_type;
  if (model_type.ends_with("_moe")) add_moe_keys(f, a, model_type, j);
  j["hidden_size"] = f.require_int(a + "embedding_length");
  j["intermediate_size"] = f.require_int(a + "feed_forward_length");
  j["num_hidden_layers"] = f.require_int(a + "block_count");
  j["num_attention_heads"] = f.require_int(a + "attention.head_count");
  if (f.find_kv(a + "attention.head_count_kv"))
    j["num_key_value_heads"] = f.require_int(a + "attention.head_count_kv");
  j["max_position_embeddings"] = f.require_int(a + "context_length");
  j["rms_norm_eps"] = config_float(f, a + "attention.layer_norm_rms_epsilon");
  if (f.find_kv(a + "rope.freq_base")) j["rope_theta"] = config_float(f, a + "rope.freq_base");
  // Qwen3 states head_dim (attention.key_length; it need not be hidden / heads).
  if (f.find_kv(a + "attention.key_length")) {
    j["head_dim"] = f.require_int(a + "attention.key_length");
    if (f.find_kv(a + "attention.value_length") &&
        f.require_int(a + "attention.value_length") != j["head_dim"].get<std::int64_t>())
      fail("{}: metadata '{}attention.value_length' differs from key_length (not supported)",
           f.path(), a);
  }
  // Rope scaling as llama.cpp writes it: none, or yarn with its factor and original context.
  const std::string scaling = f.get_string(a + "rope.scaling.type").value_or("none");
  if (scaling == "yarn") {
    nlohmann::json s = {{"rope_type", "yarn"},
                        {"factor", config_float(f, a + "rope.scaling.factor")}};
    if (f.find_kv(a + "rope.scaling.original_context_length"))
      s["original_max_position_embeddings"] =
          f.require_int(a + "rope.scaling.original_context_length");
    if (f.find_kv(a + "rope.scaling.attn_factor"))
      s["attention_factor"] = config_float(f, a + "rope.scaling.attn_factor");
    j["rope_scaling"] = s;
  } else if (scaling != "none") {
    fail("{}: metadata '{}rope.scaling.type' is '{}' (supported: none, yarn)", f.path(), a,
         scaling);
  } else if (const formats::GgufKV* kv = f.find_kv(a + "rope.scaling.factor");
             kv != nullptr &&
             !(kv->type == formats::GgufType::Float32 && kv->value.get<double>() == 1.0)) {
    fail("{}: metadata '{}rope.scaling.factor' without a scaling type is not supported", f.path(),
         a);
  }
  const std::string embd = formats::gguf_tensor_name(formats::WeightRole::TokenEmbedding);
  const TensorView* e = f.find(embd);
  if (e == nullptr) fail("{}: missing tensor '{}'", f.path(), embd);
  if (e->shape.size() != 2)
    fail("{}: tensor '{}' has shape {}, expected [vocab, hidden]", f.path(), embd,
         shape_str(e->shape));
  j["vocab_size"] = e->shape[0];
  j["tie_word_embeddings"] =
      f.find(formats::gguf_tensor_name(formats::WeightRole::LmHead)) == nullptr;
  if (auto v = f.get_int("tokenizer.ggml.bos_token_id")) j["bos_token_id"] = *v;
  if (auto v = f.get_int("tokenizer.ggml.eos_token_id")) j["eos_token_id"] = *v;
  return j;
}

ModelConfig gguf_model_config(const formats::GgufFile& f) {
  return parse_model_config(gguf_config_json(f), meta_source(f));
}

bool gguf_has_tokenizer(const formats::GgufFile& f) {
  return f.find_kv("tokenizer.ggml.model") != nullptr;
}

std::optional<GgufChatTemplate> gguf_chat_template(const formats::GgufFile& f) {
  const auto source = f.get_string("tokenizer.chat_template");
  if (!source) return std::nullopt;
  GgufChatTemplate t;
  t.source = *source;
  const nlohmann::json* tokens = f.get_array("tokenizer.ggml.tokens", formats::GgufType::String);
  auto text_of = [&](const char* key) -> std::optional<std::string> {
    const auto id = f.get_int(key);
    if (!id || tokens == nullptr) return std::nullopt;
    if (*id < 0 || static_cast<std::size_t>(*id) >= tokens->size())
      fail("{}: metadata '{}' = {} is not a token id (the vocabulary has {})", f.path(), key, *id,
           tokens->size());
    return (*tokens)[static_cast<std::size_t>(*id)].get<std::string>();
  };
  if (f.get_bool("tokenizer.ggml.add_bos_token").value_or(false))
    if (auto s = text_of("tokenizer.ggml.bos_token_id")) t.special_tokens["bos_token"] = *s;
  if (auto s = text_of("tokenizer.ggml.eos_token_id")) t.special_tokens["eos_token"] = *s;
  if (auto s = text_of("tokenizer.ggml.padding_token_id")) t.special_tokens["pad_token"] = *s;
  return t;
}

}  // namespace ls::model
