// Metadata follows llama.cpp's converter for Qwen2: tokens padded with "[PAD{i}]" (type UNUSED)
// up to vocab_size, added tokens CONTROL when special and USER_DEFINED otherwise, merges as
// "a b" strings, eos/pad/bos ids from tokenizer_config.json (config.json as the fallback).
// Rows are converted in chunks of about 4 MiB, so memory stays small whatever the model size.
#include "convert/gguf_quantize.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "convert/gguf_writer.h"
#include "convert/synth.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/thread_pool.h"
#include "formats/tensor_names.h"
#include "formats/tensor_store.h"
#include "kernels/quant.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/gguf_metadata.h"

namespace ls::convert {

namespace fs = std::filesystem;

namespace {

// GGUF (as llama.cpp reads it) carries a YaRN factor and original context only: a config with
// other YaRN fields would not give the same logits from the GGUF.
void check_yarn_expressible(const fs::path& config_path) {
  const nlohmann::json j = nlohmann::json::parse(read_text_file(config_path.string()));
  for (const auto& [key, value] : j["rope_scaling"].items())
    if (key != "rope_type" && key != "type" && key != "factor" &&
        key != "original_max_position_embeddings")
      fail(
          "{}: rope_scaling.{} cannot be written to GGUF (it carries the YaRN factor and "
          "original_max_position_embeddings only)",
          config_path.string(), key);
}

nlohmann::json read_json(const fs::path& p) {
  try {
    return nlohmann::json::parse(read_text_file(p.string()));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", p.string(), e.what());
  }
}

// A special token in tokenizer_config.json: a string, {"content": ...}, or null.
std::optional<std::string> config_token(const nlohmann::json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return std::nullopt;
}

void add_tokenizer_metadata(GgufWriter& w, const fs::path& dir, const model::ModelConfig& config) {
  const fs::path tok_path = dir / "tokenizer.json";
  const std::string src = tok_path.string();
  const nlohmann::json tok = read_json(tok_path);
  if (!tok.is_object() || !tok.contains("model") || !tok["model"].is_object())
    fail("{}: missing object field 'model'", src);
  const auto& model = tok["model"];
  if (model.value("type", "") != "BPE") fail("{}: field 'model.type' must be \"BPE\"", src);
  if (!model.contains("vocab") || !model["vocab"].is_object())
    fail("{}: missing object field 'model.vocab'", src);
  const auto V = static_cast<std::size_t>(config.vocab_size);
  std::vector<std::string> tokens(V);
  std::vector<std::int32_t> types(V, static_cast<std::int32_t>(formats::GgufTokenType::Unused));
  std::map<std::string, std::int64_t> ids;
  auto place = [&](const std::string& text, std::int64_t id, formats::GgufTokenType type,
                   const std::string& where) {
    if (id < 0 || static_cast<std::size_t>(id) >= V)
      fail("{}: {} has id {}, outside the model's vocab_size {}", src, where, id, V);
    tokens[static_cast<std::size_t>(id)] = text;
    types[static_cast<std::size_t>(id)] = static_cast<std::int32_t>(type);
    ids[text] = id;
  };
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer()) fail("{}: model.vocab['{}'] must be an integer id", src, text);
    place(text, id.get<std::int64_t>(), formats::GgufTokenType::Normal,
          "model.vocab['" + text + "']");
  }
  if (auto it = tok.find("added_tokens"); it != tok.end() && it->is_array()) {
    for (std::size_t i = 0; i < it->size(); ++i) {
      const auto& a = (*it)[i];
      const std::string where = fmt::format("added_tokens[{}]", i);
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
          !a.contains("content") || !a["content"].is_string())
        fail("{}: {} must have an integer 'id' and a string 'content'", src, where);
      const bool special = a.value("special", false);
      place(a["content"].get<std::string>(), a["id"].get<std::int64_t>(),
            special ? formats::GgufTokenType::Control : formats::GgufTokenType::UserDefined, where);
    }
  }
  for (std::size_t i = 0; i < V; ++i)
    if (types[i] == static_cast<std::int32_t>(formats::GgufTokenType::Unused))
      tokens[i] = fmt::format("[PAD{}]", i);
  std::vector<std::string> merges;
  if (model.contains("merges") && model["merges"].is_array()) {
    merges.reserve(model["merges"].size());
    for (std::size_t i = 0; i < model["merges"].size(); ++i) {
      const auto& m = model["merges"][i];
      if (m.is_string()) {
        merges.push_back(m.get<std::string>());
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      } else {
        fail("{}: model.merges[{}] must be \"a b\" or [\"a\", \"b\"]", src, i);
      }
    }
  }

  nlohmann::json tcfg = nlohmann::json::object();
  const fs::path tcfg_path = dir / "tokenizer_config.json";
  if (fs::exists(tcfg_path)) tcfg = read_json(tcfg_path);
  if (!tcfg.is_object()) fail("{}: expected a JSON object", tcfg_path.string());
  auto token_id = [&](const char* key, std::int64_t fallback) -> std::int64_t {
    if (auto text = config_token(tcfg, key)) {
      auto it = ids.find(*text);
      if (it == ids.end())
        fail("{}: {} '{}' is not a token of {}", tcfg_path.string(), key, *text, src);
      return it->second;
    }
    return fallback;
  };

  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "qwen2");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_int32_array("tokenizer.ggml.token_type", types);
  w.add_string_array("tokenizer.ggml.merges", merges);
  const std::int64_t eos = token_id("eos_token", config.eos_token_id);
  const std::int64_t pad = token_id("pad_token", -1);
  const std::int64_t bos = token_id("bos_token", config.bos_token_id);
  if (eos >= 0) w.add_uint32("tokenizer.ggml.eos_token_id", static_cast<std::uint32_t>(eos));
  if (pad >= 0) w.add_uint32("tokenizer.ggml.padding_token_id", static_cast<std::uint32_t>(pad));
  if (bos >= 0) w.add_uint32("tokenizer.ggml.bos_token_id", static_cast<std::uint32_t>(bos));
  bool add_bos = false;
  if (auto it = tcfg.find("add_bos_token"); it != tcfg.end() && it->is_boolean())
    add_bos = it->get<bool>();
  w.add_bool("tokenizer.ggml.add_bos_token", add_bos);

  std::string chat_template = builtin_qwen25_chat_template();
  if (auto it = tcfg.find("chat_template"); it != tcfg.end() && it->is_string())
    chat_template = it->get<std::string>();
  else if (fs::exists(dir / "chat_template.jinja"))
    chat_template = read_text_file((dir / "chat_template.jinja").string());
  w.add_string("tokenizer.chat_template", chat_template);
}

// One row of a safetensors tensor (F32, F16 or BF16) as float32.
void row_to_f32(DType t, const std::uint8_t* in, float* out, std::size_t n) {
  switch (t) {
    case DType::F32:
      std::memcpy(out, in, n * 4);
      return;
    case DType::BF16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, in + 2 * i, 2);
        out[i] = bf16_to_f32(h);
      }
      return;
    case DType::F16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, in + 2 * i, 2);
        out[i] = f16_to_f32(h);
      }
      return;
    default:
      fail("quantize: source dtype {} is not a float type", dtype_name(t));
  }
}

void f32_to_row(DType t, const float* in, std::uint8_t* out, std::size_t n) {
  switch (t) {
    case DType::F32:
      std::memcpy(out, in, n * 4);
      return;
    case DType::BF16:
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint16_t h = f32_to_bf16(in[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case DType::F16:
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint16_t h = f32_to_f16(in[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    default:
      kernels::quantize_row(t, in, out, n);
      return;
  }
}

// One GGUF tensor: its sources in order (one tensor, or a sparse layer's experts stacked into
// [experts, rows, cols]), the type written and the GGUF shape.
struct Job {
  std::string name;  // GGUF name
  std::vector<const TensorView*> srcs;
  DType type;
};

// The mixture of experts in llama.cpp's keys. GGUF has no place for decoder_sparse_step or
// mlp_only_layers (every layer of a qwen2moe / qwen3moe file is sparse): such a model is
// refused rather than written as another model.
void add_moe_metadata(GgufWriter& w, const model::ModelConfig& c, const std::string& a,
                      const fs::path& config_path) {
  if (c.moe.sparse_step != 1)
    fail(
        "{}: decoder_sparse_step {} cannot be written to GGUF (every layer of a GGUF mixture of "
        "experts is sparse)",
        config_path.string(), c.moe.sparse_step);
  if (!c.moe.mlp_only_layers.empty())
    fail(
        "{}: mlp_only_layers cannot be written to GGUF (every layer of a GGUF mixture of experts "
        "is sparse)",
        config_path.string());
  const auto u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
  w.add_uint32(a + "expert_count", u32(c.moe.num_experts));
  w.add_uint32(a + "expert_used_count", u32(c.moe.experts_per_token));
  w.add_uint32(a + "expert_feed_forward_length", u32(c.moe.expert_intermediate));
  if (c.moe.shared_intermediate > 0)
    w.add_uint32(a + "expert_shared_feed_forward_length", u32(c.moe.shared_intermediate));
  w.add_bool(a + "expert_weights_norm", c.moe.norm_topk_prob);
}

}  // namespace

DType gguf_tensor_type(DType requested, const std::vector<std::int64_t>& shape) {
  if (shape.size() < 2) return DType::F32;
  if (!dtype_is_quantized(requested)) return requested;
  const auto cols = static_cast<std::size_t>(shape.back());
  if (cols % dtype_block_elems(requested) == 0) return requested;
  // llama-quantize's substitutes for the 256-element types (a 32-element type of about the
  // same size per weight), then F16.
  DType fallback = DType::Q8_0;
  if (requested == DType::Q4_K) fallback = DType::Q5_0;
  if (requested == DType::Q5_K) fallback = DType::Q5_1;
  if (requested == DType::Q3_K || requested == DType::Q2_K) fallback = DType::IQ4_NL;
  if (cols % dtype_block_elems(fallback) == 0) return fallback;
  return DType::F16;
}

std::uint32_t gguf_file_type(DType requested) {
  switch (requested) {
    case DType::F32:
      return 0;
    case DType::F16:
      return 1;
    case DType::Q4_0:
      return 2;
    case DType::Q8_0:
      return 7;
    case DType::Q4_K:
      return 14;
    case DType::Q6_K:
      return 18;
    case DType::BF16:
      return 32;
    case DType::Q4_1:
      return 3;
    case DType::Q5_0:
      return 8;
    case DType::Q5_1:
      return 9;
    case DType::IQ4_NL:
      return 25;
    case DType::Q2_K:
      return 10;
    case DType::Q3_K:
      return 11;  // MOSTLY_Q3_K_S
    case DType::Q5_K:
      return 16;  // MOSTLY_Q5_K_S
    case DType::Q8_K:
      break;
  }
  fail("quantize: {} is not a GGUF file type", dtype_name(requested));
}

bool gguf_can_write(DType type) {
  return type != DType::Q8_K;
}

QuantizeResult quantize_to_gguf(const QuantizeOptions& o) {
  if (!gguf_can_write(o.type))
    fail("quantize: type {} is not available in this build (no quantization kernels)",
         dtype_name(o.type));
  if (!fs::is_directory(o.model_dir))
    fail("{}: not a model directory (expected config.json and *.safetensors inside)", o.model_dir);
  const fs::path dir(o.model_dir);
  const model::ModelConfig config = model::load_model_config((dir / "config.json").string());
  const formats::TensorStore store = formats::TensorStore::open_hf_dir(o.model_dir);

  QuantizeResult result;
  GgufWriter w;
  std::string name = o.name;
  if (name.empty()) {
    fs::path p = fs::absolute(dir).lexically_normal();
    if (p.filename().empty()) p = p.parent_path();  // "models/x/" -> "x"
    name = p.filename().string();
  }
  // llama.cpp's metadata keys, under the architecture's name (qwen2, qwen3, qwen2moe, qwen3moe).
  const std::string arch_name = model::gguf_architecture(config.model_type);
  const std::string a = arch_name + ".";
  const auto u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
  w.add_string("general.architecture", arch_name);
  w.add_string("general.type", "model");
  w.add_string("general.name", name);
  w.add_uint32(a + "block_count", u32(config.num_hidden_layers));
  w.add_uint32(a + "context_length", u32(config.max_position_embeddings));
  w.add_uint32(a + "embedding_length", u32(config.hidden_size));
  w.add_uint32(a + "feed_forward_length", u32(config.intermediate_size));
  w.add_uint32(a + "attention.head_count", u32(config.num_attention_heads));
  w.add_uint32(a + "attention.head_count_kv", u32(config.num_key_value_heads));
  if (config.moe.num_experts > 0) add_moe_metadata(w, config, a, dir / "config.json");
  if (config.model_type == "qwen3" || config.model_type == "qwen3_moe" ||
      config.head_dim * config.num_attention_heads != config.hidden_size) {
    w.add_uint32(a + "attention.key_length", u32(config.head_dim));
    w.add_uint32(a + "attention.value_length", u32(config.head_dim));
  }
  w.add_float32(a + "rope.freq_base", static_cast<float>(config.rope_theta));
  w.add_float32(a + "attention.layer_norm_rms_epsilon", static_cast<float>(config.rms_norm_eps));
  if (config.rope.type == "yarn") {
    check_yarn_expressible(dir / "config.json");
    w.add_string(a + "rope.scaling.type", "yarn");
    w.add_float32(a + "rope.scaling.factor", static_cast<float>(config.rope.factor));
    w.add_uint32(a + "rope.scaling.original_context_length", u32(config.rope.original_context));
  }
  w.add_uint32("general.file_type", o.mix ? quant_mix_file_type(*o.mix) : gguf_file_type(o.type));
  w.add_uint32("general.quantization_version", 2);
  if (fs::exists(dir / "tokenizer.json")) {
    add_tokenizer_metadata(w, dir, config);
    result.tokenizer = true;
  }

  // Tensors in llama.cpp's order: embeddings, each layer, final norm, lm_head.
  std::vector<Job> jobs;
  auto add = [&](formats::WeightRole role, std::int64_t layer) {
    const formats::TensorName& names = formats::tensor_name(role);
    // A sparse layer's experts go into one [experts, rows, cols] tensor, expert 0 first.
    const std::int64_t n_src = names.per_expert ? config.moe.num_experts : 1;
    std::vector<const TensorView*> srcs;
    for (std::int64_t e = 0; e < n_src; ++e) {
      const std::string hf = formats::hf_tensor_name(role, layer, e);
      const TensorView* t = store.find(hf);
      if (t == nullptr) fail("{}: missing tensor '{}'", o.model_dir, hf);
      if (!srcs.empty() && t->shape != srcs[0]->shape)
        fail("{}: tensor '{}' has shape {}, expert 0's has {}", o.model_dir, hf,
             shape_str(t->shape), shape_str(srcs[0]->shape));
      srcs.push_back(t);
    }
    std::vector<std::int64_t> shape = srcs[0]->shape;
    if (names.per_expert) shape.insert(shape.begin(), n_src);
    if (role == formats::WeightRole::SharedExpertGate)
      shape = {shape.back()};  // [1, hidden] -> [hidden]
    DType wanted = o.type;
    // llama.cpp's mixes treat the experts' and the shared expert's down projections as
    // ffn_down; the router stays F32 (llama.cpp's converter keeps it so: routing decides which
    // weights run at all).
    const formats::WeightRole mix_role =
        role == formats::WeightRole::ExpertDown || role == formats::WeightRole::SharedDown
            ? formats::WeightRole::WDown
            : role;
    if (o.mix && shape.size() >= 2)
      wanted = quant_mix_tensor_type(*o.mix, mix_role, layer, config.num_hidden_layers,
                                     config.num_attention_heads / config.num_key_value_heads,
                                     config.tie_word_embeddings, shape.back());
    if (role == formats::WeightRole::Router) wanted = DType::F32;
    const DType type = gguf_tensor_type(wanted, shape);
    if (shape.size() >= 2 && type != wanted)
      result.fallbacks.push_back({formats::gguf_tensor_name(role, layer), shape, wanted, type});
    jobs.push_back({formats::gguf_tensor_name(role, layer), std::move(srcs), type});
    w.add_tensor(jobs.back().name, type, shape);
  };
  add(formats::WeightRole::TokenEmbedding, -1);
  const model::Architecture& arch = model::architecture(config.model_type);
  for (std::int64_t l = 0; l < config.num_hidden_layers; ++l)
    for (const auto& n : formats::kTensorNames) {
      if (n.per_layer && model::has_weight(arch, config, n.role, l)) add(n.role, l);
    }
  add(formats::WeightRole::OutputNorm, -1);
  if (!config.tie_word_embeddings) add(formats::WeightRole::LmHead, -1);

  // Rows are converted on every hardware thread (each row alone, so the bytes are the same for
  // any thread count): K-quant rows cost ~1 us per 256 weights, an hour for 30B on one core.
  ThreadPool pool(o.threads);
  std::vector<std::uint8_t> out;
  w.write(o.out, [&](std::size_t i, const ByteSink& sink) {
    const Job& j = jobs[i];
    for (const TensorView* src : j.srcs) {
      const std::int64_t cols = src->shape.back();
      const std::int64_t rows = src->numel() / cols;
      if (src->dtype == j.type) {  // same type: the bytes as they are
        sink({src->data, src->nbytes()});
        result.bytes += src->nbytes();
        continue;
      }
      const std::size_t in_row = dtype_bytes(src->dtype, cols);
      const std::size_t out_row = dtype_bytes(j.type, cols);
      const std::int64_t chunk =
          std::max<std::int64_t>(1, (std::int64_t{4} << 20) / static_cast<std::int64_t>(out_row));
      for (std::int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const std::int64_t n = std::min(chunk, rows - r0);
        out.resize(static_cast<std::size_t>(n) * out_row);
        pool.parallel_for(static_cast<std::size_t>(n), [&](std::size_t begin, std::size_t end) {
          thread_local std::vector<float> f32;
          f32.resize(static_cast<std::size_t>(cols));
          for (std::size_t r = begin; r < end; ++r) {
            row_to_f32(src->dtype, src->data + (static_cast<std::size_t>(r0) + r) * in_row,
                       f32.data(), static_cast<std::size_t>(cols));
            f32_to_row(j.type, f32.data(), out.data() + r * out_row,
                       static_cast<std::size_t>(cols));
          }
        });
        sink(out);
        result.bytes += out.size();
      }
    }
    if (o.on_tensor) o.on_tensor(i + 1, jobs.size());
  });
  result.tensors = jobs.size();
  return result;
}

}  // namespace ls::convert
