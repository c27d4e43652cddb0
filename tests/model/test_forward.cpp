// Invariants of the forward pass on a tiny synthetic model: incremental decoding with the KV
// cache equals a full recompute bit for bit; so do different chunk sizes and thread counts;
// and weights are checked by name and shape. (The logits themselves are checked against the
// independent numpy reference in tests/reference.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "convert/synth.h"
#include "core/error.h"
#include "engine/session.h"
#include "forward_util.h"
#include "model/model.h"
#include "test_util.h"

namespace {

const std::string& tiny_model() {
  static const std::string dir = ls::test::synth_tiny("fwd_tiny", ls::DType::BF16, 5);
  return dir;
}

const std::vector<std::int32_t> kTokens = {151643, 9707, 11, 1879,   0, 151935,
                                           42,     42,   42, 100000, 7, 8};

std::vector<float> run(const ls::model::Model& m, int threads, std::int64_t chunk,
                       bool incremental) {
  return ls::test::feed_logits(m, kTokens, threads, chunk, incremental);
}

using ls::test::same_bits;

TEST(Forward, IncrementalEqualsFullRecomputeBitForBit) {
  auto m = ls::model::Model::load(tiny_model());
  const auto full = run(*m, 1, 64, false);
  EXPECT_EQ(full.size(), kTokens.size() * 151936);
  EXPECT_TRUE(same_bits(full, run(*m, 1, 64, true)));
  EXPECT_TRUE(same_bits(full, run(*m, 1, 5, false)));  // prompt split into chunks of 5
}

TEST(Forward, ThreadCountDoesNotChangeAnyBit) {
  auto m = ls::model::Model::load(tiny_model());
  const auto one = run(*m, 1, 64, false);
  EXPECT_TRUE(same_bits(one, run(*m, 2, 64, false)));
  EXPECT_TRUE(same_bits(one, run(*m, 3, 7, true)));
}

TEST(Forward, ResetStartsAFreshSequence) {
  auto m = ls::model::Model::load(tiny_model());
  ls::ThreadPool pool(1);
  ls::engine::Session s(*m, pool);
  const std::vector<std::int32_t> a = {1, 2, 3};
  const auto fresh = s.feed(a);
  const std::vector<float> first(fresh.begin(), fresh.end());
  const auto longer = s.feed(a);  // the same tokens again, now at positions 3..5
  EXPECT_EQ(s.length(), 6);
  EXPECT_FALSE(same_bits(first, std::vector<float>(longer.begin(), longer.end())));
  s.reset();
  EXPECT_EQ(s.length(), 0);
  const auto again = s.feed(a);
  EXPECT_TRUE(same_bits(first, std::vector<float>(again.begin(), again.end())));
}

// A ragged batch (three sequences with different cached lengths, new-token counts and
// all_positions settings, split across chunks) gives each sequence exactly the logits it gets
// alone: what continuous batching in a server relies on.
TEST(Forward, RaggedBatchEqualsSingleSequencesBitForBit) {
  auto m = ls::model::Model::load(tiny_model());
  const auto& c = m->config();
  const auto V = static_cast<std::size_t>(c.vocab_size);
  const std::vector<std::vector<std::int32_t>> prefix = {{1, 2, 3, 4, 5}, {}, {9, 9}};
  const std::vector<std::vector<std::int32_t>> fresh = {{6}, {7, 8, 10, 11, 12, 13, 14}, {15, 16}};
  const std::vector<bool> all = {false, true, false};
  for (int threads : {1, 2}) {
    ls::ThreadPool pool(threads);
    // Alone: one Session per sequence.
    std::vector<std::vector<float>> alone;
    for (std::size_t i = 0; i < 3; ++i) {
      ls::engine::Session s(*m, pool);
      if (!prefix[i].empty()) s.feed(prefix[i]);
      const auto l = s.feed(fresh[i], all[i]);
      alone.emplace_back(l.begin(), l.end());
    }
    // Together: prefixes fed alone, then one batched call with a chunk of 4 tokens.
    ls::model::KvBlockPool blocks(c, ls::DType::F32, 3);  // 3 positions per block: many boundaries
    std::vector<ls::model::KVCache> caches;
    for (int i = 0; i < 3; ++i) caches.emplace_back(blocks);
    ls::model::Activations acts(c, 4);
    std::vector<float> scratch(V);
    for (std::size_t i = 0; i < 3; ++i)
      if (!prefix[i].empty()) {
        const ls::model::SequenceInput in{&caches[i], prefix[i], false, scratch};
        ls::model::forward(m->architecture(), c, m->weights(), {&in, 1}, acts, pool);
      }
    std::vector<std::vector<float>> out(3);
    std::vector<ls::model::SequenceInput> batch;
    for (std::size_t i = 0; i < 3; ++i) {
      out[i].resize((all[i] ? fresh[i].size() : 1) * V);
      batch.push_back({&caches[i], fresh[i], all[i], out[i]});
    }
    ls::model::forward(m->architecture(), c, m->weights(), batch, acts, pool);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(same_bits(alone[i], out[i])) << "sequence " << i << ", threads " << threads;
      EXPECT_EQ(caches[i].length, static_cast<std::int64_t>(prefix[i].size() + fresh[i].size()));
    }
  }
}

// F16 and BF16 KV caches: half the memory (2 x layers x kv_dim x positions x 2 bytes), logits
// close to the F32 cache's (the keys and values are rounded once when stored).
TEST(Forward, HalfPrecisionKvCache) {
  auto m = ls::model::Model::load(tiny_model());
  const auto& c = m->config();
  ls::ThreadPool pool(1);
  ls::engine::Session f32(*m, pool);
  const auto want = f32.feed(kTokens, true);
  for (auto type : {ls::DType::F16, ls::DType::BF16}) {
    ls::engine::Session s(*m, pool, 64, type);
    const auto got = s.feed(kTokens, true);
    ASSERT_EQ(got.size(), want.size());
    double max_diff = 0, max_abs = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::abs(got[i] - want[i])));
      max_abs = std::max(max_abs, static_cast<double>(std::abs(want[i])));
    }
    EXPECT_GT(max_diff, 0.0) << "the cache type made no difference: was it used?";
    EXPECT_LT(max_diff, (type == ls::DType::F16 ? 2e-3 : 2e-2) * max_abs) << dtype_name(type);
    // Whole blocks of 16 positions: 12 tokens take one block.
    const auto positions = static_cast<std::size_t>(s.cache().blocks()) * 16;
    EXPECT_EQ(positions, 16u);
    EXPECT_EQ(s.cache().bytes(), 2 * static_cast<std::size_t>(c.num_hidden_layers) *
                                     static_cast<std::size_t>(c.kv_dim()) * positions * 2);
    EXPECT_EQ(f32.cache().bytes(), 2 * s.cache().bytes());
  }
  EXPECT_THROW(ls::engine::Session(*m, pool, 64, ls::DType::Q8_0), ls::Error);
}

TEST(Forward, RejectsBadInput) {
  auto m = ls::model::Model::load(tiny_model());
  ls::ThreadPool pool(1);
  ls::engine::Session s(*m, pool);
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
  auto m = ls::model::Model::load(d.string());
  ls::ThreadPool pool(1);
  ls::engine::Session s(*m, pool);
  const std::vector<std::int32_t> three = {1, 2, 3};
  s.feed(three);
  LS_EXPECT_ERROR(s.feed(three),
                  "context of 6 tokens exceeds the model's max_position_embeddings 4");
}

TEST(Weights, MissingOrMisshapenTensorsAreNamed) {
  const auto d = ls::test::scratch_dir("fwd_bad");
  ls::convert::SynthOptions o;
  o.shape = "tiny";
  o.dtype = ls::DType::F32;
  o.out_dir = d.string();
  o.layers = 1;
  ls::convert::synthesize_model(o);
  auto cfg = nlohmann::json::parse(ls::test::read_file(d / "config.json"));
  cfg["num_hidden_layers"] = 2;  // the file only has layer 0
  ls::test::write_file(d / "config.json", cfg.dump());
  LS_EXPECT_ERROR(ls::model::Model::load(d.string()),
                  "missing tensor 'model.layers.1.input_layernorm.weight'");
  cfg["num_hidden_layers"] = 1;
  cfg["intermediate_size"] = 64;
  ls::test::write_file(d / "config.json", cfg.dump());
  LS_EXPECT_ERROR(
      ls::model::Model::load(d.string()),
      "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [176, 64], expected [64, 64]");
  cfg["intermediate_size"] = 176;
  cfg["tie_word_embeddings"] = false;
  ls::test::write_file(d / "config.json", cfg.dump());
  LS_EXPECT_ERROR(ls::model::Model::load(d.string()),
                  "tie_word_embeddings is false but tensor 'lm_head.weight' is missing");
}

}  // namespace
