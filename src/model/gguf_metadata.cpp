// Float32 metadata (rms epsilon, rope base) is turned into the double its shortest decimal
// spelling denotes (1e-6f -> 1e-6), so a GGUF written from config.json gives back the very
// config values the Hugging Face directory gives, and hence bit-identical logits.
#include "model/gguf_metadata.h"

#include <charconv>
#include <map>
#include <string_view>

#include "core/error.h"
#include "model/tensor_names.h"

namespace ls {

namespace {

// The Split pre-tokenizer regex of Qwen2's tokenizer.json (tokenizer.ggml.pre = "qwen2").
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

double config_float(const GgufFile& f, const std::string& key) {
  const GgufKV* kv = f.find_kv(key);
  const double v = f.require_float(key);
  if (kv->type != GgufType::Float32) return v;
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v));
  double d = v;
  std::from_chars(buf, r.ptr, d);
  return d;
}

std::string meta_source(const GgufFile& f) {
  return f.path() + " (GGUF metadata)";
}

}  // namespace

nlohmann::json gguf_config_json(const GgufFile& f) {
  const std::string arch = f.require_string("general.architecture");
  if (arch != "qwen2")
    fail("{}: metadata 'general.architecture' is '{}' (supported: qwen2)", f.path(), arch);
  const std::string a = arch + ".";
  nlohmann::json j = nlohmann::json::object();
  j["model_type"] = arch;
  j["hidden_size"] = f.require_int(a + "embedding_length");
  j["intermediate_size"] = f.require_int(a + "feed_forward_length");
  j["num_hidden_layers"] = f.require_int(a + "block_count");
  j["num_attention_heads"] = f.require_int(a + "attention.head_count");
  if (f.find_kv(a + "attention.head_count_kv"))
    j["num_key_value_heads"] = f.require_int(a + "attention.head_count_kv");
  j["max_position_embeddings"] = f.require_int(a + "context_length");
  j["rms_norm_eps"] = config_float(f, a + "attention.layer_norm_rms_epsilon");
  if (f.find_kv(a + "rope.freq_base")) j["rope_theta"] = config_float(f, a + "rope.freq_base");
  for (const char* k : {"rope.scaling.type", "rope.scaling.factor"}) {
    const GgufKV* kv = f.find_kv(a + k);
    if (kv == nullptr) continue;
    if (kv->type == GgufType::String && kv->value == "none") continue;
    if (kv->type == GgufType::Float32 && kv->value.get<double>() == 1.0) continue;
    fail("{}: metadata '{}{}' (rope scaling) is not supported", f.path(), a, k);
  }
  const std::string embd = gguf_tensor_name(WeightRole::TokenEmbedding);
  const TensorView* e = f.find(embd);
  if (e == nullptr) fail("{}: missing tensor '{}'", f.path(), embd);
  if (e->shape.size() != 2)
    fail("{}: tensor '{}' has shape {}, expected [vocab, hidden]", f.path(), embd,
         shape_str(e->shape));
  j["vocab_size"] = e->shape[0];
  j["tie_word_embeddings"] = f.find(gguf_tensor_name(WeightRole::LmHead)) == nullptr;
  if (auto v = f.get_int("tokenizer.ggml.bos_token_id")) j["bos_token_id"] = *v;
  if (auto v = f.get_int("tokenizer.ggml.eos_token_id")) j["eos_token_id"] = *v;
  return j;
}

ModelConfig gguf_model_config(const GgufFile& f) {
  return parse_model_config(gguf_config_json(f), meta_source(f));
}

bool gguf_has_tokenizer(const GgufFile& f) {
  return f.find_kv("tokenizer.ggml.model") != nullptr;
}

std::string gguf_tokenizer_json(const GgufFile& f) {
  const std::string model = f.require_string("tokenizer.ggml.model");
  if (model != "gpt2")
    fail("{}: metadata 'tokenizer.ggml.model' is '{}' (supported: gpt2, byte-level BPE)", f.path(),
         model);
  const auto pre = f.get_string("tokenizer.ggml.pre");
  if (pre != "qwen2")
    fail("{}: metadata 'tokenizer.ggml.pre' is {} (supported: qwen2)", f.path(),
         pre ? "'" + *pre + "'" : std::string("missing"));
  const nlohmann::json* tokens = f.get_array("tokenizer.ggml.tokens", GgufType::String);
  if (tokens == nullptr) fail("{}: missing metadata 'tokenizer.ggml.tokens'", f.path());
  const nlohmann::json* types = f.get_array("tokenizer.ggml.token_type", GgufType::Int32);
  if (types != nullptr && types->size() != tokens->size())
    fail(
        "{}: metadata 'tokenizer.ggml.token_type' has {} entries but 'tokenizer.ggml.tokens' "
        "has {}",
        f.path(), types->size(), tokens->size());
  const nlohmann::json* merges = f.get_array("tokenizer.ggml.merges", GgufType::String);
  if (merges == nullptr) fail("{}: missing metadata 'tokenizer.ggml.merges'", f.path());

  nlohmann::json vocab = nlohmann::json::object();
  nlohmann::json added = nlohmann::json::array();
  std::map<std::string, std::size_t> seen;
  for (std::size_t id = 0; id < tokens->size(); ++id) {
    const auto& text = (*tokens)[id].get_ref<const std::string&>();
    const std::int64_t type =
        types ? (*types)[id].get<std::int64_t>() : static_cast<std::int64_t>(GgufTokenType::Normal);
    if (type == static_cast<std::int64_t>(GgufTokenType::Unused)) continue;
    // Older llama.cpp converters wrote the padding as USER_DEFINED "[PAD{id}]": no text either.
    if (type == static_cast<std::int64_t>(GgufTokenType::UserDefined) &&
        text == fmt::format("[PAD{}]", id))
      continue;
    if (text.empty())
      fail("{}: metadata 'tokenizer.ggml.tokens'[{}] is an empty string", f.path(), id);
    if (auto [it, fresh] = seen.emplace(text, id); !fresh)
      fail("{}: metadata 'tokenizer.ggml.tokens'[{}] repeats the token at id {}", f.path(), id,
           it->second);
    switch (static_cast<GgufTokenType>(type)) {
      case GgufTokenType::Normal:
        vocab[text] = id;
        break;
      case GgufTokenType::Control:
      case GgufTokenType::UserDefined: {
        const bool special = type == static_cast<std::int64_t>(GgufTokenType::Control);
        added.push_back({{"id", id},
                         {"content", text},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", special}});
        break;
      }
      default:
        fail(
            "{}: metadata 'tokenizer.ggml.token_type'[{}] = {} is not supported for a gpt2 "
            "tokenizer (expected 1 normal, 3 control, 4 user-defined or 5 unused)",
            f.path(), id, type);
    }
  }
  nlohmann::json merge_pairs = nlohmann::json::array();
  for (std::size_t i = 0; i < merges->size(); ++i) {
    const auto& m = (*merges)[i].get_ref<const std::string&>();
    const auto sp = m.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == m.size() ||
        m.find(' ', sp + 1) != std::string::npos)
      fail("{}: metadata 'tokenizer.ggml.merges'[{}] must be two tokens separated by one space",
           f.path(), i);
    merge_pairs.push_back({m.substr(0, sp), m.substr(sp + 1)});
  }
  const nlohmann::json byte_level = {{"type", "ByteLevel"},
                                     {"add_prefix_space", false},
                                     {"trim_offsets", false},
                                     {"use_regex", false}};
  nlohmann::json tok = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", std::move(added)},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", std::string(kQwen2Regex)}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          byte_level}}}},
      {"post_processor", byte_level},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", std::move(vocab)},
        {"merges", std::move(merge_pairs)}}},
  };
  try {
    return tok.dump();
  } catch (const nlohmann::json::type_error& e) {
    fail(
        "{}: metadata 'tokenizer.ggml.tokens' or 'tokenizer.ggml.merges' holds text that is "
        "not valid UTF-8 ({})",
        f.path(), e.what());
  }
}

std::optional<GgufChatTemplate> gguf_chat_template(const GgufFile& f) {
  const auto source = f.get_string("tokenizer.chat_template");
  if (!source) return std::nullopt;
  GgufChatTemplate t;
  t.source = *source;
  const nlohmann::json* tokens = f.get_array("tokenizer.ggml.tokens", GgufType::String);
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

}  // namespace ls
