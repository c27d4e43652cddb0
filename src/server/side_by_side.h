// Two models on one recorded path (issue 49 item 4): `serve --model-b B` loads a second model
// with the same vocabulary, and POST /v1/logitscope/side_by_side runs it over a kept
// generation's prompt and tokens (one forward pass in chunks, on the scheduler's thread) to
// give, at every kept step, KL(A||B) of the raw distributions, each model's top-1, whether they
// flip, and B's probability and rank of the recorded token; with "step", both candidate lists.
#pragma once

#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "server/generation_store.h"
#include "server/request.h"

namespace ls::server {

struct SideBySideQuery {
  KeptGeneration::Snapshot generation;
  int focus = -1;  // the step whose candidate lists to return (-1: none)
  int top = 10;
};

// Throws ApiError naming the field (or a 404 when the server has no second model).
SideBySideQuery parse_side_by_side(const nlohmann::json& body, const ServerLimits& limits,
                                   const KeptGeneration::Snapshot& generation);
// On the scheduler's thread: model B's forward pass and the comparison.
nlohmann::json run_side_by_side(const SideBySideQuery& query, const ServerLimits& limits,
                                ThreadPool& pool);

}  // namespace ls::server
