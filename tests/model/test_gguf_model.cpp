// A synthetic Hugging Face model converted with quantize_to_gguf loads back as the same model:
// the config equal field by field, every tensor equal to the source (bit-exact for F32/BF16/F16,
// equal to quantize_row of the source rows for the block types), the standard metadata keys
// present with llama.cpp's values, and the chat template carried over.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>

#include "convert/gguf_quantize.h"
#include "convert/gguf_writer.h"
#include "convert/synth.h"
#include "core/error.h"
#include "engine/session.h"
#include "formats/gguf.h"
#include "formats/tensor_names.h"
#include "formats/tensor_store.h"
#include "kernels/quant.h"
#include "model/gguf_metadata.h"
#include "model/model.h"
#include "model/qwen2.h"
#include "test_util.h"
#include "tokenizer/gguf_tokenizer.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

// One tiny F32 model with the real tokenizer, shared by the tests of this file.
const std::string& model_dir() {
  static const std::string dir = [] {
    const auto d = test::scratch_dir("gguf_model_src") / "tiny-f32";
    convert::SynthOptions o;
    o.shape = "tiny";
    o.dtype = DType::F32;
    o.seed = 1;
    o.tokenizer_from = LS_QWEN_TOKENIZER_DIR;
    o.out_dir = d.string();
    convert::synthesize_model(o);
    return d.string();
  }();
  return dir;
}

std::string convert(DType type, const std::string& name) {
  const auto out = test::scratch_dir("gguf_model_" + name) / (name + ".gguf");
  convert::QuantizeOptions o;
  o.model_dir = model_dir();
  o.type = type;
  o.out = out.string();
  convert::quantize_to_gguf(o);
  return out.string();
}

std::vector<float> row_f32(const TensorView& t, std::int64_t r) {
  const auto n = static_cast<std::size_t>(t.shape.back());
  std::vector<float> out(n);
  const std::uint8_t* p = t.row(r);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h;
    switch (t.dtype) {
      case DType::F32:
        std::memcpy(&out[i], p + 4 * i, 4);
        break;
      case DType::BF16:
        std::memcpy(&h, p + 2 * i, 2), out[i] = bf16_to_f32(h);
        break;
      case DType::F16:
        std::memcpy(&h, p + 2 * i, 2), out[i] = f16_to_f32(h);
        break;
      default:
        throw Error("row_f32: unexpected dtype");
    }
  }
  return out;
}

// The bytes a row of `src` must have once stored as `type`, computed without the converter.
std::vector<std::uint8_t> expected_row(const TensorView& src, std::int64_t r, DType type) {
  const std::vector<float> x = row_f32(src, r);
  std::vector<std::uint8_t> out(dtype_bytes(type, static_cast<std::int64_t>(x.size())));
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (type == DType::F32) {
      std::memcpy(&out[4 * i], &x[i], 4);
    } else if (type == DType::BF16 || type == DType::F16) {
      const std::uint16_t h = type == DType::BF16 ? f32_to_bf16(x[i]) : f32_to_f16(x[i]);
      std::memcpy(&out[2 * i], &h, 2);
    }
  }
#ifdef LS_HAVE_QUANTIZE_ROW
  if (dtype_is_quantized(type)) kernels::quantize_row(type, x.data(), out.data(), x.size());
#else
  if (dtype_is_quantized(type)) throw Error("quantize_row is not in this build");
#endif
  return out;
}

// Every weight of the GGUF against the safetensors source, via the name table.
void expect_tensors_match(const std::string& gguf, DType requested) {
  const formats::GgufFile f(gguf);
  const formats::TensorStore src = formats::TensorStore::open_hf_dir(model_dir());
  const model::ModelConfig c = model::load_model_config(model_dir() + "/config.json");
  std::size_t checked = 0;
  for (const auto& n : formats::kTensorNames) {
    for (std::int64_t l = 0; l < (n.per_layer ? c.num_hidden_layers : 1); ++l) {
      const std::int64_t layer = n.per_layer ? l : -1;
      if (!model::has_weight(model::kQwen2, c, n.role, layer))
        continue;  // Qwen3's q/k norms, experts
      const TensorView* s = src.find(formats::hf_tensor_name(n.role, layer));
      const TensorView* g = f.find(formats::gguf_tensor_name(n.role, layer));
      if (n.role == formats::WeightRole::LmHead && c.tie_word_embeddings) {
        EXPECT_EQ(g, nullptr) << "a tied model has no output.weight";
        continue;
      }
      ASSERT_NE(s, nullptr);
      ASSERT_NE(g, nullptr) << formats::gguf_tensor_name(n.role, layer);
      SCOPED_TRACE(g->name);
      EXPECT_EQ(g->shape, s->shape);
      // Norms and biases F32; matrices the requested type unless their rows do not fit it.
      DType want = DType::F32;
      if (s->shape.size() == 2) {
        const auto cols = static_cast<std::size_t>(s->shape[1]);
        want = requested;
        // llama-quantize's substitutes for rows that are not whole 256-blocks.
        DType fallback = DType::Q8_0;  // Q6_K
        if (requested == DType::Q4_K) fallback = DType::Q5_0;
        if (requested == DType::Q5_K) fallback = DType::Q5_1;
        if (requested == DType::Q3_K || requested == DType::Q2_K) fallback = DType::IQ4_NL;
        if (cols % dtype_block_elems(requested) != 0) want = cols % 32 == 0 ? fallback : DType::F16;
      }
      EXPECT_EQ(g->dtype, want);
      const std::int64_t rows = s->shape.size() == 2 ? s->shape[0] : 1;
      for (std::int64_t r = 0; r < rows; ++r) {
        const auto e = expected_row(*s, r, want);
        ASSERT_EQ(std::memcmp(g->row(r), e.data(), e.size()), 0) << "row " << r;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3 + 12 * c.num_hidden_layers - (c.tie_word_embeddings ? 1 : 0));
}

void expect_same_config(const model::ModelConfig& a, const model::ModelConfig& b) {
  EXPECT_EQ(a.model_type, b.model_type);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.intermediate_size, b.intermediate_size);
  EXPECT_EQ(a.num_hidden_layers, b.num_hidden_layers);
  EXPECT_EQ(a.num_attention_heads, b.num_attention_heads);
  EXPECT_EQ(a.num_key_value_heads, b.num_key_value_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings);
  EXPECT_EQ(a.rms_norm_eps, b.rms_norm_eps);  // exactly: 1e-6 survives its float32 storage
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.tie_word_embeddings, b.tie_word_embeddings);
  EXPECT_EQ(a.bos_token_id, b.bos_token_id);
  EXPECT_EQ(a.eos_token_id, b.eos_token_id);
}

TEST(GgufModel, F32LoadsBackAsTheSameModel) {
  const std::string path = convert(DType::F32, "f32");
  const auto hf = model::Model::load(model_dir());
  const auto gg = model::Model::load(path);
  expect_same_config(gg->config(), hf->config());
  EXPECT_TRUE(gg->config().tie_word_embeddings);
  EXPECT_EQ(gg->weight_bytes(), hf->weight_bytes());
  expect_tensors_match(path, DType::F32);
}

// A Qwen3 with YaRN written as GGUF (architecture qwen3, attention.key_length, q/k norms,
// rope.scaling.*) reads back as the same config and gives the same logits, bit for bit.
TEST(GgufModel, Qwen3WithYarnRoundTrips) {
  const auto d = test::scratch_dir("gguf_model_qwen3");
  convert::SynthOptions so;
  so.shape = "qwen3-tiny";
  so.dtype = DType::F32;
  so.seed = 2;
  so.tokenizer_from = LS_QWEN_TOKENIZER_DIR;
  so.out_dir = (d / "q3").string();
  convert::synthesize_model(so);
  const std::string cfg_path = so.out_dir + "/config.json";
  auto cfg = nlohmann::json::parse(test::read_file(cfg_path));
  cfg["max_position_embeddings"] = 256;
  cfg["rope_scaling"] = {
      {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 64}};
  test::write_file(cfg_path, cfg.dump());
  convert::QuantizeOptions qo;
  qo.model_dir = so.out_dir;
  qo.type = DType::F32;
  qo.out = (d / "q3.gguf").string();
  convert::quantize_to_gguf(qo);
  const auto hf = model::Model::load(so.out_dir);
  const auto gg = model::Model::load(qo.out);
  expect_same_config(gg->config(), hf->config());
  EXPECT_EQ(gg->config().head_dim, 32);
  EXPECT_EQ(gg->config().rope.type, "yarn");
  EXPECT_EQ(gg->config().rope.inv_freq, hf->config().rope.inv_freq);
  EXPECT_EQ(gg->config().rope.attention_factor, hf->config().rope.attention_factor);
  EXPECT_EQ(std::string(gg->architecture().model_type), "qwen3");
  ThreadPool pool(1);
  engine::Session a(*hf, pool), b(*gg, pool);
  std::vector<std::int32_t> tokens;
  for (int i = 0; i < 100; ++i) tokens.push_back((i * 7919) % 151000);  // past the original 64
  const auto la = a.feed(tokens, true);
  const auto lb = b.feed(tokens, true);
  ASSERT_EQ(la.size(), lb.size());
  EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size_bytes()), 0);
  // A config YaRN field GGUF cannot carry is refused, not dropped.
  cfg["rope_scaling"]["beta_fast"] = 16;
  test::write_file(cfg_path, cfg.dump());
  LS_EXPECT_ERROR(convert::quantize_to_gguf(qo),
                  "rope_scaling.beta_fast cannot be written to GGUF");
}

TEST(GgufModel, Bf16AndF16AreBitExactConversions) {
  expect_tensors_match(convert(DType::BF16, "bf16"), DType::BF16);
  expect_tensors_match(convert(DType::F16, "f16"), DType::F16);
}

TEST(GgufModel, BlockTypesEqualQuantizeRowOfTheSource) {
  if (!convert::gguf_can_write(DType::Q8_0))
    GTEST_SKIP() << "quantization kernels not in this build";
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_0, DType::Q5_1, DType::Q4_1,
                  DType::IQ4_NL, DType::Q5_K, DType::Q3_K, DType::Q2_K}) {
    SCOPED_TRACE(dtype_name(t));
    const std::string path = convert(t, std::string(dtype_name(t)));
    expect_tensors_match(path, t);
    const auto gg = model::Model::load(path);  // loads (running needs the quantized matmul)
    expect_same_config(gg->config(), model::Model::load(model_dir())->config());
  }
}

TEST(GgufModel, FallbackRule) {
  // llama-quantize's substitutes: 896 = 3.5 x 256 = 28 x 32
  EXPECT_EQ(convert::gguf_tensor_type(DType::Q4_K, {896, 896}), DType::Q5_0);
  EXPECT_EQ(convert::gguf_tensor_type(DType::Q6_K, {896, 896}), DType::Q8_0);
  EXPECT_EQ(convert::gguf_tensor_type(DType::Q4_K, {64, 176}), DType::F16);
  EXPECT_EQ(convert::gguf_tensor_type(DType::Q5_1, {64, 896}), DType::Q5_1);
  EXPECT_EQ(convert::gguf_tensor_type(DType::Q5_K, {896, 896}), DType::Q5_1);
  EXPECT_EQ(convert::gguf_tensor_type(DType::Q3_K, {896, 896}), DType::IQ4_NL);
  EXPECT_EQ(convert::gguf_tensor_type(DType::Q2_K, {4864, 896}), DType::IQ4_NL);
  EXPECT_EQ(convert::gguf_tensor_type(DType::Q2_K, {896, 4864}), DType::Q2_K);
  EXPECT_EQ(convert::gguf_tensor_type(DType::IQ4_NL, {64, 176}), DType::F16);
  EXPECT_EQ(convert::gguf_tensor_type(DType::Q4_K, {4864, 1024}), DType::Q4_K);
  EXPECT_EQ(convert::gguf_tensor_type(DType::Q8_0, {64, 176}), DType::F16);  // 176 = 5.5 x 32
  EXPECT_EQ(convert::gguf_tensor_type(DType::Q4_0, {64, 64}), DType::Q4_0);
  EXPECT_EQ(convert::gguf_tensor_type(DType::BF16, {64, 176}), DType::BF16);
  EXPECT_EQ(convert::gguf_tensor_type(DType::Q8_0, {896}), DType::F32);  // norms, biases
}

// llama-quantize's choices on Qwen2.5-0.5B's shapes (24 layers, 14 / 2 heads, tied, rows of 896
// and 4864), before the fallback of rows that are not whole blocks.
TEST(GgufModel, MixesChooseAsLlamaQuantize) {
  using R = formats::WeightRole;
  const auto type = [](convert::QuantMix m, R role, std::int64_t layer, std::int64_t cols) {
    return convert::quant_mix_tensor_type(m, role, layer, 24, 7, true, cols);
  };
  // Layers with more bits in Q4_K_M / Q5_K_M: 0-2, 21-23 and every third from 5.
  const std::vector<std::int64_t> more = {0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23};
  for (std::int64_t l = 0; l < 24; ++l) {
    const bool m = std::find(more.begin(), more.end(), l) != more.end();
    EXPECT_EQ(type(convert::QuantMix::Q4_K_M, R::Wv, l, 896), m ? DType::Q6_K : DType::Q4_K) << l;
    EXPECT_EQ(type(convert::QuantMix::Q5_K_M, R::WDown, l, 4864), m ? DType::Q6_K : DType::Q5_K)
        << l;
    EXPECT_EQ(type(convert::QuantMix::Q4_K_M, R::Wq, l, 896), DType::Q4_K);
    EXPECT_EQ(type(convert::QuantMix::Q3_K_M, R::Wv, l, 896), l < 2 ? DType::Q5_K : DType::Q4_K);
    EXPECT_EQ(type(convert::QuantMix::Q3_K_M, R::WDown, l, 4864),
              l < 1 ? DType::Q5_K : DType::Q4_K);
    EXPECT_EQ(type(convert::QuantMix::Q3_K_M, R::Wo, l, 896), DType::Q4_K);
    EXPECT_EQ(type(convert::QuantMix::Q3_K_M, R::WGate, l, 896), DType::Q3_K);
    EXPECT_EQ(type(convert::QuantMix::Q2_K, R::Wv, l, 896),
              DType::Q4_K);  // 7 query heads per kv head
    EXPECT_EQ(type(convert::QuantMix::Q2_K, R::WDown, l, 4864), DType::Q3_K);
    EXPECT_EQ(type(convert::QuantMix::Q2_K, R::WUp, l, 896), DType::Q2_K);
  }
  EXPECT_EQ(convert::quant_mix_tensor_type(convert::QuantMix::Q2_K, R::Wv, 3, 24, 2, true, 896),
            DType::Q3_K);
  // The tied embedding is the output matrix: Q8_0 for rows of 896, else Q6_K; untied, the
  // embedding keeps the default type and lm_head takes Q6_K.
  EXPECT_EQ(type(convert::QuantMix::Q4_K_M, R::TokenEmbedding, -1, 896), DType::Q8_0);
  EXPECT_EQ(type(convert::QuantMix::Q4_K_M, R::TokenEmbedding, -1, 1536), DType::Q6_K);
  EXPECT_EQ(convert::quant_mix_tensor_type(convert::QuantMix::Q4_K_M, R::TokenEmbedding, -1, 28, 7,
                                           false, 3584),
            DType::Q4_K);
  EXPECT_EQ(
      convert::quant_mix_tensor_type(convert::QuantMix::Q4_K_M, R::LmHead, -1, 28, 7, false, 3584),
      DType::Q6_K);
  // What a 0.5B Q4_K_M file then holds: Q5_0 for the 896-column Q4_K matrices, Q8_0 for the
  // 896-column Q6_K ones.
  EXPECT_EQ(convert::gguf_tensor_type(type(convert::QuantMix::Q4_K_M, R::Wq, 3, 896), {896, 896}),
            DType::Q5_0);
  EXPECT_EQ(convert::gguf_tensor_type(type(convert::QuantMix::Q4_K_M, R::Wv, 0, 896), {128, 896}),
            DType::Q8_0);
  EXPECT_EQ(
      convert::gguf_tensor_type(type(convert::QuantMix::Q4_K_M, R::WDown, 0, 4864), {896, 4864}),
      DType::Q6_K);
  EXPECT_EQ(convert::quant_mix_from_name("Q4_K_M"), convert::QuantMix::Q4_K_M);
  EXPECT_EQ(convert::quant_mix_from_name("q2_k"), convert::QuantMix::Q2_K);
  EXPECT_EQ(convert::quant_mix_from_name("q4_k"), std::nullopt);
  EXPECT_EQ(convert::quant_mix_file_type(convert::QuantMix::Q4_K_M), 15u);
}

TEST(GgufModel, MetadataAsLlamaCppWritesIt) {
  const formats::GgufFile f(convert(DType::F32, "meta"));
  const model::ModelConfig c = model::load_model_config(model_dir() + "/config.json");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.require_string("general.architecture"), "qwen2");
  EXPECT_EQ(f.require_string("general.name"), "tiny-f32");
  EXPECT_EQ(f.require_int("general.file_type"), 0);
  EXPECT_EQ(f.require_int("general.quantization_version"), 2);
  EXPECT_EQ(f.require_int("qwen2.block_count"), c.num_hidden_layers);
  EXPECT_EQ(f.require_int("qwen2.context_length"), c.max_position_embeddings);
  EXPECT_EQ(f.require_int("qwen2.embedding_length"), c.hidden_size);
  EXPECT_EQ(f.require_int("qwen2.feed_forward_length"), c.intermediate_size);
  EXPECT_EQ(f.require_int("qwen2.attention.head_count"), c.num_attention_heads);
  EXPECT_EQ(f.require_int("qwen2.attention.head_count_kv"), c.num_key_value_heads);
  EXPECT_EQ(f.find_kv("qwen2.rope.freq_base")->type, formats::GgufType::Float32);
  EXPECT_EQ(f.require_float("qwen2.rope.freq_base"), 1e6);
  EXPECT_EQ(f.require_float("qwen2.attention.layer_norm_rms_epsilon"), static_cast<double>(1e-6f));
  EXPECT_EQ(f.require_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.require_string("tokenizer.ggml.pre"), "qwen2");
  const auto& tokens = *f.get_array("tokenizer.ggml.tokens", formats::GgufType::String);
  const auto& types = *f.get_array("tokenizer.ggml.token_type", formats::GgufType::Int32);
  ASSERT_EQ(tokens.size(), static_cast<std::size_t>(c.vocab_size));
  ASSERT_EQ(types.size(), tokens.size());
  EXPECT_EQ(tokens[0], "!");
  EXPECT_EQ(types[0], 1);
  EXPECT_EQ(tokens[151643], "<|endoftext|>");
  EXPECT_EQ(types[151643], 3);  // CONTROL
  EXPECT_EQ(tokens[151657], "<tool_call>");
  EXPECT_EQ(types[151657], 4);               // USER_DEFINED: not special in tokenizer.json
  EXPECT_EQ(tokens[151665], "[PAD151665]");  // Qwen2.5 has 22 added tokens; the rest is padding
  EXPECT_EQ(types[151665], 5);               // UNUSED
  EXPECT_EQ(tokens[151935], "[PAD151935]");
  EXPECT_EQ(f.get_array("tokenizer.ggml.merges", formats::GgufType::String)->at(0), "Ġ Ġ");
  EXPECT_EQ(f.require_int("tokenizer.ggml.eos_token_id"), 151645);
  EXPECT_EQ(f.require_int("tokenizer.ggml.padding_token_id"), 151643);
  EXPECT_EQ(f.require_int("tokenizer.ggml.bos_token_id"), 151643);
  EXPECT_EQ(f.get_bool("tokenizer.ggml.add_bos_token"), false);
  const auto tmpl = model::gguf_chat_template(f);
  ASSERT_TRUE(tmpl.has_value());
  const auto cfg = nlohmann::json::parse(test::read_file(model_dir() + "/tokenizer_config.json"));
  EXPECT_EQ(tmpl->source, cfg.at("chat_template").get<std::string>());
  EXPECT_EQ(tmpl->special_tokens.value("eos_token", ""), "<|im_end|>");
  EXPECT_EQ(tmpl->special_tokens.value("pad_token", ""), "<|endoftext|>");
  EXPECT_FALSE(tmpl->special_tokens.contains("bos_token"));  // add_bos_token is false
}

TEST(GgufModel, MetadataErrorsNameTheKey) {
  const auto dir = test::scratch_dir("gguf_model_errors");
  auto write = [&](const std::string& name, const std::function<void(convert::GgufWriter&)>& meta) {
    convert::GgufWriter w;
    meta(w);
    w.add_tensor("token_embd.weight", DType::F32, {10, 8});
    const std::string p = (dir / name).string();
    w.write(p, [](std::size_t, const convert::ByteSink& sink) {
      std::vector<std::uint8_t> z(320);
      sink(z);
    });
    return p;
  };
  auto qwen = [](convert::GgufWriter& w) {
    w.add_string("general.architecture", "qwen2");
    w.add_uint32("qwen2.embedding_length", 8);
    w.add_uint32("qwen2.feed_forward_length", 16);
    w.add_uint32("qwen2.block_count", 1);
    w.add_uint32("qwen2.attention.head_count", 2);
    w.add_uint32("qwen2.context_length", 64);
  };
  const std::string llama = write(
      "llama.gguf", [](convert::GgufWriter& w) { w.add_string("general.architecture", "llama"); });
  LS_EXPECT_ERROR(
      model::gguf_model_config(formats::GgufFile(llama)),
      "metadata 'general.architecture' is 'llama' (supported: qwen2, qwen3, qwen2moe, qwen3moe)");
  const std::string no_eps = write("noeps.gguf", qwen);
  LS_EXPECT_ERROR(model::gguf_model_config(formats::GgufFile(no_eps)),
                  "missing metadata 'qwen2.attention.layer_norm_rms_epsilon'");
  const std::string ok = write("ok.gguf", [&](convert::GgufWriter& w) {
    qwen(w);
    w.add_float32("qwen2.attention.layer_norm_rms_epsilon", 1e-5f);
    w.add_string("tokenizer.ggml.model", "llama");
  });
  const model::ModelConfig c = model::gguf_model_config(formats::GgufFile(ok));
  EXPECT_EQ(c.vocab_size, 10);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.num_key_value_heads, 2);
  LS_EXPECT_ERROR(tok::gguf_tokenizer(formats::GgufFile(ok)),
                  "metadata 'tokenizer.ggml.model' is 'llama' (supported: gpt2");
  const std::string bad_type = write("type.gguf", [&](convert::GgufWriter& w) {
    qwen(w);
    w.add_string("qwen2.attention.layer_norm_rms_epsilon", "tiny");
  });
  LS_EXPECT_ERROR(model::gguf_model_config(formats::GgufFile(bad_type)),
                  "metadata 'qwen2.attention.layer_norm_rms_epsilon' must be a float32 or "
                  "float64, got string");
  const std::string tok = write("tok.gguf", [&](convert::GgufWriter& w) {
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", "qwen2");
    w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab", "a"});
    w.add_int32_array("tokenizer.ggml.token_type", {1, 1, 1, 1});
    w.add_string_array("tokenizer.ggml.merges", {"a b"});
  });
  LS_EXPECT_ERROR(tok::gguf_tokenizer(formats::GgufFile(tok)),
                  "'tokenizer.ggml.tokens'[3] repeats the token at id 0");
  auto gpt2 = [](convert::GgufWriter& w, const std::vector<std::string>& tokens) {
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", "qwen2");
    w.add_string_array("tokenizer.ggml.tokens", tokens);
    w.add_string_array("tokenizer.ggml.merges", {"a b"});
  };
  const std::string utf8 = write("utf8.gguf", [&](convert::GgufWriter& w) {
    gpt2(w, {"a", "b\xFF"});
  });
  LS_EXPECT_ERROR(tok::gguf_tokenizer(formats::GgufFile(utf8)),
                  "metadata 'tokenizer.ggml.tokens' or 'tokenizer.ggml.merges' holds text that is "
                  "not valid UTF-8 ([json.exception.type_error.316] invalid UTF-8 byte at index 1: "
                  "0xFF)");
  // What the spec holds is checked by Tokenizer::from_spec, with tokenizer.json's field names.
  const std::string bytes = write("bytes.gguf", [&](convert::GgufWriter& w) {
    gpt2(w, {"a", "b", "ab"});
  });
  LS_EXPECT_ERROR(tok::gguf_tokenizer(formats::GgufFile(bytes)),
                  "bytes.gguf (tokenizer.ggml.* metadata): model.vocab: no token for byte 0x00");
}

TEST(GgufModel, QuantizeErrors) {
  convert::QuantizeOptions o;
  o.model_dir = "/nonexistent/model";
  o.type = DType::F32;
  o.out = (test::scratch_dir("gguf_qerr") / "x.gguf").string();
  LS_EXPECT_ERROR(convert::quantize_to_gguf(o), "/nonexistent/model: not a model directory");
  LS_EXPECT_ERROR(model::Model::load("/nonexistent/model.gguf"),
                  "/nonexistent/model.gguf: cannot open");
}

}  // namespace
}  // namespace ls

namespace ls {
namespace {

// Repacking at load (model/repack.h) changes the layout, not the numbers: Q8_0, Q4_0, Q5_0, Q5_1
// and IQ4_NL models give the file layout's logits bit for bit, prefill (every position) and decode,
// on 1 and 2 threads; the tied embedding is repacked once and still looks its rows up right.
TEST(GgufModel, RepackedWeightsGiveTheFileLayoutsLogitsBitForBit) {
  if (!convert::gguf_can_write(DType::Q8_0))
    GTEST_SKIP() << "quantization kernels not in this build";
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q5_1, DType::IQ4_NL}) {
    SCOPED_TRACE(dtype_name(t));
    const std::string path = convert(t, std::string(dtype_name(t)));
    const auto packed = model::Model::load(path);
    model::LoadOptions plain_options;
    plain_options.repack = false;
    const auto plain = model::Model::load(path, plain_options);
    EXPECT_EQ(plain->repacked_bytes(), 0u);
    // Every matrix of the tiny shape has whole groups of 8 rows and whole blocks (or fell back
    // to F16): all of its bytes of that type, tied embedding counted once.
    std::size_t want = 0;
    const model::Weights& w = packed->weights();
    EXPECT_EQ(w.embed.data, w.lm_head.data) << "tied: one repacked copy for both";
    for (const TensorView* v : {&w.embed}) want += v->dtype == t ? v->nbytes() : 0;
    for (const model::LayerWeights& L : w.layers)
      for (const TensorView* v : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
        if (v->dtype == t) {
          EXPECT_EQ(v->interleaved, 8) << v->name;
          want += v->nbytes();
        }
      }
    EXPECT_GT(want, 0u);
    EXPECT_EQ(packed->repacked_bytes(), want);
    std::vector<std::int32_t> tokens;
    for (int i = 0; i < 20; ++i) tokens.push_back((i * 7919 + 11) % 151000);
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      engine::Session a(*packed, pool), b(*plain, pool);
      const auto la = a.feed(tokens, true);
      const auto lb = b.feed(tokens, true);
      ASSERT_EQ(la.size(), lb.size());
      EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size_bytes()), 0) << threads << " threads";
      for (std::int32_t next : {5, 151643, 9707}) {  // decode: one token per step
        const auto da = a.feed(std::span(&next, 1));
        const auto db = b.feed(std::span(&next, 1));
        EXPECT_EQ(std::memcmp(da.data(), db.data(), da.size_bytes()), 0) << "decode " << next;
      }
    }
  }
}

// With huge_pages, matrices with no interleaved layout (float and K-quant) move at load too, into
// the huge-page buffer, byte for byte: the views hold the file's bytes at a new, 2 MiB-aligned home
// (the embedding, first in the buffer), and the logits are the in-place map's bit for bit.
TEST(GgufModel, MovedWeightsKeepTheirBytesAndLogits) {
  if (!convert::gguf_can_write(DType::Q4_K))
    GTEST_SKIP() << "quantization kernels not in this build";
  for (DType t : {DType::BF16, DType::F16, DType::Q4_K, DType::Q6_K}) {
    SCOPED_TRACE(dtype_name(t));
    const std::string path = convert(t, "moved_" + std::string(dtype_name(t)));
    model::LoadOptions moved_options;
    moved_options.huge_pages = true;
    const auto moved = model::Model::load(path, moved_options);
    model::LoadOptions plain_options;
    plain_options.repack = false;
    const auto plain = model::Model::load(path, plain_options);
    const model::Weights &a = moved->weights(), &b = plain->weights();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.embed.data) % (std::uintptr_t{2} << 20), 0u);
    EXPECT_EQ(a.embed.data, a.lm_head.data) << "tied: moved once for both";
    for (std::size_t l = 0; l < a.layers.size(); ++l) {
      const model::LayerWeights &la = a.layers[l], &lb = b.layers[l];
      for (auto m : {&model::LayerWeights::wq, &model::LayerWeights::wk, &model::LayerWeights::wv,
                     &model::LayerWeights::wo, &model::LayerWeights::w_gate,
                     &model::LayerWeights::w_up, &model::LayerWeights::w_down}) {
        const TensorView &va = la.*m, &vb = lb.*m;
        ASSERT_EQ(va.nbytes(), vb.nbytes()) << vb.name;
        // The buffer places every matrix on a 64-byte boundary (GGUF aligns tensors to 32).
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(va.data) % 64, 0u) << vb.name;
        if (va.interleaved == 0) {
          EXPECT_EQ(std::memcmp(va.data, vb.data, va.nbytes()), 0) << vb.name;
        }
      }
    }
    std::vector<std::int32_t> tokens;
    for (int i = 0; i < 12; ++i) tokens.push_back((i * 7919 + 11) % 151000);
    ThreadPool pool(2);
    engine::Session sa(*moved, pool), sb(*plain, pool);
    const auto la = sa.feed(tokens, true);
    const auto lb = sb.feed(tokens, true);
    ASSERT_EQ(la.size(), lb.size());
    EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size_bytes()), 0);
    const std::int32_t next = 9707;
    const auto da = sa.feed(std::span(&next, 1));
    const auto db = sb.feed(std::span(&next, 1));
    EXPECT_EQ(std::memcmp(da.data(), db.data(), da.size_bytes()), 0) << "decode";
  }
}

}  // namespace
}  // namespace ls
