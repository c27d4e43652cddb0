// The logit lens and leave-one-out attribution (see lens.h).
#include "engine/lens.h"

#include <algorithm>

#include "core/error.h"
#include "decode/distribution.h"
#include "engine/session.h"

namespace ls::engine {

std::vector<float> lens_logits(const model::Model& model, ThreadPool& pool,
                               std::span<const std::int32_t> tokens) {
  const model::ModelConfig& c = model.config();
  const auto rows = static_cast<std::size_t>(c.num_hidden_layers + 1);
  const auto H = static_cast<std::size_t>(c.hidden_size);
  const auto V = static_cast<std::size_t>(c.vocab_size);
  if (tokens.empty()) fail("logit lens: the prompt is empty");
  std::vector<float> residuals(rows * H);
  Session session(model, pool, EngineOptions{}.max_chunk_tokens);
  session.feed(tokens, /*all_positions=*/false, residuals);
  std::vector<float> logits(rows * V);
  model.lens_logits(residuals, rows, logits, pool);
  return logits;
}

namespace {

double logprob_at(std::span<const float> logits, std::int32_t id) {
  return static_cast<double>(logits[static_cast<std::size_t>(id)]) - decode::log_sum_exp(logits);
}

}  // namespace

Attribution attribute(Engine& engine, const AttributionRequest& q) {
  const std::size_t n = q.prompt.size();
  const std::int32_t V = engine.vocab_size();
  if (n == 0) fail("attribution: the prompt is empty");
  if (!q.replacement && n < 2)
    fail("attribution: removing the only token of a 1-token prompt leaves nothing to run");
  if (n > q.max_prompt)
    fail(
        "attribution: the prompt has {} tokens, more than the limit of {} (each token is one "
        "more run over the rest of the prompt)",
        n, q.max_prompt);
  if (q.target < 0 || q.target >= V)
    fail("attribution: target token id {} is outside the vocabulary [0, {})", q.target, V);
  if (q.replacement && (*q.replacement < 0 || *q.replacement >= V))
    fail("attribution: replacement token id {} is outside the vocabulary [0, {})", *q.replacement,
         V);
  const std::size_t group = std::max<std::size_t>(1, q.group);

  Attribution out;
  out.base_logprob = logprob_at(engine.feed(0, q.prompt), q.target);
  out.logprobs.resize(n);
  // Variant i keeps the prompt's first i tokens in the forked KV cache and runs only what
  // follows: the edit (replacement or nothing) and the rest of the prompt. Removing the last
  // token leaves nothing after the edit, so that variant re-runs the token before it.
  std::vector<std::vector<std::int32_t>> suffix(group);
  for (std::size_t first = 0; first < n; first += group) {
    const std::size_t count = std::min(group, n - first);
    std::vector<decode::Feed> feeds;
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t i = first + j;
      std::size_t keep = i;
      std::vector<std::int32_t>& s = suffix[j];
      s.clear();
      if (q.replacement) s.push_back(*q.replacement);
      s.insert(s.end(), q.prompt.begin() + static_cast<std::ptrdiff_t>(i) + 1, q.prompt.end());
      if (s.empty()) s.push_back(q.prompt[--keep]);  // i = n - 1 >= 1: re-run token n - 2
      const int seq = static_cast<int>(j) + 1;
      engine.fork(0, seq);
      engine.truncate(seq, static_cast<std::int64_t>(keep));
      feeds.push_back({seq, s, false});
    }
    const auto logits = engine.step(feeds);
    for (std::size_t j = 0; j < count; ++j)
      out.logprobs[first + j] = logprob_at(logits[j], q.target);
  }
  for (std::size_t j = 0; j <= group; ++j) engine.release(static_cast<int>(j));
  return out;
}

nlohmann::ordered_json attribution_json(const Attribution& a, const AttributionRequest& q,
                                        const std::function<std::string(std::int32_t)>& text) {
  using J = nlohmann::ordered_json;
  J j;
  j["target"] = {{"id", q.target}, {"token", text(q.target)}};
  j["base_logprob"] = a.base_logprob;
  j["mode"] = q.replacement ? "replace" : "remove";
  j["replacement"] =
      q.replacement ? J{{"id", *q.replacement}, {"token", text(*q.replacement)}} : J(nullptr);
  j["attributions"] = J::array();
  for (std::size_t i = 0; i < a.logprobs.size(); ++i)
    j["attributions"].push_back({{"position", i},
                                 {"id", q.prompt[i]},
                                 {"token", text(q.prompt[i])},
                                 {"logprob", a.logprobs[i]},
                                 {"delta", a.base_logprob - a.logprobs[i]}});
  return j;
}

}  // namespace ls::engine
