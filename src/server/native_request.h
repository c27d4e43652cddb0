// llama-server's native completion request (POST /completion, /completions): its field names,
// its defaults (temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, penalties over the last 64
// tokens) and its `samplers` order, turned into scheduler jobs on the llama_cpp preset. Each field
// is checked; a bad one, or one that would change the output and is not supported, is a 400
// naming it. docs/server-api.md lists every field.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/request.h"

namespace ls::server {

// What the native response shows, beyond the jobs.
struct NativeOptions {
  int n_probs = 0;             // top entries per generated token (0: none)
  bool post_sampling = false;  // probabilities after the chain (else the model's softmax)
  bool return_tokens = false;  // `tokens` holds the generated ids
  bool timings_per_token = false;
  std::vector<std::string> response_fields;  // empty: all
  nlohmann::json settings;                   // generation_settings, as llama-server names them
};

struct NativeRequest {
  ParsedRequest parsed;  // one job per prompt; parsed.stream
  NativeOptions options;
};

// `written`: the body with keys in written order (a json_schema's properties keep it).
NativeRequest parse_native_request(const nlohmann::json& body, const ServerLimits& limits,
                                   const nlohmann::ordered_json* written = nullptr);

}  // namespace ls::server
