// Invariants of the forward pass on a tiny synthetic model: incremental decoding with the KV
// cache equals a full recompute bit for bit; so do different chunk sizes and thread counts;
// and weights are checked by name and shape. (The logits themselves are checked against the
// independent numpy reference in tests/reference.)
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "model/model.h"
#include "model/synth.h"
#include "test_util.h"

namespace {

const std::string& tiny_model() {
  static const std::string dir = [] {
    const auto d = ls::test::scratch_dir("fwd_tiny");
    ls::SynthOptions o;
    o.shape = "tiny";
    o.dtype = ls::DType::BF16;
    o.seed = 5;
    o.out_dir = d.string();
    ls::synthesize_model(o);
    return d.string();
  }();
  return dir;
}

const std::vector<std::int32_t> kTokens = {151643, 9707, 11, 1879,   0, 151935,
                                           42,     42,   42, 100000, 7, 8};

std::vector<float> run(const ls::Model& m, int threads, std::int64_t chunk, bool incremental) {
  ls::ThreadPool pool(threads);
  ls::Session s(m, pool, chunk);
  std::vector<float> out;
  if (incremental) {
    for (auto t : kTokens) {
      auto l = s.feed(std::span(&t, 1));
      out.insert(out.end(), l.begin(), l.end());
    }
  } else {
    auto l = s.feed(kTokens, true);
    out.assign(l.begin(), l.end());
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

TEST(Forward, IncrementalEqualsFullRecomputeBitForBit) {
  auto m = ls::Model::load(tiny_model());
  const auto full = run(*m, 1, 64, false);
  EXPECT_EQ(full.size(), kTokens.size() * 151936);
  EXPECT_TRUE(same_bits(full, run(*m, 1, 64, true)));
  EXPECT_TRUE(same_bits(full, run(*m, 1, 5, false)));  // prompt split into chunks of 5
}

TEST(Forward, ThreadCountDoesNotChangeAnyBit) {
  auto m = ls::Model::load(tiny_model());
  const auto one = run(*m, 1, 64, false);
  EXPECT_TRUE(same_bits(one, run(*m, 2, 64, false)));
  EXPECT_TRUE(same_bits(one, run(*m, 3, 7, true)));
}

TEST(Forward, ResetStartsAFreshSequence) {
  auto m = ls::Model::load(tiny_model());
  ls::ThreadPool pool(1);
  ls::Session s(*m, pool);
  const std::vector<std::int32_t> a = {1, 2, 3};
  auto first = std::vector<float>(s.feed(a).begin(), s.feed(a).end());  // fed twice: length 6
  EXPECT_EQ(s.length(), 6);
  s.reset();
  auto again = s.feed(a);
  s.reset();
  auto l1 = std::vector<float>(s.feed(a).begin(), s.feed(a).end());
  (void)again;
  EXPECT_EQ(s.length(), 6);
  EXPECT_TRUE(same_bits(first, l1));
}

TEST(Forward, RejectsBadInput) {
  auto m = ls::Model::load(tiny_model());
  ls::ThreadPool pool(1);
  ls::Session s(*m, pool);
  const std::vector<std::int32_t> bad = {5, 151936};
  LS_EXPECT_ERROR(s.feed(bad), "token id 151936 is out of range: the model's vocab_size is 151936");
  LS_EXPECT_ERROR(s.feed({}), "no tokens");
}

TEST(Forward, ContextLimitIsAClearError) {
  const auto d = ls::test::scratch_dir("fwd_ctx");
  for (const char* f : {"model.safetensors", "generation_config.json"})
    std::filesystem::copy_file(std::filesystem::path(tiny_model()) / f, d / f);
  auto cfg = nlohmann::json::parse(
      ls::test::read_file(std::filesystem::path(tiny_model()) / "config.json"));
  cfg["max_position_embeddings"] = 4;
  ls::test::write_file(d / "config.json", cfg.dump());
  auto m = ls::Model::load(d.string());
  ls::ThreadPool pool(1);
  ls::Session s(*m, pool);
  const std::vector<std::int32_t> three = {1, 2, 3};
  s.feed(three);
  LS_EXPECT_ERROR(s.feed(three),
                  "context of 6 tokens exceeds the model's max_position_embeddings 4");
}

TEST(Weights, MissingOrMisshapenTensorsAreNamed) {
  const auto d = ls::test::scratch_dir("fwd_bad");
  ls::SynthOptions o;
  o.shape = "tiny";
  o.dtype = ls::DType::F32;
  o.out_dir = d.string();
  o.layers = 1;
  ls::synthesize_model(o);
  auto cfg = nlohmann::json::parse(ls::test::read_file(d / "config.json"));
  cfg["num_hidden_layers"] = 2;  // the file only has layer 0
  ls::test::write_file(d / "config.json", cfg.dump());
  LS_EXPECT_ERROR(ls::Model::load(d.string()),
                  "missing tensor 'model.layers.1.input_layernorm.weight'");
  cfg["num_hidden_layers"] = 1;
  cfg["intermediate_size"] = 64;
  ls::test::write_file(d / "config.json", cfg.dump());
  LS_EXPECT_ERROR(
      ls::Model::load(d.string()),
      "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [176, 64], expected [64, 64]");
  cfg["intermediate_size"] = 176;
  cfg["tie_word_embeddings"] = false;
  ls::test::write_file(d / "config.json", cfg.dump());
  LS_EXPECT_ERROR(ls::Model::load(d.string()),
                  "tie_word_embeddings is false but tensor 'lm_head.weight' is missing");
}

}  // namespace
