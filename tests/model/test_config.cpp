// config.json validation: every required field, wrong types, impossible shapes and
// unsupported features are errors naming the field.
#include <gtest/gtest.h>

#include <cmath>

#include "convert/synth.h"
#include "core/error.h"
#include "model/config.h"
#include "test_util.h"

namespace {

nlohmann::json base() {
  return nlohmann::json(ls::convert::synth_config("qwen2.5-0.5b"));
}

TEST(Config, ParsesTheRealShape) {
  const auto c = ls::model::parse_model_config(base(), "config.json");
  EXPECT_EQ(c.hidden_size, 896);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.kv_dim(), 128);
  EXPECT_EQ(c.vocab_size, 151936);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_TRUE(c.tie_word_embeddings);
}

TEST(Config, Qwen3StatesItsHeadDim) {
  const auto c = ls::model::parse_model_config(
      nlohmann::json(ls::convert::synth_config("qwen3-0.6b")), "c.json");
  EXPECT_EQ(c.model_type, "qwen3");
  EXPECT_EQ(c.head_dim, 128);  // not 1024 / 16
  EXPECT_EQ(c.q_dim(), 2048);
  EXPECT_EQ(c.kv_dim(), 1024);
  EXPECT_EQ(c.rope.type, "default");
  EXPECT_EQ(c.rope.inv_freq.size(), 64u);
}

TEST(Config, YarnKeepsHighFrequenciesAndScalesLowOnes) {
  auto j = base();  // head_dim 64, theta 1e6
  j["rope_scaling"] = {
      {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  const auto plain = ls::model::parse_model_config(base(), "c.json");
  const auto yarn = ls::model::parse_model_config(j, "c.json");
  EXPECT_EQ(yarn.rope.type, "yarn");
  EXPECT_DOUBLE_EQ(yarn.rope.attention_factor, 0.1 * std::log(4.0) + 1.0);
  // Pair 0 turns far more than beta_fast times over the original context: unchanged; the last
  // pair turns less than beta_slow times: interpolated (divided by the factor).
  EXPECT_DOUBLE_EQ(yarn.rope.inv_freq.front(), plain.rope.inv_freq.front());
  EXPECT_DOUBLE_EQ(yarn.rope.inv_freq.back(), plain.rope.inv_freq.back() / 4.0);
  j["rope_scaling"]["type"] = "default";  // the legacy key wins, as transformers copies it over
  EXPECT_EQ(ls::model::parse_model_config(j, "c.json").rope.type, "default");
}

TEST(Config, RejectsEachBadField) {
  for (const char* key :
       {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "vocab_size", "rms_norm_eps", "max_position_embeddings", "model_type"}) {
    auto j = base();
    j.erase(key);
    LS_EXPECT_ERROR(ls::model::parse_model_config(j, "dir/config.json"),
                    std::string("dir/config.json: missing required field '") + key + "'");
  }
  auto j = base();
  j["hidden_size"] = "896";
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"),
                  "field 'hidden_size' must be an integer");
  j = base();
  j["num_hidden_layers"] = 0;
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"),
                  "'num_hidden_layers' must be positive");
  j = base();
  j["num_attention_heads"] = 13;
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"),
                  "not divisible by num_attention_heads");
  j = base();
  j["num_key_value_heads"] = 3;
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"),
                  "not a multiple of num_key_value_heads");
  j = base();
  j["rms_norm_eps"] = -1;
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"),
                  "'rms_norm_eps' must be a positive number");
  j = base();
  j["model_type"] = "llama";
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"),
                  "model_type 'llama' is not supported");
  j = base();
  j["use_sliding_window"] = true;
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"), "use_sliding_window");
  // Found by fuzz/fuzz_gguf.cpp (qwen2.attention.key_length 2^62): the rope table of head_dim / 2
  // entries was a std::length_error; 2^31 would have filled 8 GiB before any weight was read.
  j = base();
  j["head_dim"] = std::int64_t{1} << 62;
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"),
                  "head_dim 4611686018427387904 is larger");
  j = base();
  j["hidden_size"] = std::int64_t{1} << 40;
  j["num_attention_heads"] = std::int64_t{1} << 24;
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"),
                  "num_attention_heads 16777216 is more than");
  j = base();
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"),
                  "rope_scaling type \"linear\" is not supported");
  j = base();
  j["rope_scaling"] = {{"rope_type", "yarn"}};
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"),
                  "rope_scaling.factor must be a number >= 1");
  j = base();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"beta_fast", "x"}};
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"), "rope_scaling.beta_fast");
  j = base();
  j["model_type"] = "qwen3";
  j["attention_bias"] = true;
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"), "attention_bias");
  j = base();
  j["hidden_act"] = "gelu";
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"), "hidden_act");
  j = base();
  j["tie_word_embeddings"] = "yes";
  LS_EXPECT_ERROR(ls::model::parse_model_config(j, "c.json"), "tie_word_embeddings");
  LS_EXPECT_ERROR(ls::model::parse_model_config(nlohmann::json::array(), "c.json"),
                  "expected a JSON object");

  const auto dir = ls::test::scratch_dir("cfg");
  ls::test::write_file(dir / "config.json", "{\"hidden_size\": ");
  LS_EXPECT_ERROR(ls::model::load_model_config((dir / "config.json").string()),
                  "config.json: invalid JSON");
}

}  // namespace
