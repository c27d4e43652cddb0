// Kept generations as JSON and replay for the logit microscope (see microscope.h).
#include "server/microscope.h"

#include <fmt/format.h>

#include "decode/trace_json.h"
#include "inspect/boundaries.h"
#include "inspect/replay.h"

namespace ls::server {

using nlohmann::json;

json info_json(const ServerLimits& limits) {
  bool has_template = true;
  try {
    limits.model->chat_template();
  } catch (const std::exception&) {
    has_template = false;
  }
  return {{"model", limits.served_name},
          {"vocab_size", limits.model->model().config().vocab_size},
          {"max_model_len", limits.ctx},
          {"has_chat_template", has_template},
          {"order_presets", {"hf", "vllm", "llama_cpp"}},
          {"settings", decode::settings_json(limits.defaults)},
          {"model_b", limits.model_b ? json(limits.model_b_name) : json(nullptr)},
          {"experts_per_token", limits.model->model().config().moe.experts_per_token}};
}

json generation_json(const KeptGeneration::Snapshot& g, std::int32_t vocab) {
  json draws = json::array();
  for (const auto& d : g.draws) draws.push_back(d ? json(*d) : json(nullptr));
  return {{"id", g.id},
          {"prompt_token_ids", g.prompt},
          {"tokens", g.tokens},
          {"draws", draws},
          {"kept_steps", g.rows.size()},
          {"finished", g.finished},
          {"vocab_size", vocab},
          {"header", g.header}};
}

namespace {

std::int64_t int_field(const json& body, const char* name, std::int64_t lo, std::int64_t hi,
                       std::int64_t fallback) {
  if (!body.contains(name)) return fallback;
  const json& v = body[name];
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
    throw ApiError(400, fmt::format("'{}' must be an integer in [{}, {}]", name, lo, hi), name);
  return v.get<std::int64_t>();
}

}  // namespace

json replay_json(const KeptGeneration::Snapshot& g, const json& body, const ServerLimits& limits) {
  const std::int64_t kept = static_cast<std::int64_t>(g.rows.size());
  if (kept == 0)
    throw ApiError(400, fmt::format("generation {} has no kept steps to replay", g.id),
                   "generation");
  const int top_n = static_cast<int>(int_field(body, "top_n", 1, 50, 10));
  const int focus = static_cast<int>(int_field(body, "step", 0, kept - 1, -1));
  decode::GenerationConfig config = g.config;
  if (body.contains("settings")) apply_replay_settings(body["settings"], config, limits);

  inspect::Recording r;
  r.path = g.id;
  r.header = g.header;
  r.prompt = g.prompt;
  for (std::int64_t k = 0; k < kept; ++k)
    r.steps.push_back({static_cast<int>(k), g.tokens[static_cast<std::size_t>(k)],
                       g.draws[static_cast<std::size_t>(k)]});
  decode::StepTrace trace;
  const auto vocab = limits.model->model().config().vocab_size;
  const std::vector<inspect::ReplayStep> steps =
      inspect::replay(r, [&](std::size_t k) { return std::span<const float>(*g.rows[k]); }, vocab,
                      config, top_n, {focus, &trace, top_n});

  // "boundaries": true (every kept step, at most 256) or a list of steps: each one's decision
  // boundaries under these settings with its draw (about 0.25 s a step at Qwen's vocabulary).
  std::vector<bool> bounded(steps.size(), false);
  if (body.contains("boundaries") && !body["boundaries"].is_null()) {
    const json& v = body["boundaries"];
    if (v.is_boolean()) {
      if (v.get<bool>() && steps.size() > 256)
        throw ApiError(400,
                       fmt::format("'boundaries': true asks for {} steps, more than 256: give a "
                                   "list of steps",
                                   steps.size()),
                       "boundaries");
      bounded.assign(steps.size(), v.get<bool>());
    } else if (v.is_array() && v.size() <= 256) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < 0 ||
            v[i].get<std::int64_t>() >= kept)
          throw ApiError(
              400, fmt::format("'boundaries[{}]' must be a kept step in [0, {}]", i, kept - 1),
              fmt::format("boundaries[{}]", i));
        bounded[static_cast<std::size_t>(v[i].get<std::int64_t>())] = true;
      }
    } else {
      throw ApiError(400, "'boundaries' must be true, false or a list of at most 256 steps",
                     "boundaries");
    }
  }
  std::vector<std::int32_t> history = g.prompt;
  json out = {{"generation", g.id}, {"steps", json::array()}, {"changed", json::array()}};
  for (const auto& s : steps) {
    out["steps"].push_back({{"step", s.step},
                            {"recorded", s.recorded},
                            {"chosen", s.chosen},
                            {"changed", s.changed},
                            {"pool", s.pool},
                            {"entropy", s.entropy},
                            {"recorded_prob", s.recorded_prob},
                            {"chosen_prob", s.chosen_prob},
                            {"draw", s.draw ? json(*s.draw) : json(nullptr)}});
    const auto k = static_cast<std::size_t>(s.step);
    if (bounded[k])
      out["steps"].back()["boundaries"] = inspect::boundaries_json(
          inspect::step_boundaries(*g.rows[k], history, g.prompt.size(), config, s.draw, s.chosen));
    history.push_back(g.tokens[k]);
    if (s.changed) out["changed"].push_back(s.step);
  }
  out["chain"] = steps.empty() ? "" : steps.front().chain;
  out["focus"] = focus < 0 ? json(nullptr) : decode::step_json(trace, [&](std::int32_t id) {
    return limits.model->token_bytes(id);
  });
  return out;
}

const WebAsset* find_web_asset(std::string_view path) {
  if (path == "/") path = "/index.html";
  for (const WebAsset& a : web_assets())
    if (a.path == path) return &a;
  return nullptr;
}

}  // namespace ls::server
