// Validation of config.json: each required key present with the right type and a sane value;
// features this engine does not implement (sliding window, rope scaling other than YaRN) are
// refused by name rather than silently ignored, because they would change the logits.
#include "model/config.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/mapped_file.h"

namespace ls::model {

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

double number_in(const nlohmann::json& obj, const std::string& src, const char* key,
                 double fallback) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_number() || !std::isfinite(it->get<double>()))
    fail("{}: field 'rope_scaling.{}' must be a finite number, got {}", src, key, it->dump());
  return it->get<double>();
}

// transformers' _compute_default_rope_parameters and _compute_yarn_parameters
// (modeling_rope_utils): YaRN blends each pair's frequency between interpolated (1/factor) and
// the original, by a linear ramp over the pairs whose wavelength lies between beta_fast and
// beta_slow rotations of original_max_position_embeddings, and scales cos and sin by
// attention_factor (default 0.1 ln(factor) + 1, or the mscale ratio). The explicit factor is
// used (transformers 5's rule; older versions took max_position_embeddings / original when
// both were given, the same number when the config is consistent).
RopeConfig rope_config(const nlohmann::json& j, const ModelConfig& c, const std::string& src) {
  const auto half = static_cast<std::size_t>(c.head_dim / 2);
  const auto dim = static_cast<double>(c.head_dim);
  RopeConfig r;
  r.inv_freq.resize(half);
  for (std::size_t i = 0; i < half; ++i)
    r.inv_freq[i] = std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / dim);
  auto it = j.find("rope_scaling");
  if (it == j.end() || it->is_null()) return r;
  const nlohmann::json& s = *it;
  if (!s.is_object()) fail("{}: rope_scaling must be an object or null, got {}", src, s.dump());
  // transformers' Qwen2Config/Qwen3Config copy a legacy "type" over "rope_type".
  const nlohmann::json type =
      s.contains("type") ? s["type"] : s.value("rope_type", nlohmann::json(""));
  if (type == "default") return r;
  if (type != "yarn")
    fail("{}: rope_scaling type {} is not supported (supported: yarn, default)", src, type.dump());
  r.type = "yarn";
  const double factor = number_in(s, src, "factor", 0);
  if (!(factor >= 1)) fail("{}: rope_scaling.factor must be a number >= 1 for yarn", src);
  const double original = number_in(s, src, "original_max_position_embeddings",
                                    static_cast<double>(c.max_position_embeddings));
  if (!(original >= 1) || original != std::floor(original))
    fail("{}: rope_scaling.original_max_position_embeddings must be a positive integer", src);
  r.factor = factor;
  r.original_context = static_cast<std::int64_t>(original);
  const auto mscale = [](double scale, double m) {
    return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0;
  };
  const double m = number_in(s, src, "mscale", 0), m_all = number_in(s, src, "mscale_all_dim", 0);
  r.attention_factor = number_in(
      s, src, "attention_factor",
      m != 0 && m_all != 0 ? mscale(factor, m) / mscale(factor, m_all) : mscale(factor, 1));
  double beta_fast = number_in(s, src, "beta_fast", 32),
         beta_slow = number_in(s, src, "beta_slow", 1);
  if (beta_fast == 0) beta_fast = 32;  // transformers: `get("beta_fast") or 32`
  if (beta_slow == 0) beta_slow = 1;
  bool truncate = true;
  if (s.contains("truncate")) {
    if (!s["truncate"].is_boolean()) fail("{}: rope_scaling.truncate must be true or false", src);
    truncate = s["truncate"].get<bool>();
  }
  // The pair index at which a frequency makes `rotations` turns over the original context.
  const auto correction_dim = [&](double rotations) {
    return dim * std::log(original / (rotations * 2 * M_PI)) / (2 * std::log(c.rope_theta));
  };
  double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
  if (truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1);
  if (low == high) high += 0.001;  // transformers: "prevent singularity"
  for (std::size_t i = 0; i < half; ++i) {
    // In double (transformers: float32 tensors); the difference is ~1e-7 relative.
    const float ramp =
        std::clamp(static_cast<float>((static_cast<double>(i) - low) / (high - low)), 0.0f, 1.0f);
    const double extrapolation_factor = 1.0 - ramp;
    const double extrapolation = r.inv_freq[i], interpolation = r.inv_freq[i] / factor;
    r.inv_freq[i] =
        interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
  }
  return r;
}

bool optional_bool(const nlohmann::json& j, const std::string& src, const char* key,
                   bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) fail("{}: field '{}' must be true or false, got {}", src, key, it->dump());
  return it->get<bool>();
}

// transformers' Qwen2MoeConfig / Qwen3MoeConfig: the expert sizes are required (every real
// config states them; the classes' defaults describe one particular model), the layout keys
// default as the classes do.
MoeConfig moe_config(const nlohmann::json& j, const ModelConfig& c, const std::string& src) {
  MoeConfig m;
  m.num_experts = positive_int(j, src, "num_experts");
  m.experts_per_token = positive_int(j, src, "num_experts_per_tok");
  m.expert_intermediate = positive_int(j, src, "moe_intermediate_size");
  // Each expert is a matrix triple the loader binds by name: far above any model (Qwen3: 128).
  constexpr std::int64_t kMaxExperts = 1 << 12;
  if (m.num_experts > kMaxExperts)
    fail("{}: field 'num_experts' is {}, more than {}", src, m.num_experts, kMaxExperts);
  if (m.experts_per_token > m.num_experts)
    fail("{}: field 'num_experts_per_tok' is {}, more than num_experts {}", src,
         m.experts_per_token, m.num_experts);
  if (c.model_type == "qwen2_moe")
    m.shared_intermediate = positive_int(j, src, "shared_expert_intermediate_size");
  m.norm_topk_prob = optional_bool(j, src, "norm_topk_prob", false);
  if (j.contains("decoder_sparse_step") && !j["decoder_sparse_step"].is_null())
    m.sparse_step = positive_int(j, src, "decoder_sparse_step");
  if (auto it = j.find("mlp_only_layers"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) fail("{}: field 'mlp_only_layers' must be a list of layer indices", src);
    for (std::size_t i = 0; i < it->size(); ++i) {
      const auto& v = (*it)[i];
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0 ||
          v.get<std::int64_t>() >= c.num_hidden_layers)
        fail("{}: field 'mlp_only_layers[{}]' must be a layer index in [0, {}), got {}", src, i,
             c.num_hidden_layers, v.dump());
      m.mlp_only_layers.push_back(v.get<std::int64_t>());
    }
  }
  return m;
}

}  // namespace

bool ModelConfig::sparse_layer(std::int64_t layer) const {
  return moe.num_experts > 0 && (layer + 1) % moe.sparse_step == 0 &&
         std::find(moe.mlp_only_layers.begin(), moe.mlp_only_layers.end(), layer) ==
             moe.mlp_only_layers.end();
}

std::int64_t ModelConfig::max_intermediate() const {
  return std::max({intermediate_size, moe.expert_intermediate, moe.shared_intermediate});
}

ModelConfig parse_model_config(const nlohmann::json& j, const std::string& src) {
  if (!j.is_object()) fail("{}: expected a JSON object", src);
  ModelConfig c;
  const auto& type = require(j, src, "model_type");
  if (!type.is_string()) fail("{}: field 'model_type' must be a string", src);
  c.model_type = type.get<std::string>();
  if (c.model_type != "qwen2" && c.model_type != "qwen3" && c.model_type != "qwen2_moe" &&
      c.model_type != "qwen3_moe")
    fail("{}: model_type '{}' is not supported (supported: qwen2, qwen3, qwen2_moe, qwen3_moe)",
         src, c.model_type);
  const bool qwen3_attention = c.model_type == "qwen3" || c.model_type == "qwen3_moe";
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
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
    c.head_dim = positive_int(j, src, "head_dim");
  } else if (c.model_type == "qwen3") {
    c.head_dim = 128;  // Qwen3Config's default
  } else if (c.model_type == "qwen3_moe") {
    fail("{}: missing required field 'head_dim' (qwen3_moe configs state it)", src);
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      fail(
          "{}: hidden_size {} is not divisible by num_attention_heads {} (and no head_dim is "
          "given)",
          src, c.hidden_size, c.num_attention_heads);
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim % 2 != 0)
    fail("{}: head_dim {} must be even for rotary embeddings", src, c.head_dim);
  // Far above any model (Qwen: 64-128), and checked before the rope table (head_dim / 2
  // entries) is built, ahead of any weight: a hostile head_dim would ask for an absurd
  // allocation, and heads x head_dim (q_dim, kv_dim) must not overflow.
  constexpr std::int64_t kMaxHeadDim = 1 << 16, kMaxHeads = 1 << 20;
  if (c.head_dim > kMaxHeadDim)
    fail("{}: head_dim {} is larger than {} (no model has heads that wide)", src, c.head_dim,
         kMaxHeadDim);
  if (c.num_attention_heads > kMaxHeads)
    fail("{}: num_attention_heads {} is more than {}", src, c.num_attention_heads, kMaxHeads);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    fail("{}: num_attention_heads {} is not a multiple of num_key_value_heads {}", src,
         c.num_attention_heads, c.num_key_value_heads);
  if (auto it = j.find("hidden_act"); it != j.end() && *it != "silu")
    fail("{}: hidden_act {} is not supported (expected \"silu\")", src, it->dump());
  if (auto it = j.find("use_sliding_window"); it != j.end() && it->is_boolean() && it->get<bool>())
    fail("{}: use_sliding_window=true is not supported", src);
  if (auto it = j.find("attention_bias");
      it != j.end() && qwen3_attention && (!it->is_boolean() || it->get<bool>()))
    fail("{}: attention_bias {} is not supported for {} (expected false)", src, it->dump(),
         c.model_type);
  if (c.model_type.ends_with("_moe")) c.moe = moe_config(j, c, src);
  c.rope = rope_config(j, c, src);
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

}  // namespace ls::model
