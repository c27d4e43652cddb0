// Invariants of the mixture-of-experts forward pass (qwen3_moe, qwen2_moe) on tiny synthetic
// models: a sequence's logits are the same bits whether fed whole, in chunks or a token at a
// time, with any thread count, alone or in a ragged batch beside others (experts run over the
// rows routed to them, so a crowd changes which rows share a product, never a row's result);
// repacked GGUF expert slices give the plain ones' bits; the router's choice as captured; and
// config errors that name the field. The logits themselves are checked against an independent
// numpy reference in tests/reference/test_moe_ref.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "convert/gguf_quantize.h"
#include "convert/synth.h"
#include "core/error.h"
#include "forward_util.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/model.h"
#include "test_util.h"

namespace {

const std::string& moe_model(const std::string& shape) {
  static std::map<std::string, std::string> dirs;
  auto it = dirs.find(shape);
  if (it != dirs.end()) return it->second;
  const auto d = ls::test::scratch_dir("moe_" + shape);
  ls::convert::SynthOptions o;
  o.shape = shape;
  o.dtype = ls::DType::BF16;
  o.seed = 11;
  o.out_dir = d.string();
  ls::convert::synthesize_model(o);
  return dirs.emplace(shape, d.string()).first->second;
}

const std::vector<std::int32_t> kTokens = {151643, 9707, 11, 1879,   0, 151935,
                                           42,     42,   42, 100000, 7};

std::vector<float> run(const ls::model::Model& m, int threads, std::int64_t chunk,
                       bool incremental) {
  return ls::test::feed_logits(m, kTokens, threads, chunk, incremental);
}

using ls::test::same_bits;

class Moe : public ::testing::TestWithParam<const char*> {};

TEST_P(Moe, ChunkingDecodeAndThreadsDoNotChangeAnyBit) {
  auto m = ls::model::Model::load(moe_model(GetParam()));
  ASSERT_GT(m->config().moe.num_experts, 0);
  const auto full = run(*m, 1, 64, false);
  EXPECT_EQ(full.size(), kTokens.size() * 151936);
  EXPECT_TRUE(same_bits(full, run(*m, 1, 64, true))) << "a token at a time";
  EXPECT_TRUE(same_bits(full, run(*m, 1, 4, false))) << "chunks of 4";
  EXPECT_TRUE(same_bits(full, run(*m, 2, 64, false))) << "2 threads";
  EXPECT_TRUE(same_bits(full, run(*m, 3, 5, true))) << "3 threads, decode";
}

// Three sequences with different cached lengths and new-token counts in one call: each gets the
// logits and the router choices it gets alone.
TEST_P(Moe, RaggedBatchEqualsSingleSequencesBitForBit) {
  auto m = ls::model::Model::load(moe_model(GetParam()));
  const auto& c = m->config();
  const auto V = static_cast<std::size_t>(c.vocab_size);
  const auto R = static_cast<std::size_t>(c.num_hidden_layers * c.moe.experts_per_token);
  const std::vector<std::vector<std::int32_t>> prefix = {{1, 2, 3, 4, 5}, {}, {9, 9}};
  const std::vector<std::vector<std::int32_t>> fresh = {{6}, {7, 8, 10, 11, 12, 13, 14}, {15, 16}};
  const std::vector<bool> all = {false, true, false};
  for (int threads : {1, 2}) {
    ls::ThreadPool pool(threads);
    ls::model::KvBlockPool blocks(c, ls::DType::F32, 3);
    std::vector<float> scratch(V);
    const auto feed_prefix = [&](ls::model::KVCache& cache, std::size_t i,
                                 ls::model::Activations& acts) {
      if (prefix[i].empty()) return;
      const ls::model::SequenceInput in{&cache, prefix[i], false, scratch};
      ls::model::forward(m->architecture(), c, m->weights(), {&in, 1}, acts, pool);
    };
    std::vector<std::vector<float>> alone(3);
    std::vector<std::vector<ls::model::ExpertRoute>> alone_routes(
        3, std::vector<ls::model::ExpertRoute>(R));
    for (std::size_t i = 0; i < 3; ++i) {
      ls::model::KVCache cache(blocks);
      ls::model::Activations acts(c, 64);
      feed_prefix(cache, i, acts);
      alone[i].resize((all[i] ? fresh[i].size() : 1) * V);
      ls::model::SequenceInput in{&cache, fresh[i], all[i], alone[i]};
      in.expert_routes = alone_routes[i];
      ls::model::forward(m->architecture(), c, m->weights(), {&in, 1}, acts, pool);
    }
    std::vector<ls::model::KVCache> caches;
    for (int i = 0; i < 3; ++i) caches.emplace_back(blocks);
    ls::model::Activations acts(c, 4);  // chunks of 4 rows: sequences split across chunks
    for (std::size_t i = 0; i < 3; ++i) feed_prefix(caches[i], i, acts);
    std::vector<std::vector<float>> out(3);
    std::vector<std::vector<ls::model::ExpertRoute>> routes(3,
                                                            std::vector<ls::model::ExpertRoute>(R));
    std::vector<ls::model::SequenceInput> batch;
    for (std::size_t i = 0; i < 3; ++i) {
      out[i].resize((all[i] ? fresh[i].size() : 1) * V);
      batch.push_back({&caches[i], fresh[i], all[i], out[i]});
      batch.back().expert_routes = routes[i];
    }
    ls::model::forward(m->architecture(), c, m->weights(), batch, acts, pool);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(same_bits(alone[i], out[i])) << "sequence " << i << ", threads " << threads;
      for (std::size_t r = 0; r < R; ++r) {
        EXPECT_EQ(routes[i][r].expert, alone_routes[i][r].expert) << "sequence " << i;
        EXPECT_EQ(routes[i][r].weight, alone_routes[i][r].weight) << "sequence " << i;
      }
    }
  }
}

// Each layer's captured choice: experts_per_token distinct experts, best first, weights in
// (0, 1] that sum to 1 when norm_topk_prob (qwen3-moe-tiny) and to less otherwise.
TEST_P(Moe, RouterChoiceIsDistinctSortedAndNormalisedAsConfigured) {
  auto m = ls::model::Model::load(moe_model(GetParam()));
  const auto& c = m->config();
  const auto K = static_cast<std::size_t>(c.moe.experts_per_token);
  ls::ThreadPool pool(1);
  ls::model::KvBlockPool blocks(c, ls::DType::F32, 16);
  ls::model::KVCache cache(blocks);
  ls::model::Activations acts(c, 16);
  std::vector<float> logits(static_cast<std::size_t>(c.vocab_size));
  std::vector<ls::model::ExpertRoute> routes(static_cast<std::size_t>(c.num_hidden_layers) * K);
  ls::model::SequenceInput in{&cache, kTokens, false, logits};
  in.expert_routes = routes;
  ls::model::forward(m->architecture(), c, m->weights(), {&in, 1}, acts, pool);
  for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) {
    std::set<int> seen;
    float sum = 0;
    for (std::size_t j = 0; j < K; ++j) {
      const ls::model::ExpertRoute& r = routes[static_cast<std::size_t>(l) * K + j];
      EXPECT_GE(r.expert, 0);
      EXPECT_LT(r.expert, c.moe.num_experts);
      EXPECT_GT(r.weight, 0.0f);
      if (j > 0) {
        EXPECT_LE(r.weight, routes[static_cast<std::size_t>(l) * K + j - 1].weight);
      }
      seen.insert(r.expert);
      sum += r.weight;
    }
    EXPECT_EQ(seen.size(), K) << "layer " << l;
    if (c.moe.norm_topk_prob) {
      EXPECT_NEAR(sum, 1.0f, 1e-6f);
    } else {
      EXPECT_LT(sum, 1.0f);
    }
  }
}

// A Q8_0 GGUF: expert matrices are slices of one stacked tensor, interleaved by 8 rows at load
// (repack) or read in place: the same bits either way.
TEST_P(Moe, RepackedExpertSlicesGiveThePlainBits) {
  if (!ls::convert::gguf_can_write(ls::DType::Q8_0)) GTEST_SKIP() << "no quantization kernels";
  const auto d = ls::test::scratch_dir(std::string("moe_q8_") + GetParam());
  ls::convert::QuantizeOptions q;
  q.model_dir = moe_model(GetParam());
  q.type = ls::DType::Q8_0;
  q.out = (d / "m.gguf").string();
  ls::convert::quantize_to_gguf(q);
  ls::model::LoadOptions plain;
  plain.repack = false;
  auto a = ls::model::Model::load(q.out);
  auto b = ls::model::Model::load(q.out, plain);
  EXPECT_GT(a->repacked_bytes(), 0u);
  EXPECT_EQ(b->repacked_bytes(), 0u);
  EXPECT_TRUE(same_bits(run(*a, 2, 64, false), run(*b, 2, 64, false)));
  EXPECT_TRUE(same_bits(run(*a, 1, 64, true), run(*b, 2, 3, true)));
}

// quantize converts rows on several threads: the file is the same bytes for any count.
TEST_P(Moe, QuantizeWritesTheSameBytesOnAnyThreadCount) {
  if (!ls::convert::gguf_can_write(ls::DType::Q4_K)) GTEST_SKIP() << "no quantization kernels";
  const auto d = ls::test::scratch_dir(std::string("moe_threads_") + GetParam());
  std::string bytes[2];
  for (int threads : {1, 2}) {
    ls::convert::QuantizeOptions q;
    q.model_dir = moe_model(GetParam());
    q.type = ls::DType::Q4_K;
    q.mix = ls::convert::QuantMix::Q4_K_M;
    q.threads = threads;
    q.out = (d / ("m" + std::to_string(threads) + ".gguf")).string();
    ls::convert::quantize_to_gguf(q);
    bytes[threads - 1] = ls::test::read_file(q.out);
  }
  EXPECT_GT(bytes[0].size(), 1000000u);
  EXPECT_TRUE(bytes[0] == bytes[1]);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Moe, ::testing::Values("qwen3-moe-tiny", "qwen2-moe-tiny"));

nlohmann::json moe_config(const char* model_type) {
  return {{"model_type", model_type},
          {"hidden_size", 64},
          {"intermediate_size", 128},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 16},
          {"vocab_size", 100},
          {"max_position_embeddings", 128},
          {"rms_norm_eps", 1e-6},
          {"num_experts", 8},
          {"num_experts_per_tok", 2},
          {"moe_intermediate_size", 32},
          {"shared_expert_intermediate_size", 64}};
}

std::string error_of(const nlohmann::json& j) {
  try {
    ls::model::parse_model_config(j, "config.json");
  } catch (const ls::Error& e) {
    return e.what();
  }
  return "";
}

TEST(MoeConfig, ReadsTheLayoutAndNamesBadFields) {
  auto j = moe_config("qwen3_moe");
  j["decoder_sparse_step"] = 2;
  j["mlp_only_layers"] = {1};
  j["num_hidden_layers"] = 4;
  const ls::model::ModelConfig c = ls::model::parse_model_config(j, "config.json");
  EXPECT_FALSE(c.sparse_layer(0));  // off the step-2 grid
  EXPECT_FALSE(c.sparse_layer(1));  // in mlp_only_layers
  EXPECT_FALSE(c.sparse_layer(2));
  EXPECT_TRUE(c.sparse_layer(3));
  EXPECT_FALSE(c.moe.norm_topk_prob) << "transformers' default";
  EXPECT_EQ(c.moe.shared_intermediate, 0) << "qwen3_moe has no shared expert";
  EXPECT_EQ(ls::model::parse_model_config(moe_config("qwen2_moe"), "c").moe.shared_intermediate,
            64);

  const auto expect_error = [](nlohmann::json bad, const char* needle) {
    const std::string e = error_of(bad);
    EXPECT_NE(e.find(needle), std::string::npos) << "expected '" << needle << "' in: " << e;
  };
  auto j1 = moe_config("qwen3_moe");
  j1["num_experts_per_tok"] = 9;
  expect_error(j1, "num_experts_per_tok");
  auto j2 = moe_config("qwen3_moe");
  j2.erase("head_dim");
  expect_error(j2, "head_dim");
  auto j3 = moe_config("qwen3_moe");
  j3["mlp_only_layers"] = {5};
  expect_error(j3, "mlp_only_layers[0]");
  auto j4 = moe_config("qwen2_moe");
  j4.erase("shared_expert_intermediate_size");
  expect_error(j4, "shared_expert_intermediate_size");
  auto j5 = moe_config("qwen3_moe");
  j5.erase("moe_intermediate_size");
  expect_error(j5, "moe_intermediate_size");
  auto j6 = moe_config("qwen3_moe");
  j6["norm_topk_prob"] = "yes";
  expect_error(j6, "norm_topk_prob");
  auto j7 = moe_config("qwen3_moe");
  j7["num_experts"] = 100000;
  expect_error(j7, "num_experts");
}

}  // namespace
