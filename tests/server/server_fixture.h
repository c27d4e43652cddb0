// The fixture of the server's request and response tests: a synthetic model (with the real
// Qwen tokenizer and template) made once per test suite in a scratch directory, and the
// ServerLimits requests are checked against. `Spec` names the model: ServerFixture<TinyModel>
// (Qwen2.5's template) or ServerFixture<Qwen3TinyModel> (a thinking template). Also the random
// damage the request parsers' robustness tests do to a valid body.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../model/test_util.h"
#include "engine/loaded_model.h"
#include "server/request.h"

namespace ls::server::test {

struct TinyModel {
  static constexpr const char* shape = "tiny";
  static constexpr const char* name = "tiny";
  static constexpr std::uint64_t seed = 3;
  static constexpr int ctx = 256;
  static constexpr int parallel = 4;
};

struct Qwen3TinyModel {
  static constexpr const char* shape = "qwen3-tiny";
  static constexpr const char* name = "qwen3";
  static constexpr std::uint64_t seed = 0;
  static constexpr int ctx = 256;
  static constexpr int parallel = 2;
};

template <typename Spec>
class ServerFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The scratch directory's name carries the process id: suites never share one.
    const auto d = ls::test::scratch_dir(std::string("server_") + Spec::name);
    convert::SynthOptions o;
    o.shape = Spec::shape;
    o.dtype = DType::BF16;
    o.seed = Spec::seed;
    o.tokenizer_from = LS_QWEN_TOKENIZER_DIR;
    o.out_dir = (d / Spec::name).string();
    convert::synthesize_model(o);
    model_ = new engine::LoadedModel(engine::LoadedModel::open(o.out_dir));
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  ServerLimits limits(int ctx = Spec::ctx, int parallel = Spec::parallel) {
    ServerLimits l;
    l.model = model_;
    l.served_name = Spec::name;
    l.ctx = ctx;
    l.parallel = parallel;
    l.defaults = server_defaults(*model_);
    l.template_mutex = &mutex_;
    return l;
  }

  static inline engine::LoadedModel* model_ = nullptr;
  std::mutex mutex_;
};

// One to three values of `body`'s tree (reached by a random path of keys and indexes) replaced
// by random ones of `values`.
inline void damage(nlohmann::ordered_json& body, std::mt19937& rng,
                   const std::vector<nlohmann::ordered_json>& values) {
  for (int e = 0, edits = 1 + static_cast<int>(rng() % 3); e < edits; ++e) {
    nlohmann::ordered_json* at = &body;
    while ((at->is_object() || at->is_array()) && !at->empty() && rng() % 3 != 0) {
      auto it = at->begin();
      std::advance(it, rng() % at->size());
      at = &*it;
    }
    *at = values[rng() % values.size()];
  }
}

}  // namespace ls::server::test
