// The logit lens, leave-one-out attribution and the continuation tree over HTTP (docs/lens.md,
// docs/lab.md): POST /v1/logitscope/lens, /attribute and /tree. A request names either a
// step of a kept generation (its prompt and the tokens before the step; the step's recorded
// token, draw and chain) or tokens of its own ("tokens", "prompt" or "messages", the server's
// defaults with "settings" over them). Parsing happens on the HTTP thread; the model runs on
// the scheduler's thread between two batched steps (Scheduler::run_between_steps).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "decode/generation_config.h"
#include "server/generation_store.h"
#include "server/request.h"

namespace ls::server {

// What a lens or attribute request looks at.
struct InsideTarget {
  std::vector<std::int32_t> tokens;   // the context; the lens reads its last position
  decode::GenerationConfig config;    // the chain the lens applies per layer
  std::optional<double> draw;         // a kept step's recorded draw
  std::optional<std::int32_t> token;  // a kept step's recorded token (else the body's "token")
  std::size_t prompt_length = 0;      // of tokens, the prompt (a kept step: the rest generated)
  std::string generation;             // "" when the body gave its own tokens
  int step = -1;
};

using KeptLookup = std::function<KeptGeneration::Snapshot(const std::string& id)>;

struct LensQuery {
  InsideTarget target;
  int top = 5;
  std::vector<std::int32_t> track;
  std::vector<int> layers;  // empty: all
};
struct AttributeQuery {
  InsideTarget target;
  std::int32_t token = -1;  // -1: the model's top choice after the context
  std::optional<std::int32_t> replace_with;
  std::size_t max_prompt = 256;
};

struct TreeQuery {
  InsideTarget target;
  int k = 3, depth = 3;
  double min_prob = 0;
  std::size_t max_nodes = 500;
};

// The body's context (below), throwing ApiError naming the field: no input or two, a step
// past the kept tokens, a context longer than the server's.
InsideTarget inside_target(const nlohmann::json& body, const ServerLimits& limits,
                           const KeptLookup& kept);
// On the HTTP thread: every field checked, throwing ApiError naming the first bad one.
LensQuery parse_lens(const nlohmann::json& body, const ServerLimits& limits,
                     const KeptLookup& kept);
AttributeQuery parse_attribute(const nlohmann::json& body, const ServerLimits& limits,
                               const KeptLookup& kept);
TreeQuery parse_tree(const nlohmann::json& body, const ServerLimits& limits,
                     const KeptLookup& kept);
// On the scheduler's thread: the model runs, the response is built.
nlohmann::json run_lens(const LensQuery& query, const ServerLimits& limits, ThreadPool& pool);
nlohmann::json run_attribute(const AttributeQuery& query, const ServerLimits& limits,
                             ThreadPool& pool);
nlohmann::json run_tree(const TreeQuery& query, const ServerLimits& limits, ThreadPool& pool);

}  // namespace ls::server
