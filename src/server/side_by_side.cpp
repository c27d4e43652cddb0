// Two models on one recorded path (see side_by_side.h). Model A's rows are the kept raw logits
// (what the generation saw); model B's come from one forward pass over the same tokens: the
// prompt, then the recorded tokens, with every position's logits in chunks of 32.
#include "server/side_by_side.h"

#include <fmt/format.h>

#include <cmath>

#include "decode/distribution.h"
#include "engine/session.h"
#include "inspect/compare.h"
#include "model/model.h"

namespace ls::server {

using nlohmann::json;

SideBySideQuery parse_side_by_side(const json& body, const ServerLimits& limits,
                                   const KeptGeneration::Snapshot& g) {
  if (limits.model_b == nullptr)
    throw ApiError(404, "this server has no second model: start it with serve --model-b PATH", "",
                   "not_found");
  SideBySideQuery q;
  q.generation = g;
  const auto kept = static_cast<std::int64_t>(g.rows.size());
  if (kept == 0)
    throw ApiError(400, fmt::format("generation {} has no kept steps", g.id), "generation");
  q.focus = static_cast<int>(optional_int(body, "step", 0, kept - 1, -1));
  q.top = static_cast<int>(optional_int(body, "top", 1, 50, 10));
  return q;
}

namespace {

json candidates(std::span<const float> row, int top, const ServerLimits& limits) {
  json out = json::array();
  const double lse = decode::log_sum_exp(row);
  for (const auto& [id, lp] : decode::top_logprobs(row, top, lse))
    out.push_back({{"id", id},
                   {"token", limits.model->token_text(id)},
                   {"logprob", lp},
                   {"prob", std::exp(lp)}});
  return out;
}

}  // namespace

json run_side_by_side(const SideBySideQuery& q, const ServerLimits& limits, ThreadPool& pool) {
  const KeptGeneration::Snapshot& g = q.generation;
  const model::Model& b = limits.model_b->model();
  const auto V = static_cast<std::size_t>(b.config().vocab_size);
  const std::size_t n = g.rows.size();
  // Step k's logits follow the prompt and the first k recorded tokens: B runs the prompt but
  // its last token without logits, then [last prompt token, tokens 0..n-2] with all of them.
  std::vector<std::int32_t> path(g.prompt.end() - 1, g.prompt.end());
  path.insert(path.end(), g.tokens.begin(), g.tokens.begin() + static_cast<long>(n - 1));
  engine::Session session(b, pool);
  if (g.prompt.size() > 1)
    session.feed(std::span<const std::int32_t>(g.prompt).first(g.prompt.size() - 1));
  json steps = json::array(), focus = nullptr;
  double kl_sum = 0;
  std::size_t same = 0;
  constexpr std::size_t kChunk = 32;
  for (std::size_t start = 0; start < n; start += kChunk) {
    const std::size_t count = std::min(kChunk, n - start);
    const std::span<const float> rows =
        session.feed(std::span<const std::int32_t>(path).subspan(start, count), true);
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t k = start + j;
      const std::span<const float> ra(*g.rows[k]), rb = rows.subspan(j * V, V);
      const inspect::PositionComparison c = inspect::compare_position(ra, rb);
      const std::int32_t token = g.tokens[k];
      const double lse_b = decode::log_sum_exp(rb);
      const float vb = rb[static_cast<std::size_t>(token)];
      kl_sum += c.kl;
      same += c.agree;
      steps.push_back({{"step", k},
                       {"token", token},
                       {"kl", c.kl},
                       {"top_a", c.top_a},
                       {"top_b", c.top_b},
                       {"flip", !c.agree},
                       {"prob_b", std::exp(static_cast<double>(vb) - lse_b)},
                       {"rank_b", decode::rank_of(rb, token)}});
      if (static_cast<int>(k) == q.focus)
        focus = {{"step", k},
                 {"a", candidates(ra, q.top, limits)},
                 {"b", candidates(rb, q.top, limits)}};
    }
  }
  return {{"object", "logitscope.side_by_side"},
          {"generation", g.id},
          {"model_a", limits.served_name},
          {"model_b", limits.model_b_name},
          {"steps", std::move(steps)},
          {"kl_mean", kl_sum / static_cast<double>(n)},
          {"same_top1", static_cast<double>(same) / static_cast<double>(n)},
          {"focus", std::move(focus)}};
}

}  // namespace ls::server
