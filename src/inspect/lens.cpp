// The logit lens through the chain (see lens.h). Each layer's row goes through a fresh copy of
// the same Sampler state (accept = false: nothing is remembered between layers), with the same
// draw, so "layer l would choose X" means exactly what the real step would do with that row.
#include "inspect/lens.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "decode/distribution.h"
#include "decode/order.h"
#include "decode/sampler.h"

namespace ls::inspect {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The best id other than `chosen`: by processed score, then (among equal or removed ones) by
// raw logit, then the lower id.
std::optional<std::int32_t> runner_up_of(std::span<const float> processed,
                                         std::span<const float> raw, std::int32_t chosen) {
  std::optional<std::int32_t> best;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const auto id = static_cast<std::int32_t>(i);
    if (id == chosen) continue;
    if (!best) {
      best = id;
      continue;
    }
    const auto b = static_cast<std::size_t>(*best);
    if (processed[i] > processed[b] || (processed[i] == processed[b] && raw[i] > raw[b])) best = id;
  }
  return best;
}

}  // namespace

LensReport lens_report(const LensRequest& q) {
  const auto V = static_cast<std::size_t>(q.vocab);
  if (q.vocab <= 0 || q.rows.empty() || q.rows.size() % V != 0)
    fail("logit lens: {} logits are not whole rows of the vocabulary ({})", q.rows.size(), V);
  const auto check_id = [&](std::int32_t id, const char* what) {
    if (id < 0 || id >= q.vocab)
      fail("logit lens: {} token id {} is outside the vocabulary [0, {})", what, id, q.vocab);
  };
  for (std::int32_t id : q.track) check_id(id, "tracked");
  if (q.token) check_id(*q.token, "followed");
  const decode::DecodeMode mode = decode::decode_mode(*q.config);
  if (decode::is_beam(mode))
    fail("logit lens: beam search ranks whole sequences, not one step; use num_beams 1");
  decode::Rng rng(q.config->seed.value_or(0));
  LensReport out;
  if (mode == decode::DecodeMode::sample) out.draw = q.draw ? *q.draw : rng.uniform();
  if (out.draw && !(*out.draw >= 0.0 && *out.draw < 1.0))
    fail("logit lens: the draw must be in [0, 1), got {}", *out.draw);

  const std::size_t n_rows = q.rows.size() / V;
  const decode::TokenHistory history{q.history, q.prompt_length.value_or(q.history.size())};
  decode::require_mirostat_first_step(*q.config, history, "logit lens");
  std::vector<std::int32_t> choices(n_rows);
  std::vector<std::vector<float>> processed(n_rows);
  for (std::size_t l = 0; l < n_rows; ++l) {
    // A fresh sampler per layer: stateful stages (the grammar, penalties) see the same history.
    decode::Sampler sampler(*q.config, mode, q.vocab, q.config->seed.value_or(0));
    decode::ChoiceOptions how;
    how.draw = out.draw;
    how.accept = false;
    how.logprobs = {};  // none: no raw log-sum-exp
    choices[l] = sampler.choose(q.rows.subspan(l * V, V), history, how).token;
    const auto fin = sampler.final_scores();
    processed[l].assign(fin.begin(), fin.end());
    if (l + 1 == n_rows) out.chain = sampler.chain().describe();
  }
  const std::size_t last = n_rows - 1;
  const std::span<const float> last_raw = q.rows.subspan(last * V, V);
  out.chosen = q.token.value_or(choices[last]);
  out.runner_up = runner_up_of(processed[last], last_raw, out.chosen);

  std::vector<std::int32_t> ids{out.chosen};
  if (out.runner_up) ids.push_back(*out.runner_up);
  for (std::int32_t id : q.track)
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);

  for (std::size_t l = 0; l < n_rows; ++l) {
    const std::span<const float> raw = q.rows.subspan(l * V, V);
    LensLayer layer;
    layer.layer = static_cast<int>(l);
    const double lse = decode::log_sum_exp(raw);
    for (const auto& [id, lp] : decode::top_logprobs(raw, q.top, lse))
      layer.top.push_back({id, lp});
    layer.entropy = decode::entropy(raw);
    layer.ids = ids;
    for (std::int32_t id : ids) {
      layer.ranks.push_back(decode::rank_of(raw, id));
      layer.logprobs.push_back(static_cast<double>(raw[static_cast<std::size_t>(id)]) - lse);
    }
    layer.sampler_choice = choices[l];
    const std::span<const float> fin = processed[l];
    const float v = fin[static_cast<std::size_t>(out.chosen)];
    layer.chosen_prob =
        v > kNegInf ? std::exp(static_cast<double>(v) - decode::log_sum_exp(fin)) : 0.0;
    out.layers.push_back(std::move(layer));

    if (choices[l] == out.chosen && !out.first_chosen_layer)
      out.first_chosen_layer = static_cast<int>(l);
    if (out.runner_up &&
        raw[static_cast<std::size_t>(*out.runner_up)] > raw[static_cast<std::size_t>(out.chosen)])
      out.runner_up_lost_at = static_cast<int>(l);
  }
  for (std::size_t l = n_rows; l-- > 0 && choices[l] == out.chosen;)
    out.settled_layer = static_cast<int>(l);
  return out;
}

nlohmann::ordered_json lens_json(const LensReport& r, const TokenTextFn& token_text,
                                 std::span<const int> layers) {
  using J = nlohmann::ordered_json;
  const auto token = [&](std::int32_t id) { return J{{"id", id}, {"token", token_text(id)}}; };
  const auto maybe = [](const std::optional<int>& v) { return v ? J(*v) : J(nullptr); };
  J j;
  j["chain"] = r.chain;
  j["draw"] = r.draw ? J(*r.draw) : J(nullptr);
  j["chosen"] = token(r.chosen);
  j["runner_up"] = r.runner_up ? token(*r.runner_up) : J(nullptr);
  j["first_chosen_layer"] = maybe(r.first_chosen_layer);
  j["settled_layer"] = maybe(r.settled_layer);
  j["runner_up_lost_at"] = maybe(r.runner_up_lost_at);
  j["layers"] = J::array();
  for (const LensLayer& l : r.layers) {
    if (!layers.empty() && std::find(layers.begin(), layers.end(), l.layer) == layers.end())
      continue;
    J top = J::array();
    for (const LensCandidate& c : l.top)
      top.push_back({{"id", c.id}, {"token", token_text(c.id)}, {"logprob", c.logprob}});
    J rank = J::object(), logprob = J::object();
    for (std::size_t i = 0; i < l.ids.size(); ++i) {
      rank[std::to_string(l.ids[i])] = l.ranks[i];
      logprob[std::to_string(l.ids[i])] = l.logprobs[i];
    }
    j["layers"].push_back({{"layer", l.layer},
                           {"top", std::move(top)},
                           {"entropy", l.entropy},
                           {"rank_of", std::move(rank)},
                           {"logprob_of", std::move(logprob)},
                           {"sampler_choice", token(l.sampler_choice)},
                           {"chosen_prob", l.chosen_prob}});
  }
  return j;
}

}  // namespace ls::inspect
