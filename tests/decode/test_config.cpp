// GenerationConfig tests: generation_config.json layering (eos as int or list), flag overrides
// and recorded sources, validation messages naming the flag or file field, order presets and
// --order, word helpers through an encode callback, and the stop-string text stream.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/error.h"
#include "decode/generation_config.h"
#include "decode/order.h"
#include "decode/text_stream.h"
#include "decode/words.h"

namespace ls::decode {
namespace {

// Qwen2.5-0.5B-Instruct's generation_config.json.
const char* kQwenJson = R"({
  "bos_token_id": 151643, "pad_token_id": 151643, "do_sample": true,
  "eos_token_id": [151645, 151643], "repetition_penalty": 1.1, "temperature": 0.7,
  "top_p": 0.8, "top_k": 20, "transformers_version": "4.37.0"})";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GenerationConfig, ReadsQwenDefaultsAndRecordsSources) {
  GenerationConfig c;
  apply_generation_json(c, nlohmann::json::parse(kQwenJson), "m/generation_config.json");
  EXPECT_EQ(c.eos_token_id, (std::vector<std::int32_t>{151645, 151643}));
  EXPECT_TRUE(c.do_sample);
  EXPECT_EQ(c.top_k, 20);
  EXPECT_DOUBLE_EQ(c.top_p, 0.8);
  EXPECT_DOUBLE_EQ(c.temperature, 0.7);
  EXPECT_EQ(c.source_of("top_k"), "generation_config.json");
  EXPECT_EQ(c.source_of("min_p"), "default");
  EXPECT_EQ(decode_mode(c), DecodeMode::sample);
  GenerationConfig single;
  apply_generation_json(single, nlohmann::json::parse(R"({"eos_token_id": 151645})"), "g.json");
  EXPECT_EQ(single.eos_token_id, (std::vector<std::int32_t>{151645}));
}

TEST(GenerationConfig, LoadsFromAFile) {
  const std::string path = ::testing::TempDir() + "/generation_config.json";
  std::ofstream(path) << kQwenJson;
  GenerationConfig c;
  load_generation_config(c, path);
  EXPECT_EQ(c.top_k, 20);
  EXPECT_NE(error_of([] {
              GenerationConfig d;
              load_generation_config(d, "/nonexistent/generation_config.json");
            }).find("/nonexistent/generation_config.json"),
            std::string::npos);
}

TEST(GenerationConfig, FlagsOverrideTheFileAndRepeatableFlagsAccumulate) {
  GenerationConfig c;
  apply_generation_json(c, nlohmann::json::parse(kQwenJson), "g.json");
  set_from_flag(c, "top_k", "5");
  set_from_flag(c, "stop_strings", "\n\n");
  set_from_flag(c, "stop_strings", "User:");
  set_from_flag(c, "logit_bias", "12=-5,13=+2");
  set_from_flag(c, "bad_words_ids", "1,2;3");
  set_from_flag(c, "early_stopping", "never");
  set_from_flag(c, "seed", "18446744073709551615");
  EXPECT_EQ(c.top_k, 5);
  EXPECT_EQ(c.source_of("top_k"), "flag");
  EXPECT_EQ(c.stop_strings, (std::vector<std::string>{"\n\n", "User:"}));
  EXPECT_DOUBLE_EQ(c.logit_bias.at(12), -5.0);
  EXPECT_DOUBLE_EQ(c.logit_bias.at(13), 2.0);
  EXPECT_EQ(c.bad_words_ids, (std::vector<std::vector<std::int32_t>>{{1, 2}, {3}}));
  EXPECT_EQ(c.early_stopping, EarlyStopping::never);
  EXPECT_EQ(*c.seed, 18446744073709551615ULL);
  const auto settings = settings_json(c);
  EXPECT_EQ(settings["top_k"]["value"], 5);
  EXPECT_EQ(settings["top_k"]["source"], "flag");
  EXPECT_EQ(settings["top_p"]["source"], "generation_config.json");
  // Every field, and the grammar (none here).
  EXPECT_EQ(settings.size(), generation_fields().size() + 1);
  EXPECT_TRUE(settings["grammar"]["value"].is_null());
}

TEST(GenerationConfig, BadValuesAreErrorsNamingTheFlagOrField) {
  GenerationConfig c;
  set_from_flag(c, "temperature", "-1");
  EXPECT_NE(error_of([&] { validate(c); }).find("--temperature"), std::string::npos);
  GenerationConfig n;
  set_from_flag(n, "top_p", "nan");
  EXPECT_NE(error_of([&] { validate(n); }).find("--top-p"), std::string::npos);
  GenerationConfig k;
  EXPECT_NE(error_of([&] { set_from_flag(k, "top_k", "ten"); }).find("--top-k"), std::string::npos);
  GenerationConfig f;
  apply_generation_json(f, nlohmann::json::parse(R"({"repetition_penalty": -1.0})"), "x/gen.json");
  const std::string msg = error_of([&] { validate(f); });
  EXPECT_NE(msg.find("x/gen.json field 'repetition_penalty'"), std::string::npos) << msg;
  EXPECT_NE(error_of([] {
              GenerationConfig g;
              apply_generation_json(g, nlohmann::json::parse(R"({"top_k": "many"})"), "g.json");
            }).find("g.json field 'top_k'"),
            std::string::npos);
  GenerationConfig b;
  b.num_beams = 2;
  b.num_return_sequences = 3;
  EXPECT_NE(error_of([&] { validate(b); }).find("num_return_sequences"), std::string::npos);
}

TEST(Order, PresetsAndReSequencing) {
  GenerationConfig c;
  c.do_sample = true;
  c.repetition_penalty = 1.1;
  c.temperature = 0.7;
  c.top_k = 20;
  c.top_p = 0.8;
  c.min_p = 0.05;
  auto names = [&] { return build_chain(c, {100, true, 1}).names(); };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(), (V{"repetition_penalty", "temperature", "top_k", "top_p", "min_p"}));
  c.order_preset = OrderPreset::vllm;
  EXPECT_EQ(names(), (V{"repetition_penalty", "temperature", "min_p", "top_k", "top_p"}));
  c.order_preset = OrderPreset::llama_cpp;
  EXPECT_EQ(names(), (V{"repetition_penalty", "top_k", "top_p", "min_p", "temperature"}));
  EXPECT_NE(build_chain(c, {100, true, 1}).describe().find("exactly k"), std::string::npos);
  c.order_preset = OrderPreset::hf;
  set_from_flag(c, "order", "top-k,top_p,temperature");
  EXPECT_EQ(names(), (V{"repetition_penalty", "top_k", "top_p", "temperature", "min_p"}));
  EXPECT_NE(build_chain(c, {100, true, 1}).describe().find("keep ties"), std::string::npos);
  set_from_flag(c, "order", "top_k,bogus");
  const std::string msg = error_of([&] { validate(c); });
  EXPECT_NE(msg.find("--order"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bogus"), std::string::npos) << msg;
  // Greedy: transformers runs no warpers.
  c.order.clear();
  EXPECT_EQ(build_chain(c, {100, false, 1}).names(), (V{"repetition_penalty"}));
}

TEST(Words, BanAndBiasCoverTheWordWithAndWithoutLeadingSpace) {
  EncodeFn encode = [](std::string_view text) -> std::vector<std::int32_t> {
    if (text == "北京") return {10, 11};
    if (text == " 北京") return {12};
    if (text == "x") return {5};
    if (text == " x") return {5};
    return {};
  };
  GenerationConfig c;
  add_banned_word(c, "北京", encode);
  EXPECT_EQ(c.bad_words_ids, (std::vector<std::vector<std::int32_t>>{{10, 11}, {12}}));
  add_word_bias(c, "北京=-5", encode);
  ASSERT_EQ(c.sequence_bias.size(), 2u);
  EXPECT_EQ(c.sequence_bias[1].tokens, (std::vector<std::int32_t>{12}));
  EXPECT_DOUBLE_EQ(c.sequence_bias[1].bias, -5.0);
  EXPECT_EQ(word_token_sequences("x", encode).size(), 1u);  // identical encodings merge
  EXPECT_NE(error_of([&] { add_word_bias(c, "北京", encode); }).find("--logit-bias-word"),
            std::string::npos);
}

TEST(TextStream, HoldsBackStopPrefixesAndPartialCharacters) {
  TextStream s({"</s>"});
  EXPECT_EQ(s.push("ab<").text, "ab");
  EXPECT_EQ(s.push("/x").text, "</x");
  EXPECT_EQ(s.push("\xe5\x8c").text, "");
  EXPECT_EQ(s.push("\x97<").text, "\xe5\x8c\x97");
  const auto u = s.push("/s>tail");
  EXPECT_TRUE(u.stopped);
  EXPECT_EQ(u.text, "");
  EXPECT_EQ(s.emitted(), "ab</x\xe5\x8c\x97");
  EXPECT_EQ(incomplete_utf8_tail("a\xf0\x9f\x98"), 3u);
  EXPECT_EQ(incomplete_utf8_tail("a\xf0\x9f\x98\x80"), 0u);
}

}  // namespace
}  // namespace ls::decode
