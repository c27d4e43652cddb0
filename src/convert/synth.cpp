// Weights: N(0, 0.02) for matrices, embeddings and biases (Hugging Face's initializer_range),
// norm weights 1 + N(0, 0.1). The final norm is scaled so that logits have a standard deviation
// near 3 — a spread like a trained model's, so that top-k/top-p/min-p have something to cut.
// Each tensor draws from its own stream seeded by (seed, name): any tensor can be regenerated
// alone and adding a tensor does not change the others.
#include "convert/synth.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "convert/safetensors_writer.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/output_file.h"
#include "formats/tensor_names.h"

namespace ls::convert {

namespace fs = std::filesystem;

namespace {

// A mixture of experts' sizes (num_experts 0: a dense model).
struct MoeShape {
  std::int64_t experts = 0, per_token = 0, expert_ff = 0, shared_ff = 0;
  bool norm_topk_prob = false;
};

struct Shape {
  const char* name;
  const char* model_type;  // qwen2, qwen3, qwen2_moe or qwen3_moe
  std::int64_t hidden, intermediate, layers, heads, kv_heads, vocab;
  bool tied;
  std::int64_t head_dim;  // 0: hidden / heads (Qwen2); Qwen3 configs state it
  MoeShape moe = {};
};
constexpr Shape kShapes[] = {
    {"tiny", "qwen2", 64, 176, 2, 4, 2, 151936, true, 0},
    {"qwen2.5-0.5b", "qwen2", 896, 4864, 24, 14, 2, 151936, true, 0},
    {"qwen2.5-1.5b", "qwen2", 1536, 8960, 28, 12, 2, 151936, true, 0},
    {"qwen2.5-3b", "qwen2", 2048, 11008, 36, 16, 2, 151936, true, 0},
    {"qwen2.5-7b", "qwen2", 3584, 18944, 28, 28, 4, 152064, false, 0},
    // head_dim 32 != 64 / 4, as Qwen3's real shapes have it (0.6B: 1024 / 16 = 64, head_dim 128).
    {"qwen3-tiny", "qwen3", 64, 176, 2, 4, 2, 151936, true, 32},
    {"qwen3-0.6b", "qwen3", 1024, 3072, 28, 16, 8, 151936, true, 128},
    {"qwen3-1.7b", "qwen3", 2048, 6144, 28, 16, 8, 151936, true, 128},
    {"qwen3-4b", "qwen3", 2560, 9728, 36, 32, 8, 151936, true, 128},
    {"qwen3-8b", "qwen3", 4096, 12288, 36, 32, 8, 151936, false, 128},
    // Mixtures of experts, as Qwen/Qwen3-30B-A3B and Qwen/Qwen1.5-MoE-A2.7B have them, and two
    // tiny ones for tests (8 experts of which 2 per token; 6 of which 2 plus a shared expert).
    {"qwen3-moe-tiny", "qwen3_moe", 64, 176, 2, 4, 2, 151936, true, 32, {8, 2, 32, 0, true}},
    {"qwen3-30b-a3b",
     "qwen3_moe",
     2048,
     6144,
     48,
     32,
     4,
     151936,
     false,
     128,
     {128, 8, 768, 0, true}},
    {"qwen2-moe-tiny", "qwen2_moe", 64, 176, 2, 4, 2, 151936, true, 0, {6, 2, 32, 64, false}},
    {"qwen1.5-moe-a2.7b",
     "qwen2_moe",
     2048,
     5632,
     24,
     16,
     16,
     151936,
     false,
     0,
     {60, 4, 1408, 5632, false}},
};

bool is_qwen3(const nlohmann::ordered_json& config) {
  return config["model_type"] == "qwen3" || config["model_type"] == "qwen3_moe";
}

// The keys transformers' Qwen2MoeConfig / Qwen3MoeConfig add, as the released configs have them.
void add_moe_config(const Shape& s, nlohmann::ordered_json& j) {
  if (s.moe.experts == 0) return;
  j["architectures"] = {std::string_view(s.model_type) == "qwen3_moe" ? "Qwen3MoeForCausalLM"
                                                                      : "Qwen2MoeForCausalLM"};
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = nlohmann::ordered_json::array();
  j["moe_intermediate_size"] = s.moe.expert_ff;
  j["norm_topk_prob"] = s.moe.norm_topk_prob;
  j["num_experts"] = s.moe.experts;
  j["num_experts_per_tok"] = s.moe.per_token;
  j["output_router_logits"] = false;
  j["router_aux_loss_coef"] = 0.001;
  if (s.moe.shared_ff > 0) j["shared_expert_intermediate_size"] = s.moe.shared_ff;
}

const Shape& find_shape(const std::string& name) {
  for (const auto& s : kShapes)
    if (name == s.name) return s;
  std::string known;
  for (const auto& s : kShapes) known += std::string(known.empty() ? "" : ", ") + s.name;
  fail("--shape '{}' is unknown (expected one of: {})", name, known);
}

// splitmix64: a tiny, well-mixed generator; the stream is fully specified, so synthetic
// models are identical on every machine.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }  // [0, 1)
  // Box-Muller: two normals per pair of uniforms.
  void normals(float* out, std::size_t n, double mean, double std) {
    for (std::size_t i = 0; i < n; i += 2) {
      const double u1 = 1.0 - uniform(), u2 = uniform();
      const double r = std::sqrt(-2.0 * std::log(u1));
      out[i] = static_cast<float>(mean + std * r * std::cos(2 * M_PI * u2));
      if (i + 1 < n) out[i + 1] = static_cast<float>(mean + std * r * std::sin(2 * M_PI * u2));
    }
  }
};

std::uint64_t stream_seed(std::uint64_t seed, const std::string& name) {
  std::uint64_t h = 1469598103934665603ull ^ seed;  // FNV-1a over the name, mixed with the seed
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  return h;
}

void write_json(const fs::path& p, const nlohmann::ordered_json& j) {
  OutputFile file(p.string(), "");
  file.stream() << j.dump(2, ' ', false) << "\n";
  file.commit();
}

nlohmann::ordered_json read_json(const fs::path& p) {
  try {
    return nlohmann::ordered_json::parse(read_text_file(p.string()));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", p.string(), e.what());
  }
}

// Qwen3's tokenizer files add four tokens Qwen2.5 does not have; dropping them makes "<think>"
// plain text again, as it is for the real Qwen2.5.
constexpr std::int64_t kFirstQwen3OnlyId = 151665;

// Qwen3 keeps every token and the source's own (Qwen3) chat template.
void write_tokenizer(const SynthOptions& o, bool qwen3) {
  const fs::path src(o.tokenizer_from);
  const fs::path out(o.out_dir);
  // Plain (sorted-key) json here: ordered_json looks keys up linearly, which is quadratic over
  // the 151k-entry vocab; key order inside the vocab object carries no meaning.
  nlohmann::json tok;
  try {
    tok = nlohmann::json::parse(read_text_file((src / "tokenizer.json").string()));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", (src / "tokenizer.json").string(), e.what());
  }
  if (!tok.contains("added_tokens") || !tok["added_tokens"].is_array())
    fail("{}: missing array 'added_tokens'", (src / "tokenizer.json").string());
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& t : tok["added_tokens"])
    if (qwen3 || t.value("id", std::int64_t{0}) < kFirstQwen3OnlyId) kept.push_back(t);
  tok["added_tokens"] = kept;
  OutputFile f((out / "tokenizer.json").string(), "");
  f.stream() << tok.dump(-1, ' ', false) << "\n";
  f.commit();

  auto cfg = read_json(src / "tokenizer_config.json");
  if (!qwen3 && cfg.contains("added_tokens_decoder") && cfg["added_tokens_decoder"].is_object()) {
    nlohmann::ordered_json dec = nlohmann::ordered_json::object();
    for (const auto& [id, t] : cfg["added_tokens_decoder"].items())
      if (std::stoll(id) < kFirstQwen3OnlyId) dec[id] = t;
    cfg["added_tokens_decoder"] = dec;
  }
  if (!o.chat_template.empty())
    cfg["chat_template"] = o.chat_template;
  else if (!qwen3 || !cfg.contains("chat_template"))
    cfg["chat_template"] = builtin_qwen25_chat_template();
  cfg["eos_token"] = "<|im_end|>";
  cfg["pad_token"] = "<|endoftext|>";
  write_json(out / "tokenizer_config.json", cfg);
}

nlohmann::ordered_json dense_config(const Shape& s) {
  if (std::string_view(s.model_type).starts_with("qwen3"))  // as Qwen/Qwen3-0.6B's config.json
    return {
        {"architectures", {"Qwen3ForCausalLM"}},
        {"attention_bias", false},
        {"attention_dropout", 0.0},
        {"bos_token_id", 151643},
        {"eos_token_id", 151645},
        {"head_dim", s.head_dim},
        {"hidden_act", "silu"},
        {"hidden_size", s.hidden},
        {"initializer_range", 0.02},
        {"intermediate_size", s.intermediate},
        {"max_position_embeddings", 40960},
        {"max_window_layers", s.layers},
        {"model_type", s.model_type},
        {"num_attention_heads", s.heads},
        {"num_hidden_layers", s.layers},
        {"num_key_value_heads", s.kv_heads},
        {"rms_norm_eps", 1e-06},
        {"rope_scaling", nullptr},
        {"rope_theta", 1000000},
        {"sliding_window", nullptr},
        {"tie_word_embeddings", s.tied},
        {"torch_dtype", "bfloat16"},
        {"use_cache", true},
        {"use_sliding_window", false},
        {"vocab_size", s.vocab},
    };
  return {
      {"architectures", {"Qwen2ForCausalLM"}},
      {"attention_dropout", 0.0},
      {"bos_token_id", 151643},
      {"eos_token_id", 151645},
      {"hidden_act", "silu"},
      {"hidden_size", s.hidden},
      {"initializer_range", 0.02},
      {"intermediate_size", s.intermediate},
      {"max_position_embeddings", 32768},
      {"max_window_layers", s.layers},
      {"model_type", s.model_type},
      {"num_attention_heads", s.heads},
      {"num_hidden_layers", s.layers},
      {"num_key_value_heads", s.kv_heads},
      {"rms_norm_eps", 1e-06},
      {"rope_scaling", nullptr},
      {"rope_theta", 1000000.0},
      {"sliding_window", 32768},
      {"tie_word_embeddings", s.tied},
      {"torch_dtype", "bfloat16"},
      {"use_cache", true},
      {"use_sliding_window", false},
      {"vocab_size", s.vocab},
  };
}

}  // namespace

std::vector<std::string> synth_shape_names() {
  std::vector<std::string> v;
  for (const auto& s : kShapes) v.emplace_back(s.name);
  return v;
}

nlohmann::ordered_json synth_config(const std::string& shape) {
  const Shape& s = find_shape(shape);
  nlohmann::ordered_json j = dense_config(s);
  add_moe_config(s, j);
  return j;
}

void synthesize_model(const SynthOptions& o) {
  if (o.out_dir.empty()) fail("synth: --out DIR is required");
  if (fs::exists(o.out_dir) && !fs::is_directory(o.out_dir))
    fail("synth: --out {} exists and is not a folder", o.out_dir);
  auto config = synth_config(o.shape);
  if (o.tied) config["tie_word_embeddings"] = *o.tied;
  if (o.layers > 0) config["num_hidden_layers"] = config["max_window_layers"] = o.layers;
  config["torch_dtype"] = o.dtype == DType::F32   ? "float32"
                          : o.dtype == DType::F16 ? "float16"
                                                  : "bfloat16";
  fs::create_directories(o.out_dir);
  write_json(fs::path(o.out_dir) / "config.json", config);
  const bool qwen3 = is_qwen3(config);
  // The Instruct models' generation_config.json (Qwen3: its thinking-mode defaults).
  write_json(fs::path(o.out_dir) / "generation_config.json",
             qwen3 ? nlohmann::ordered_json{{"bos_token_id", 151643},
                                            {"do_sample", true},
                                            {"eos_token_id", {151645, 151643}},
                                            {"pad_token_id", 151643},
                                            {"temperature", 0.6},
                                            {"top_k", 20},
                                            {"top_p", 0.95},
                                            {"transformers_version", "4.51.0"}}
                   : nlohmann::ordered_json{{"bos_token_id", 151643},
                                            {"pad_token_id", 151643},
                                            {"do_sample", true},
                                            {"eos_token_id", {151645, 151643}},
                                            {"repetition_penalty", 1.1},
                                            {"temperature", 0.7},
                                            {"top_p", 0.8},
                                            {"top_k", 20},
                                            {"transformers_version", "4.43.1"}});

  const std::int64_t h = config["hidden_size"], ff = config["intermediate_size"],
                     heads = config["num_attention_heads"], kvh = config["num_key_value_heads"],
                     vocab = config["vocab_size"], layers = config["num_hidden_layers"];
  const std::int64_t hd = qwen3 ? config["head_dim"].get<std::int64_t>() : h / heads;
  const std::int64_t q = heads * hd, kv = kvh * hd;
  const bool tied = config["tie_word_embeddings"];

  struct Init {
    double mean, std;
  };
  std::vector<TensorSpec> specs;
  std::vector<Init> inits;
  const double final_gain = 3.0 / (0.02 * std::sqrt(static_cast<double>(h)));
  auto add = [&](formats::WeightRole role, std::int64_t layer, std::vector<std::int64_t> shape,
                 Init init, std::int64_t expert = -1) {
    // 1-D parameters stay F32 in real checkpoints only sometimes; keep the model's dtype.
    specs.push_back({formats::hf_tensor_name(role, layer, expert), o.dtype, std::move(shape)});
    inits.push_back(init);
  };
  const std::int64_t experts = config.value("num_experts", std::int64_t{0});
  const std::int64_t expert_ff = config.value("moe_intermediate_size", std::int64_t{0});
  const std::int64_t shared_ff = config.value("shared_expert_intermediate_size", std::int64_t{0});
  using R = formats::WeightRole;
  const Init mat{0.0, 0.02}, norm{1.0, 0.1};
  add(R::TokenEmbedding, -1, {vocab, h}, mat);
  for (std::int64_t l = 0; l < layers; ++l) {
    add(R::AttnNorm, l, {h}, norm);
    add(R::Wq, l, {q, h}, mat);
    if (!qwen3) add(R::Bq, l, {q}, mat);
    add(R::Wk, l, {kv, h}, mat);
    if (!qwen3) add(R::Bk, l, {kv}, mat);
    add(R::Wv, l, {kv, h}, mat);
    if (!qwen3) add(R::Bv, l, {kv}, mat);
    if (qwen3) {
      add(R::QNorm, l, {hd}, norm);
      add(R::KNorm, l, {hd}, norm);
    }
    add(R::Wo, l, {h, q}, mat);
    add(R::MlpNorm, l, {h}, norm);
    if (experts == 0) {
      add(R::WGate, l, {ff, h}, mat);
      add(R::WUp, l, {ff, h}, mat);
      add(R::WDown, l, {h, ff}, mat);
      continue;
    }
    add(R::Router, l, {experts, h}, mat);
    for (std::int64_t e = 0; e < experts; ++e) {
      add(R::ExpertGate, l, {expert_ff, h}, mat, e);
      add(R::ExpertUp, l, {expert_ff, h}, mat, e);
      add(R::ExpertDown, l, {h, expert_ff}, mat, e);
    }
    if (shared_ff > 0) {
      add(R::SharedGate, l, {shared_ff, h}, mat);
      add(R::SharedUp, l, {shared_ff, h}, mat);
      add(R::SharedDown, l, {h, shared_ff}, mat);
      add(R::SharedExpertGate, l, {1, h}, mat);
    }
  }
  add(R::OutputNorm, -1, {h}, {final_gain, 0.1 * final_gain});
  if (!tied) add(R::LmHead, -1, {vocab, h}, mat);

  std::vector<float> buf(1 << 20);
  std::vector<std::uint8_t> bytes(buf.size() * 4);
  write_safetensors((fs::path(o.out_dir) / "model.safetensors").string(), specs,
                    [&](std::size_t i, const ByteSink& sink) {
                      Rng rng{stream_seed(o.seed, specs[i].name)};
                      std::size_t remaining = specs[i].nbytes() / dtype_size(o.dtype);
                      while (remaining > 0) {
                        const std::size_t n = std::min(remaining, buf.size());
                        rng.normals(buf.data(), n, inits[i].mean, inits[i].std);
                        std::size_t nb = 0;
                        for (std::size_t j = 0; j < n; ++j) {
                          if (o.dtype == DType::F32) {
                            std::memcpy(&bytes[nb], &buf[j], 4);
                            nb += 4;
                          } else {
                            const std::uint16_t v =
                                o.dtype == DType::BF16 ? f32_to_bf16(buf[j]) : f32_to_f16(buf[j]);
                            std::memcpy(&bytes[nb], &v, 2);
                            nb += 2;
                          }
                        }
                        sink({bytes.data(), nb});
                        remaining -= n;
                      }
                      if (o.on_tensor) o.on_tensor(i + 1, specs.size());
                    },
                    {{"format", "pt"}, {"generator", "logitscope synth"}});
  if (!o.tokenizer_from.empty()) write_tokenizer(o, qwen3);
}

}  // namespace ls::convert
